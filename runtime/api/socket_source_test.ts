import assert from "node:assert/strict";
import "../cluster/default_executor.ts"; // registers the executor, as mod.ts does
import { LineSplitter, SOCKET_SOURCE_QUEUE_LINES, SocketTextSource } from "./socket_source.ts";
import { StreamExecutionEnvironment } from "./environment.ts";
import type { SinkFunction } from "./sink.ts";

const encoder = new TextEncoder();

/** A sink gathering what it gets (local mode: same realm). */
function gather(out: string[]): SinkFunction<string> {
  return { kind: "simple", invoke: (line) => void out.push(line) };
}

/**
 * A TCP server on 127.0.0.1 (a free port) that serves each accepted
 * connection with the next of `sessions`, then closes it.
 */
function serve(sessions: ((conn: Deno.Conn) => Promise<void>)[]): {
  port: number;
  done: Promise<void>;
  close(): void;
} {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const done = (async () => {
    for (const session of sessions) {
      const conn = await listener.accept();
      try {
        await session(conn);
      } finally {
        conn.close();
      }
    }
  })();
  return {
    port: (listener.addr as Deno.NetAddr).port,
    done,
    close: () => listener.close(),
  };
}

async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  let written = 0;
  while (written < bytes.length) written += await conn.write(bytes.subarray(written));
}

/** A port nothing listens on: one the OS just handed out and took back. */
function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

Deno.test("LineSplitter cuts lines across chunks, drops CR before LF and keeps the tail for the end", () => {
  const s = new LineSplitter("\n");
  assert.deepEqual(s.push("al"), []);
  assert.deepEqual(s.push("pha\r"), []);
  assert.deepEqual(s.push("\nbeta\n\ngam"), ["alpha", "beta", ""]);
  assert.deepEqual(s.push("ma\r\n"), ["gamma"]);
  assert.equal(s.end(), undefined);
  s.push("tail\r");
  assert.equal(s.end(), "tail");
  assert.equal(s.end(), undefined);
});

Deno.test("LineSplitter takes a multi-character delimiter split between chunks, and keeps CR with another delimiter", () => {
  const s = new LineSplitter("||");
  assert.deepEqual(s.push("a|"), []);
  assert.deepEqual(s.push("|b\r||c"), ["a", "b\r"]);
  assert.equal(s.end(), "c");
  assert.throws(
    () => new LineSplitter(""),
    /'delimiter' must be a non-empty string: current value is ""/,
  );
});

Deno.test("SocketTextSource refuses a bad host, port, option or a parallelism above 1", () => {
  assert.throws(() => new SocketTextSource("", 1), /'host' must be a non-empty string/);
  assert.throws(
    () => new SocketTextSource("localhost", 70000),
    /'port' must be an integer in 1..65535: current value is 70000/,
  );
  assert.throws(
    () => new SocketTextSource("localhost", 7777, { maxRetry: -2 }),
    /'maxRetry' must be an integer >= 0, or -1 for forever: current value is -2/,
  );
  assert.throws(
    () => new SocketTextSource("localhost", 7777, { retryDelayMs: 1.5 }),
    /'retryDelayMs' must be an integer >= 0: current value is 1.5/,
  );
  const source = new SocketTextSource("localhost", 7777);
  assert.equal(source.boundedness, "continuous-unbounded");
  assert.equal(
    new SocketTextSource("localhost", 7777, { maxRetry: -1 }).boundedness,
    "continuous-unbounded",
  );
  assert.deepEqual(source.enumerateSplits({ parallelism: 1 }), [
    { splitId: "socket-localhost:7777", linesEmitted: 0 },
  ]);
  assert.throws(
    () => source.enumerateSplits({ parallelism: 2 }),
    /socketTextStream\(localhost:7777\) is a non-parallel source: its parallelism must be 1: current value is 2/,
  );
});

Deno.test("socketTextStream reads CRLF and LF lines cut anywhere, multi-byte characters included, and ends when the peer closes", async () => {
  const text =
    "sensor_1,1547718199,35.8\r\nsensor_6,1547718201,15.4\nzürich,°C ✓\r\nlast without newline";
  const bytes = encoder.encode(text);
  const server = serve([async (conn) => {
    // One byte at a time for the first 40 bytes (cutting the CRLF and the
    // multi-byte characters), then the rest in two pieces.
    for (let i = 0; i < 40; i++) await writeAll(conn, bytes.subarray(i, i + 1));
    const middle = 40 + Math.floor((bytes.length - 40) / 2);
    await writeAll(conn, bytes.subarray(40, middle));
    await writeAll(conn, bytes.subarray(middle));
  }]);
  try {
    const out: string[] = [];
    const env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.socketTextStream("127.0.0.1", server.port).sinkTo(gather(out));
    await env.execute("socket lines");
    assert.deepEqual(out, [
      "sensor_1,1547718199,35.8",
      "sensor_6,1547718201,15.4",
      "zürich,°C ✓",
      "last without newline",
    ]);
    await server.done;
  } finally {
    server.close();
  }
});

Deno.test("socketTextStream reconnects after the peer closes while maxRetry allows, then ends", async () => {
  const server = serve([
    (conn) => writeAll(conn, encoder.encode("one\ntwo\n")),
    (conn) => writeAll(conn, encoder.encode("three\n")),
  ]);
  try {
    const out: string[] = [];
    const env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.socketTextStream("127.0.0.1", server.port, { maxRetry: 1, retryDelayMs: 5 })
      .sinkTo(gather(out));
    await env.execute("socket reconnect");
    assert.deepEqual(out, ["one", "two", "three"]);
    await server.done;
  } finally {
    server.close();
  }
});

Deno.test("socketTextStream with a custom delimiter passes lines through the job in order", async () => {
  const lines = Array.from({ length: SOCKET_SOURCE_QUEUE_LINES * 3 }, (_, i) => `r${i}`);
  const server = serve([(conn) => writeAll(conn, encoder.encode(lines.join(";") + ";"))]);
  try {
    const out: string[] = [];
    const env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.socketTextStream("127.0.0.1", server.port, { delimiter: ";" })
      .map((line) => line.toUpperCase())
      .sinkTo(gather(out));
    await env.execute("socket delimiter");
    assert.equal(out.length, lines.length);
    assert.deepEqual(out, lines.map((l) => l.toUpperCase()));
    await server.done;
  } finally {
    server.close();
  }
});

Deno.test("socketTextStream fails naming host:port when it cannot connect and its retries are used up", async () => {
  const port = freePort();
  const env = StreamExecutionEnvironment.getExecutionEnvironment();
  env.socketTextStream("127.0.0.1", port, { maxRetry: 2, retryDelayMs: 1 })
    .sinkTo(gather([]));
  await assert.rejects(
    () => env.execute("socket refused"),
    (error: unknown) =>
      error instanceof Error &&
      error.message.includes(`cannot connect to 127.0.0.1:${port}, with 2 of maxRetry 2`),
  );
});
