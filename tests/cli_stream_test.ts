/**
 * `weir stream` against the shared NATS server (`WEIR_TEST_NATS_URL`):
 * add / ls / info / publish / read / rm round trip, a 10 000-line load read
 * back through the reader and through a `JetStreamSource` job (JSON lines
 * and MessagePack), bad input with its error and exit code, and the `weir
 * read` alias. Every stream has a random name and is deleted at the end.
 *
 * @module
 */

import assert from "node:assert/strict";
import { unpack } from "npm:msgpackr@2.1.4";
import { StreamExecutionEnvironment, WatermarkStrategy } from "../mod.ts";
import { CollectingSink } from "../testing.ts";
import { JetStreamSource, readCommitted } from "../connectors/jetstream/mod.ts";
import { connectNats } from "../runtime/actor/nats_connect.ts";
import { jetstreamApi } from "../runtime/actor/nats_deps.ts";
import { UsageError } from "../cli/_args.ts";
import { runStreamCommand, STREAM_HELP } from "../cli/stream.ts";
import {
  configDifferences,
  parseDurationMs,
  parseSize,
  streamConfigFromFlags,
} from "../cli/_stream_config.ts";
import { TEST_NATS_URL } from "./_nats_server.ts";
import { withTempDir } from "./_job_kit.ts";

const CONNECTION = { servers: TEST_NATS_URL, name: "weir-cli-stream-test" };
const NATS = ["--nats", TEST_NATS_URL];
const CLI = new URL("../cli.ts", import.meta.url).pathname;

/** A random stream name that no other test uses. */
function uniqueName(what: string): string {
  return `weir-cli-${what}-${crypto.randomUUID().slice(0, 8)}`;
}

/** What one in-process `weir stream` run wrote. */
interface Run {
  readonly code: number;
  readonly out: string[];
  readonly err: string[];
}

/** Runs `weir stream <args> --nats URL` in this process. */
async function stream(...args: string[]): Promise<Run> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runStreamCommand([...args, ...NATS], {
    out: (line) => out.push(line),
    err: (line) => err.push(line),
  });
  return { code, out, err };
}

/** Runs `deno run -A cli.ts <args>` as a process, as a user would. */
async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", CLI, ...args],
    stdout: "piped",
    stderr: "piped",
    env: { WEIR_NATS_URL: "" },
  }).output();
  const text = new TextDecoder();
  return { code, stdout: text.decode(stdout), stderr: text.decode(stderr) };
}

/** Deletes `names` (those that exist), whatever happened. */
async function cleanUp(...names: string[]): Promise<void> {
  const nc = await connectNats(CONNECTION);
  try {
    const jsm = await jetstreamApi.jetstreamManager(nc);
    for (const name of names) await jsm.streams.delete(name).catch(() => false);
  } finally {
    await nc.close();
  }
}

/** The stream's info, straight from the server. */
async function serverInfo(name: string): Promise<jetstreamApi.StreamInfo> {
  const nc = await connectNats(CONNECTION);
  try {
    return await (await jetstreamApi.jetstreamManager(nc)).streams.info(name);
  } finally {
    await nc.close();
  }
}

Deno.test({
  name: "weir stream add, ls, info, publish, read and rm round-trip a stream",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const name = uniqueName("roundtrip");
    const dir = await Deno.makeTempDir({ prefix: "weir-cli-stream-" });
    try {
      const created = await stream(
        "add",
        name,
        "--subjects",
        `${name}.a, ${name}.b.>`,
        "--storage",
        "memory",
        "--max-age",
        "1h",
        "--max-bytes",
        "10mb",
        "--discard",
        "new",
      );
      assert.deepEqual(created.out, [`created stream ${name} (subjects ${name}.a,${name}.b.>)`]);
      const config = (await serverInfo(name)).config;
      assert.deepEqual(config.subjects, [`${name}.a`, `${name}.b.>`]);
      assert.equal(config.storage, "memory");
      assert.equal(config.max_age, 3_600_000_000_000);
      assert.equal(config.max_bytes, 10 * 1024 * 1024);
      assert.equal(config.discard, "new");
      assert.equal(config.retention, "limits");

      // The same add again is fine; another configuration is refused and changes nothing.
      const again = await stream(
        "add",
        name,
        "--subjects",
        `${name}.a,${name}.b.>`,
        "--storage",
        "memory",
        "--max-age",
        "60m",
        "--max-bytes",
        String(10 * 1024 * 1024),
        "--discard",
        "new",
      );
      assert.equal(again.code, 0);
      assert.match(again.out[0]!, /exists with this configuration \(0 messages\)/);
      await assert.rejects(
        stream("add", name, "--subjects", `${name}.a`, "--retention", "workqueue"),
        (e: Error) =>
          !(e instanceof UsageError) && e.message.includes("another configuration") &&
          e.message.includes("retention: workqueue asked, limits in the stream") &&
          e.message.includes("subjects:"),
      );
      assert.equal((await serverInfo(name)).config.retention, "limits");

      const published = await stream(
        "publish",
        `${name}.a`,
        '{"n":1}',
        "--count",
        "3",
        "--header",
        "X-Test: yes",
      );
      assert.deepEqual(published.out, [
        `published 3 messages to ${name}.a (stream ${name}), last sequence 3`,
      ]);
      const file = `${dir}/payload.txt`;
      await Deno.writeTextFile(file, "plain text, not JSON");
      const fromFile = await stream("publish", `${name}.b.c`, "--file", file);
      assert.match(fromFile.out[0]!, /published 1 message to .*, last sequence 4$/);

      const nc = await connectNats(CONNECTION);
      try {
        const stored = await (await jetstreamApi.jetstreamManager(nc)).streams.getMessage(name, {
          seq: 2,
        });
        assert.equal(stored?.header.get("X-Test"), "yes");
      } finally {
        await nc.close();
      }

      const listed = await stream("ls");
      assert.equal(listed.out[0], "STREAM\tSUBJECTS\tMESSAGES\tBYTES\tFIRST SEQ\tLAST SEQ");
      const row = listed.out.find((l) => l.startsWith(`${name}\t`));
      assert.ok(row, `ls does not list ${name}: ${listed.out.join("\n")}`);
      assert.match(row, new RegExp(`^${name}\\t${name}\\.a,${name}\\.b\\.>\\t4\\t\\d+\\t1\\t4$`));
      const listedJson = JSON.parse((await stream("ls", "--json")).out.join("")) as {
        config: { name: string };
        state: { messages: number };
      }[];
      assert.equal(listedJson.find((i) => i.config.name === name)?.state.messages, 4);

      const info = (await stream("info", name)).out;
      assert.equal(info[0], `stream ${name}`);
      for (
        const expected of [
          /^ {2}subjects: +\S+\.a, \S+\.b\.>$/,
          /^ {2}retention: +limits$/,
          /^ {2}storage: +memory$/,
          /^ {2}max age: +1h$/,
          /^ {2}max bytes: +10 ?MB$/,
          /^ {2}max messages: +unlimited$/,
          /^ {2}messages: +4$/,
          /^ {2}first sequence: +1 \(/,
          /^ {2}last sequence: +4 \(/,
        ]
      ) {
        assert.ok(
          info.some((l) => expected.test(l)),
          `no line ${expected} in:\n${info.join("\n")}`,
        );
      }
      const infoJson = JSON.parse((await stream("info", name, "--json")).out.join(""));
      assert.equal(infoJson.state.last_seq, 4);
      assert.equal(infoJson.config.max_age, 3_600_000_000_000);

      const read = (await stream("read", name)).out.map((l) => JSON.parse(l));
      assert.deepEqual(read, [
        { seq: 1, subject: `${name}.a`, value: { n: 1 } },
        { seq: 2, subject: `${name}.a`, value: { n: 1 } },
        { seq: 3, subject: `${name}.a`, value: { n: 1 } },
        { seq: 4, subject: `${name}.b.c`, value: "plain text, not JSON" },
      ]);
      const fromThree = (await stream("read", name, "--from", "3", "--subject", `${name}.a`)).out;
      assert.deepEqual(fromThree.map((l) => JSON.parse(l).seq), [3]);

      // rm refuses without --force, and deletes nothing.
      await assert.rejects(
        stream("rm", name),
        (e: Error) =>
          e instanceof UsageError && e.message.includes("--force") &&
          e.message.includes("4 messages") && e.message.includes("nothing was deleted"),
      );
      assert.equal((await serverInfo(name)).state.messages, 4);
      const removed = await stream("rm", name, "--force");
      assert.match(
        removed.out[0]!,
        new RegExp(`^deleted stream ${name} \\(subjects .*, 4 messages`),
      );
      await assert.rejects(
        stream("info", name),
        (e: Error) =>
          !(e instanceof UsageError) && e.message.startsWith(`stream ${name} not found`),
      );
    } finally {
      await cleanUp(name);
      await Deno.remove(dir, { recursive: true });
    }
  },
});

/** The records of the 10 000-line file: varied JSON values, a few non-ASCII. */
function records(): unknown[] {
  const out: unknown[] = [];
  for (let i = 0; i < 10_000; i++) {
    out.push(
      i % 1000 === 999
        ? [i, "ünïcödé ✓", null, true]
        : { id: i, key: `k${i % 7}`, amount: i * 1.25, note: i % 3 === 0 ? 'a "quoted" note' : "" },
    );
  }
  return out;
}

/** Reads a whole stream with the reader (read-uncommitted, bounded). */
async function readAll(name: string, subject: string): Promise<Uint8Array[]> {
  const out: Uint8Array[] = [];
  for await (
    const r of readCommitted({
      connection: CONNECTION,
      stream: name,
      filterSubject: subject,
      isolation: "read_uncommitted",
      bounded: true,
    })
  ) out.push(r.data.slice());
  return out;
}

/** Reads a whole subject with a bounded `JetStreamSource` job (local mode). */
async function runSourceJob<T>(
  name: string,
  subject: string,
  deserializer?: (data: Uint8Array) => T,
): Promise<T[]> {
  return await withTempDir(async (dir) => {
    const env = StreamExecutionEnvironment.getExecutionEnvironment()
      .enableCheckpointing(1000, { directory: dir })
      .setParallelism(1);
    const sink = new CollectingSink<T>();
    env.fromSource(
      new JetStreamSource<T>({
        connection: CONNECTION,
        stream: name,
        filterSubject: subject,
        bounded: true,
        ...(deserializer === undefined ? {} : { deserializer }),
      }),
      WatermarkStrategy.noWatermarks(),
      "loaded",
    ).uid("loaded")
      .sinkTo(sink).uid("collected");
    await env.execute(`cli stream load ${subject}`);
    return sink.committed();
  });
}

Deno.test({
  name:
    "weir stream load publishes 10 000 JSON lines that the reader and JetStreamSource read back as the same records",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const name = uniqueName("load");
    const expected = records();
    await withTempDir(async (dir) => {
      try {
        const file = `${dir}/records.jsonl`;
        const lines = expected.map((r) => JSON.stringify(r));
        lines.splice(5000, 0, "   "); // a blank line: skipped, and reported
        await Deno.writeTextFile(file, lines.join("\r\n") + "\n");
        assert.equal((await stream("add", name, "--subjects", `${name}.>`)).code, 0);

        const loaded = await stream("load", file, "--subject", `${name}.json`);
        assert.deepEqual(loaded.out, [
          `loaded 10000 messages (jsonl) from ${file} to ${name}.json (stream ${name}), last sequence 10000`,
        ]);
        assert.deepEqual(loaded.err, [`weir stream load: skipped 1 blank lines of ${file}`]);
        const packed = await stream(
          "load",
          file,
          "--subject",
          `${name}.msgpack`,
          "--format",
          "msgpack",
        );
        assert.match(packed.out[0]!, /^loaded 10000 messages \(msgpack\) .* last sequence 20000$/);

        // The reader: jsonl payloads are the lines as written, msgpack ones the same values.
        const text = new TextDecoder();
        const jsonPayloads = await readAll(name, `${name}.json`);
        assert.deepEqual(
          jsonPayloads.map((d) => text.decode(d)),
          expected.map((r) => JSON.stringify(r)),
        );
        const packedPayloads = await readAll(name, `${name}.msgpack`);
        assert.deepEqual(packedPayloads.map((d) => unpack(d)), expected);

        // Weir's JetStream source: the default deserializer (JSON of UTF-8) and msgpackr's unpack.
        assert.deepEqual(await runSourceJob(name, `${name}.json`), expected);
        assert.deepEqual(
          await runSourceJob(name, `${name}.msgpack`, (data) => unpack(data) as unknown),
          expected,
        );
      } finally {
        await cleanUp(name);
      }
    });
  },
});

Deno.test({
  name: "weir stream names what is wrong and where, and publishes nothing from a bad file",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async (t) => {
    const name = uniqueName("errors");
    const dir = await Deno.makeTempDir({ prefix: "weir-cli-stream-" });
    try {
      await stream("add", name, "--subjects", `${name}.>`);

      await t.step("a missing file", async () => {
        await assert.rejects(
          stream("load", `${dir}/missing.jsonl`, "--subject", `${name}.x`),
          (e: Error) =>
            !(e instanceof UsageError) &&
            e.message === `Cannot read ${dir}/missing.jsonl: no such file`,
        );
        await assert.rejects(
          stream("publish", `${name}.x`, "--file", `${dir}/missing.bin`),
          /Cannot read --file .*missing\.bin: no such file/,
        );
      });

      await t.step(
        "a line that is not JSON fails naming file and line; nothing is published",
        async () => {
          const file = `${dir}/bad.jsonl`;
          await Deno.writeTextFile(file, '{"a":1}\n{"a":2}\n{"a":3,}\n{"a":4}\n');
          await assert.rejects(
            stream("load", file, "--subject", `${name}.x`),
            (e: Error) =>
              e.message.startsWith(`${file}:3: not a JSON value (`) &&
              e.message.endsWith('"{\\"a\\":3,}"'),
          );
          assert.equal((await serverInfo(name)).state.messages, 0);
        },
      );

      await t.step("a line that is not UTF-8 fails naming file and line", async () => {
        const file = `${dir}/latin1.jsonl`;
        await Deno.writeFile(
          file,
          new Uint8Array([...new TextEncoder().encode('"ok"\n"caf'), 0xe9, 0x22, 0x0a]),
        );
        await assert.rejects(
          stream("load", file, "--subject", `${name}.x`),
          new RegExp(`^Error: ${file.replaceAll(".", "\\.")}:2: the line is not UTF-8 text`),
        );
        assert.equal((await serverInfo(name)).state.messages, 0);
      });

      await t.step("a publish the stream refuses names its line and what was stored", async () => {
        const full = uniqueName("full");
        try {
          const added = await stream(
            "add",
            full,
            "--subjects",
            `${full}.>`,
            "--max-msgs",
            "5",
            "--discard",
            "new",
          );
          assert.equal(added.code, 0);
          const file = `${dir}/ten.jsonl`;
          await Deno.writeTextFile(file, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].join("\n"));
          await assert.rejects(
            stream("load", file, "--subject", `${full}.x`),
            (e: Error) =>
              e.message.startsWith(`Cannot publish line 6 of ${file} to ${full}.x: `) &&
              e.message.endsWith(
                `(5 messages of this command were stored, up to sequence 5 of stream ${full})`,
              ),
          );
          assert.equal((await serverInfo(full)).state.messages, 5);
        } finally {
          await cleanUp(full);
        }
      });

      await t.step("a subject no stream stores, or an unknown stream", async () => {
        const stray = uniqueName("nowhere");
        await assert.rejects(
          stream("publish", `${stray}.x`, "1"),
          (e: Error) =>
            e.message.startsWith(`No stream stores subject ${stray}.x; create one first`),
        );
        for (const sub of ["info", "read"]) {
          await assert.rejects(stream(sub, stray), new RegExp(`stream ${stray} not found`));
        }
        await assert.rejects(
          stream("rm", stray, "--force"),
          new RegExp(`stream ${stray} not found`),
        );
      });

      await t.step("bad usage is a UsageError naming the flag and value", async () => {
        const cases: [string[], RegExp][] = [
          [["add", name], /needs --subjects/],
          [
            ["add", "a.b", "--subjects", "x"],
            /Invalid stream name "a\.b": it must not contain "\."/,
          ],
          [
            ["add", name, "--subjects", "x..y"],
            /--subjects entry 1 \("x\.\.y"\) has an empty token/,
          ],
          [["add", name, "--subjects", "x.>.y"], /has '>' before its last token/],
          [["add", name, "--subjects", "x,x"], /names "x" twice/],
          [["add", name, "--subjects", "x", "--max-age", "10"], /--max-age needs a unit: .*"10"/],
          [
            ["add", name, "--subjects", "x", "--max-age", "5 parsecs"],
            /--max-age must be a duration/,
          ],
          [["add", name, "--subjects", "x", "--max-bytes", "lots"], /--max-bytes must be a size/],
          [
            ["add", name, "--subjects", "x", "--retention", "forever"],
            /--retention must be one of limits, workqueue, interest: current value is "forever"/,
          ],
          [["add", name, "--subjects", "x", "--replicas", "7"], /--replicas must be 1 to 5/],
          [["ls", "--subjects", "x"], /Unknown option '--subjects'/],
          [["info"], /needs a stream NAME/],
          [["publish", `${name}.*`, "1"], /the subject ".*\.\*" has a wildcard/],
          [["publish", `${name}.x`], /needs the payload/],
          [["publish", `${name}.x`, "1", "--header", "nocolon"], /--header must be KEY:VALUE/],
          [["publish", `${name}.x`, "1", "--count", "0"], /--count must be a positive integer/],
          [["load", `${dir}/x.jsonl`], /needs --subject S/],
          [
            ["load", `${dir}/x.jsonl`, "--subject", "s", "--format", "csv"],
            /--format must be one of jsonl, msgpack/,
          ],
          [["compact", name], /unknown stream subcommand "compact"/],
        ];
        for (const [args, message] of cases) {
          await assert.rejects(
            stream(...args),
            (e: Error) => e instanceof UsageError && message.test(e.message),
            `weir stream ${args.join(" ")}`,
          );
        }
        assert.equal((await serverInfo(name)).state.messages, 0);
      });
    } finally {
      await cleanUp(name);
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("stream add's flags become JetStream's fields, and differences are listed by field", () => {
  const config = streamConfigFromFlags("s", { subjects: "s.a,s.b.*" });
  assert.deepEqual(config, {
    name: "s",
    subjects: ["s.a", "s.b.*"],
    retention: "limits",
    storage: "file",
    max_age: 0,
    max_bytes: -1,
    max_msgs: -1,
    num_replicas: 1,
    discard: "old",
  });
  assert.deepEqual(configDifferences(config, { ...config, subjects: ["s.b.*", "s.a"] }), []);
  assert.deepEqual(
    configDifferences(config, { ...config, max_age: 60_000_000_000, storage: "memory" }),
    [
      "storage: file asked, memory in the stream",
      "max_age: unlimited asked, 1m in the stream",
    ],
  );
  assert.equal(parseDurationMs("1.5h", "--max-age"), 5_400_000);
  assert.equal(parseDurationMs("2 days", "--max-age"), 172_800_000);
  assert.equal(parseSize("1gb", "--max-bytes"), 1024 ** 3);
  assert.equal(parseSize("4096", "--max-bytes"), 4096);
});

Deno.test({
  name: "weir stream exits with 1 for a failure and 2 for bad usage, and weir read stays an alias",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const name = uniqueName("exit");
    try {
      const help = await cli("stream", "load", "--help");
      assert.equal(help.code, 0);
      assert.equal(help.stdout.trim(), STREAM_HELP);
      for (const flag of ["--max-age", "--json-lines", "--format jsonl", "--force", "--follow"]) {
        assert.ok(help.stdout.includes(flag), `weir stream --help does not mention ${flag}`);
      }

      const missing = await cli("stream", "info", name, ...NATS);
      assert.equal(missing.code, 1);
      assert.ok(
        missing.stderr.includes(
          `error: stream ${name} not found ('weir stream ls' lists the streams)\n`,
        ),
        missing.stderr,
      );

      const usage = await cli("stream", "add", name, "--max-age", "3", ...NATS);
      assert.equal(usage.code, 2);
      assert.match(usage.stderr, /^error: stream add .* needs --subjects/);
      assert.match(usage.stderr, /see: weir stream --help/);

      assert.equal((await cli("stream", "add", name, "--subjects", `${name}.>`, ...NATS)).code, 0);
      const published = await cli("stream", "publish", `${name}.x`, '{"hello":"world"}', ...NATS);
      assert.equal(published.code, 0, published.stderr);
      const viaStream = await cli("stream", "read", name, ...NATS);
      const viaRead = await cli("read", "--stream", name, ...NATS);
      assert.equal(viaStream.code, 0, viaStream.stderr);
      assert.equal(viaRead.code, 0, viaRead.stderr);
      assert.equal(viaStream.stdout, `{"seq":1,"subject":"${name}.x","value":{"hello":"world"}}\n`);
      assert.equal(viaRead.stdout, viaStream.stdout);

      const refused = await cli("stream", "rm", name, ...NATS);
      assert.equal(refused.code, 2);
      assert.match(refused.stderr, /run it again with --force/);
      assert.equal((await cli("stream", "rm", name, "--force", ...NATS)).code, 0);
    } finally {
      await cleanUp(name);
    }
  },
});
