/**
 * Region failover with the database and file sinks, in local mode: a job of
 * three independent forward pipelines (parallelism 3, chaining off: source
 * -> map -> sink, three pipelined regions). The map of subtask 0 fails once
 * on attempt 0, and (with `twice`) the map of subtask 1 fails once on the
 * attempt its region runs then, so each region's sink restores while the
 * others' sinks keep running and keep preparing and committing. The
 * committed output must be the failure-free run's: every record of every
 * split once, in order per split, and no prepared transaction left.
 *
 * Sinks: the MariaDB XA sink (its zombie fence must not fence the running
 * writers of the other regions), the file sink, the transactional
 * JetStream sink (on the shared NATS server; no transaction may be left
 * open) and the write-ahead-log sink into PostgreSQL (the shared server;
 * its committer table makes a replayed batch a no-op).
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  RestartStrategies,
  type RuntimeContext,
  type SinkV2,
  StreamExecutionEnvironment,
  WatermarkStrategy,
} from "../mod.ts";
import { TestSource } from "../testing.ts";
import { mariaDbXaSink } from "../connectors/mariadb/mod.ts";
import {
  cleanupPrefix,
  preparedOf,
  rows,
  sql,
  TEST_CONNECTION,
  uniqueName,
} from "../connectors/mariadb/_test_kit.ts";
import { FileSink } from "../connectors/file/file_sink.ts";
import { csvEncoder } from "../connectors/file/row_encoders.ts";
import { DefaultRollingPolicy } from "../connectors/file/rolling_policy.ts";
import { parseCsv } from "../connectors/file/csv.ts";
import { JetStreamSink, readCommitted } from "../connectors/jetstream/mod.ts";
import { connectNats } from "../runtime/actor/nats_connect.ts";
import { jetstreamApi, kvApi } from "../runtime/actor/nats_deps.ts";
import { withTempDir } from "./_job_kit.ts";
import { TEST_NATS_URL } from "./_nats_server.ts";
import { PostgresWalTarget, WriteAheadSink } from "../connectors/wal/mod.ts";
import postgres from "npm:postgres@3.4.9";

const PARALLELISM = 3;
const RECORDS = 300;
const MARK_EVERY = 30;

/** A record of split `split`, numbered `seq` within it. */
interface Rec {
  readonly split: number;
  readonly seq: number;
}

/** Split `split`: RECORDS records with a checkpoint to wait for every MARK_EVERY. */
function split(split: number) {
  const items = [];
  for (let seq = 0; seq < RECORDS; seq++) {
    if (seq > 0 && seq % MARK_EVERY === 0) items.push(TestSource.awaitCheckpoint());
    items.push({ split, seq });
  }
  return items;
}

/**
 * Fails once at `at` on subtask 0 (attempt 0) and, with `twice`, once at
 * `at + 60` on subtask 1 (any attempt). No #private fields (copied per subtask).
 */
class TwoFailures {
  context: RuntimeContext | undefined;
  constructor(
    private readonly at: number,
    private readonly twice: boolean,
    private readonly fired: Set<string>,
  ) {}
  open(context: RuntimeContext): void {
    this.context = context;
  }
  map(r: Rec): Rec {
    const { subtaskIndex: subtask, attempt } = this.context!;
    if (subtask === 0 && attempt === 0 && r.seq === this.at && !this.fired.has("0")) {
      this.fired.add("0");
      throw new Error(`induced failure of map#0 at ${r.seq}`);
    }
    if (this.twice && subtask === 1 && r.seq === this.at + 60 && !this.fired.has("1")) {
      this.fired.add("1");
      throw new Error(`induced failure of map#1 at ${r.seq}`);
    }
    return r;
  }
}

/** Runs the job into `sink`; returns the restarts and which failures fired. */
async function run(
  sink: SinkV2<Rec, unknown, unknown>,
  options: { dir: string; twice: boolean },
): Promise<{ restarts: number; fired: Set<string> }> {
  const fired = new Set<string>();
  const env = StreamExecutionEnvironment.getExecutionEnvironment()
    .enableCheckpointing(10, { directory: options.dir })
    .setRestartStrategy(RestartStrategies.fixedDelay(6, 0))
    .disableOperatorChaining();
  env.fromSource(
    TestSource.perSubtask<Rec>(
      Array.from({ length: PARALLELISM }, (_, i) => split(i)),
      { batchSize: 4 },
    ),
    WatermarkStrategy.noWatermarks(),
    "records",
  ).uid("records").setParallelism(PARALLELISM)
    .map(new TwoFailures(100, options.twice, fired)).uid("failing").setParallelism(PARALLELISM)
    .sinkTo(sink).uid("out").setParallelism(PARALLELISM);
  const result = await env.execute("region failover sinks");
  return { restarts: result.restarts, fired };
}

/** Asserts `records` hold each split's 0..RECORDS-1 once, in order per split. */
function assertExactlyOnce(records: readonly Rec[], context: string): void {
  for (let s = 0; s < PARALLELISM; s++) {
    const seqs = records.filter((r) => r.split === s).map((r) => r.seq);
    const seen = new Set(seqs);
    const lost = RECORDS - [...seen].filter((n) => n >= 0 && n < RECORDS).length;
    const duplicated = seqs.length - seen.size;
    assert.equal(
      `split ${s}: lost=${lost} duplicated=${duplicated}`,
      `split ${s}: lost=0 duplicated=0`,
      context,
    );
    assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b), `split ${s} in order; ${context}`);
  }
}

for (const twice of [false, true]) {
  const what = twice ? "two regions fail one after the other" : "one region fails";
  Deno.test(`MariaDB XA sink: ${what}; the other regions' writers are not fenced, and every row is committed once`, async () => {
    const table = uniqueName("region_xa");
    const prefix = uniqueName("rg");
    const commitLogTable = uniqueName("region_xa_log");
    await sql(
      `CREATE TABLE \`${table}\` (id INT AUTO_INCREMENT PRIMARY KEY, split INT NOT NULL, ` +
        `seq INT NOT NULL) ENGINE=InnoDB`,
    );
    try {
      await withTempDir(async (dir) => {
        const { restarts, fired } = await run(
          mariaDbXaSink<Rec>({
            connection: TEST_CONNECTION,
            sql: `INSERT INTO \`${table}\` (split, seq) VALUES (?, ?)`,
            parameters: (r) => [r.split, r.seq],
            batchSize: 20,
            xidPrefix: prefix,
            commitLogTable,
          }) as SinkV2<Rec, unknown, unknown>,
          { dir, twice },
        );
        const context = `restarts ${restarts}, fired ${[...fired].join(",")}`;
        assert.equal(fired.size, twice ? 2 : 1, context);
        // One region failover per induced failure: no writer of a running region was fenced.
        assert.equal(restarts, fired.size, context);
        const stored = (await rows(table)).map((r) => ({
          split: Number(r.split),
          seq: Number(r.seq),
        }));
        assertExactlyOnce(stored, context);
        assert.deepEqual(await preparedOf(prefix), [], context);
      });
    } finally {
      await sql(`DROP TABLE IF EXISTS \`${table}\``);
      await cleanupPrefix(prefix, commitLogTable);
    }
  });

  Deno.test(`file sink: ${what}; the finished part files hold every record once`, async () => {
    await withTempDir(async (dir) => {
      const out = `${dir}/out`;
      const { restarts, fired } = await run(
        new FileSink<Rec>({
          path: out,
          encoder: csvEncoder({ header: ["split", "seq"], toFields: (r) => [r.split, r.seq] }),
          rollingPolicy: new DefaultRollingPolicy({ maxPartSizeBytes: 512 }),
        }) as SinkV2<Rec, unknown, unknown>,
        { dir: `${dir}/checkpoints`, twice },
      );
      const context = `restarts ${restarts}, fired ${[...fired].join(",")}`;
      assert.equal(restarts, fired.size, context);
      const files = [];
      for await (const e of Deno.readDir(out)) if (e.isFile) files.push(e.name);
      const parts = files.filter((n) => !n.startsWith("."))
        .map((n) => {
          const m = /-(\d+)-(\d+)\.csv$/.exec(n);
          assert.ok(m, `unexpected file ${n}`);
          return { name: n, subtask: Number(m[1]), counter: Number(m[2]) };
        })
        .sort((a, b) => a.subtask - b.subtask || a.counter - b.counter);
      const records: Rec[] = [];
      for (const p of parts) {
        const [, ...lines] = parseCsv(await Deno.readTextFile(`${out}/${p.name}`));
        for (const [s, q] of lines) records.push({ split: Number(s), seq: Number(q) });
      }
      assertExactlyOnce(records, `${context}; files ${parts.map((p) => p.name).join(" ")}`);
    });
  });

  Deno.test(`JetStream sink: ${what}; read-committed readers see every record once, no transaction is left open`, async () => {
    const connection = { servers: TEST_NATS_URL, name: "weir-test-region" };
    const nc = await connectNats(connection);
    const jsm = await jetstreamApi.jetstreamManager(nc);
    const suffix = crypto.randomUUID().slice(0, 8);
    const output = `weir-test-region-out-${suffix}`;
    const bucket = `weir-test-region-txn-${suffix}`;
    try {
      await jsm.streams.add({ name: output, subjects: [`${output}.>`] });
      const { restarts, fired } = await withTempDir((dir) =>
        run(
          new JetStreamSink<Rec>({
            connection,
            stream: output,
            subject: (r) => `${output}.${r.split}`,
            txnBucket: bucket,
          }) as SinkV2<Rec, unknown, unknown>,
          { dir, twice },
        )
      );
      const context = `restarts ${restarts}, fired ${[...fired].join(",")}`;
      assert.equal(restarts, fired.size, context);
      const records: Rec[] = [];
      for await (
        const r of readCommitted({ connection, stream: output, txnBucket: bucket, bounded: true })
      ) {
        records.push(JSON.parse(new TextDecoder().decode(r.data)) as Rec);
      }
      assertExactlyOnce(records, context);
      const kv = await new kvApi.Kvm(nc).open(bucket);
      const open: string[] = [];
      for await (const key of await kv.keys("txn.>")) {
        if ((await kv.get(key))!.json<{ state: string }>().state === "open") open.push(key);
      }
      assert.deepEqual(open, [], `${context}: open transactions`);
    } finally {
      for (const stream of [output, `KV_${bucket}`]) {
        await jsm.streams.delete(stream).catch(() => {});
      }
      await nc.close();
    }
  });

  Deno.test(`write-ahead-log sink into PostgreSQL: ${what}; every row is written once`, async () => {
    const connection = { host: "127.0.0.1", port: 5432, user: "postgres", database: "postgres" };
    const suffix = crypto.randomUUID().slice(0, 8).replaceAll("-", "");
    const table = `region_wal_${suffix}`;
    const committerTable = `region_wal_committed_${suffix}`;
    const pg = postgres({ ...connection, max: 1, onnotice: () => {} });
    await pg.unsafe(`CREATE TABLE ${table} (split integer NOT NULL, seq integer NOT NULL)`);
    try {
      const { restarts, fired } = await withTempDir((dir) =>
        run(
          new WriteAheadSink<Rec>({
            target: new PostgresWalTarget<Rec>({
              connection,
              table,
              columns: ["split", "seq"],
              toRow: (r) => r,
              committerTable,
            }),
          }) as SinkV2<Rec, unknown, unknown>,
          { dir, twice },
        )
      );
      const context = `restarts ${restarts}, fired ${[...fired].join(",")}`;
      assert.equal(restarts, fired.size, context);
      const stored = await pg.unsafe(`SELECT split, seq FROM ${table} ORDER BY split, seq`);
      assertExactlyOnce(
        stored.map((r) => ({ split: Number(r.split), seq: Number(r.seq) })),
        context,
      );
    } finally {
      await pg.unsafe(`DROP TABLE IF EXISTS ${table}`);
      await pg.unsafe(`DROP TABLE IF EXISTS ${committerTable}`);
      await pg.end({ timeout: 0 });
    }
  });
}
