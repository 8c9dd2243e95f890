import assert from "node:assert/strict";
import type { RuntimeContext } from "./functions.ts";
import type { Sink } from "./sink.ts";
import { PrintSink, type SyncWriter } from "./print_sink.ts";

const noTimestamp = { timestamp: undefined };

/** A writer that accepts at most `maxBytes` per call, recording every call. */
function writer(maxBytes = Infinity): SyncWriter & { calls: Uint8Array[]; text(): string } {
  const calls: Uint8Array[] = [];
  return {
    calls,
    writeSync(bytes: Uint8Array): number {
      const n = Math.min(bytes.length, maxBytes);
      calls.push(bytes.slice(0, n));
      return n;
    },
    text: () => new TextDecoder().decode(new Uint8Array(calls.flatMap((c) => [...c]))),
  };
}

function runtimeContext(subtaskIndex: number, parallelism: number): RuntimeContext {
  return { subtaskIndex, parallelism } as RuntimeContext;
}

/** What the engine does per subtask: a new object, same prototype, own fields copied. */
function copyForSubtask<S extends object>(sink: S): S {
  return Object.assign(Object.create(Object.getPrototypeOf(sink)), sink);
}

Deno.test("PrintSink formats records like Flink's print", () => {
  assert.equal(PrintSink.format("sensor_1 35.8"), "sensor_1 35.8");
  assert.equal(PrintSink.format(["sensor_1", 32.4, 42.4]), "(sensor_1,32.4,42.4)");
  assert.equal(PrintSink.format(["sensor_7", 19.9, 30]), "(sensor_7,19.9,30)");
  assert.equal(PrintSink.format([1, ["a", [true, null]], { x: 1 }]), '(1,(a,(true,null)),{"x":1})');
  assert.equal(PrintSink.format(19.9 - 9.9), "9.999999999999998");
  assert.equal(PrintSink.format(Number.NaN), "NaN");
  assert.equal(PrintSink.format(12n), "12");
  assert.equal(PrintSink.format(undefined), "undefined");
  assert.equal(PrintSink.format({ id: "a", n: 2n }), '{"id":"a","n":"2"}');
  assert.equal(PrintSink.format(new Map([["a", 1]])), '{"a":1}');
  assert.equal(PrintSink.format([]), "()");
  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  assert.equal(PrintSink.format(cyclic), "[object Object]");
});

Deno.test("PrintSink prefixes lines with the subtask only at parallelism above one", () => {
  const out = writer();
  const sink = new PrintSink<string>({ target: out });
  const alone = copyForSubtask(sink);
  alone.open(runtimeContext(0, 1));
  alone.invoke("a", noTimestamp);
  const second = copyForSubtask(sink);
  second.open(runtimeContext(1, 4));
  second.invoke("b", noTimestamp);
  alone.invoke("c", noTimestamp);
  assert.equal(out.text(), "a\n2> b\nc\n");
});

Deno.test("PrintSink puts its prefix before the subtask number", () => {
  const out = writer();
  const sink = new PrintSink<number>({ target: out, prefix: "sums" });
  sink.invoke(1, noTimestamp);
  const third = copyForSubtask(sink);
  third.open(runtimeContext(2, 3));
  third.invoke(2, noTimestamp);
  assert.equal(out.text(), "sums> 1\nsums:3> 2\n");
});

Deno.test("PrintSink uses the given formatter", () => {
  const out = writer();
  const sink = new PrintSink<{ id: string }>({ target: out, formatter: (r) => `id=${r.id}` });
  sink.invoke({ id: "x" }, noTimestamp);
  assert.equal(out.text(), "id=x\n");
});

Deno.test("PrintSink writes each line whole, looping over short writes", () => {
  const out = writer(3);
  const sink = new PrintSink<string>({ target: out });
  sink.invoke("héllo wörld", noTimestamp);
  assert.equal(out.text(), "héllo wörld\n");
  assert.ok(out.calls.length > 1);
  assert.ok(out.calls.every((c) => c.length <= 3));
});

Deno.test("PrintSink fails loudly when its writer makes no progress", () => {
  const sink = new PrintSink<string>({ target: { writeSync: () => 0 } });
  assert.throws(
    () => sink.invoke("x", noTimestamp),
    /could not write to its writer: it wrote 0 bytes/,
  );
  // @ts-expect-error: not a target
  assert.throws(() => new PrintSink({ target: "stdlog" }), TypeError);
});

Deno.test("PrintSink writes to stdout or stderr", async () => {
  const url = new URL("./print_sink.ts", import.meta.url).href;
  const code = `
    import { PrintSink } from ${JSON.stringify(url)};
    const out = new PrintSink();
    const err = new PrintSink({ target: "stderr", prefix: "err" });
    out.invoke(["a", 1], { timestamp: undefined });
    err.invoke("b", { timestamp: undefined });
    out.invoke("c", { timestamp: undefined });
  `;
  const result = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--no-config", code],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  assert.equal(decoder.decode(result.stderr), "err> b\n");
  assert.equal(decoder.decode(result.stdout), "(a,1)\nc\n");
  assert.equal(result.code, 0);
});

Deno.test("PrintSink is a simple sink", () => {
  const sink: Sink<number> = new PrintSink<number>();
  assert.equal(sink.kind, "simple");
});
