import assert from "node:assert/strict";
import "../../../runtime/cluster/default_executor.ts";
import { ManualClock } from "../../../testing.ts";
import { StreamExecutionEnvironment } from "../../../runtime/api/environment.ts";
import type { Sink } from "../../../runtime/api/sink.ts";
import type { SourceReaderContext } from "../../../runtime/api/source.ts";
import { PlanningError } from "../../../runtime/table/changelog_mode.ts";
import type { Row } from "../../../runtime/table/row.ts";
import type { TableConnector } from "../../../runtime/table/table_connectors.ts";
import { StreamTableEnvironment } from "../../../runtime/table/table_environment.ts";
import { RecordingReaderOutput } from "../../testing/reader_output.ts";
import { NexmarkGenerator } from "./generator.ts";
import { NexmarkRowSource, nexmarkTableConnector } from "./table.ts";

const BID_DDL = `CREATE TABLE bid (
  auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR,
  \`dateTime\` TIMESTAMP(3), extra VARCHAR
) WITH ('connector' = 'nexmark', 'nexmark.table' = 'bid', 'events.num' = '500', 'generator.seed' = '5')`;

/** Runs `script` with the nexmark connector and a `collect` sink; returns the collected rows. */
async function collect(script: string, parallelism = 1): Promise<Row[]> {
  const rows: Row[] = [];
  const sink: Sink<Row> = { kind: "simple", invoke: (row) => void rows.push(row) };
  const collecting: TableConnector = {
    identifier: "collect",
    validate() {},
    sink: () => ({ sink, accepts: "updates" }),
  };
  const fresh = () =>
    StreamExecutionEnvironment.getExecutionEnvironment().setParallelism(parallelism);
  const tEnv = StreamTableEnvironment.create(fresh(), {
    connectors: [nexmarkTableConnector, collecting],
  });
  await tEnv.executeScript(script, { newEnvironment: fresh });
  return rows;
}

Deno.test("a nexmark bid table holds exactly the generator's bids, dateTime as TIMESTAMP(3) text", async () => {
  const rows = await collect(`${BID_DDL};
    CREATE TABLE sink_t (auction BIGINT, price BIGINT, \`dateTime\` TIMESTAMP(3), url VARCHAR)
      WITH ('connector' = 'collect');
    INSERT INTO sink_t SELECT auction, price, \`dateTime\`, url FROM bid;`);
  const generator = new NexmarkGenerator({ seed: 5 });
  const expected: unknown[] = [];
  for (let n = 0; n < 500; n++) {
    const e = generator.event(n);
    if (e.type === "bid") {
      expected.push([
        e.bid.auction,
        e.bid.price,
        new Date(e.bid.dateTime).toISOString().slice(0, 23).replace("T", " "),
        e.bid.url,
      ]);
    }
  }
  assert.ok(expected.length > 400);
  assert.deepEqual(rows.map((r) => r.fields), expected);
  assert.ok(rows.every((r) => r.kind === "INSERT"));
});

Deno.test("nexmark person and auction tables at parallelism 2 hold each event of their kind once", async () => {
  const rows = await collect(
    `CREATE TABLE person (id BIGINT, name VARCHAR, \`dateTime\` BIGINT)
       WITH ('connector' = 'nexmark', 'nexmark.table' = 'person', 'events.num' = '1000');
     CREATE TABLE auction (seller BIGINT, id BIGINT, expires TIMESTAMP(3))
       WITH ('connector' = 'nexmark', 'nexmark.table' = 'auction', 'events.num' = '1000');
     CREATE TABLE sink_t (k VARCHAR, a BIGINT, b BIGINT) WITH ('connector' = 'collect');
     INSERT INTO sink_t SELECT 'person', id, \`dateTime\` FROM person;
     INSERT INTO sink_t SELECT 'auction', id, seller FROM auction;`,
    2,
  );
  const generator = new NexmarkGenerator();
  const people: string[] = [];
  const auctions: string[] = [];
  for (let n = 0; n < 1000; n++) {
    const e = generator.event(n);
    if (e.type === "person") {
      people.push(JSON.stringify(["person", e.person.id, e.person.dateTime]));
    }
    if (e.type === "auction") {
      auctions.push(JSON.stringify(["auction", e.auction.id, e.auction.seller]));
    }
  }
  const got = rows.map((r) => JSON.stringify(r.fields));
  assert.deepEqual(got.filter((g) => g.startsWith('["person"')).sort(), people.sort());
  assert.deepEqual(got.filter((g) => g.startsWith('["auction"')).sort(), auctions.sort());
  assert.equal(people.length, 20);
  assert.equal(auctions.length, 60);
});

Deno.test("a nexmark row source restored from its snapshot emits exactly the rest", () => {
  const table = {
    name: "bid",
    columns: [{ name: "price", type: { family: "BIGINT" as const, name: "BIGINT" } }],
    options: {
      connector: "nexmark",
      "nexmark.table": "bid",
      "events.num": "300",
      "scan.batch-size": "7",
    },
    rows: [],
    primaryKey: null,
    watermark: null,
  };
  const clock = new ManualClock();
  const context: SourceReaderContext = {
    subtaskIndex: 0,
    parallelism: 1,
    attempt: 0,
    operatorName: "nexmark",
    currentProcessingTime: () => clock.now(),
    clock,
  };
  const source = new NexmarkRowSource(table);
  const splits = source.enumerateSplits({ parallelism: 1 });
  const whole = new RecordingReaderOutput<Row>();
  const reader = source.createReader(context);
  reader.addSplits(splits);
  while (reader.pollNext(whole) !== "END_OF_INPUT");
  const first = new RecordingReaderOutput<Row>();
  const before = source.createReader(context);
  before.addSplits(splits);
  for (let i = 0; i < 5; i++) before.pollNext(first);
  const state = before.snapshotState(1);
  const after = source.createReader(context);
  after.addSplits(state);
  const rest = new RecordingReaderOutput<Row>();
  while (after.pollNext(rest) !== "END_OF_INPUT");
  assert.ok(first.records.length > 0 && rest.records.length > 0);
  assert.deepEqual([...first.records, ...rest.records], whole.records);
  assert.deepEqual([...first.timestamps, ...rest.timestamps], whole.timestamps);
});

Deno.test("the nexmark connector refuses unknown columns, wrong types, kinds and options by name", () => {
  const table = (columns: [string, string][], options: Record<string, string>) => ({
    name: "t",
    columns: columns.map(([name, family]) => ({
      name,
      type: { family: family as "BIGINT", name: family },
    })),
    options: { connector: "nexmark", ...options },
    rows: [],
    primaryKey: null,
    watermark: null,
  });
  const refused = (t: ReturnType<typeof table>, pattern: RegExp) =>
    assert.throws(
      () => nexmarkTableConnector.validate(t),
      (e: unknown) => e instanceof PlanningError && pattern.test(e.message),
    );
  refused(table([["price", "BIGINT"]], {}), /table t needs option 'nexmark.table'/);
  refused(
    table([["price", "BIGINT"]], { "nexmark.table": "bids" }),
    /'nexmark.table' of table t must be one of 'person', 'auction', 'bid': current value is 'bids'/,
  );
  refused(
    table([["cost", "BIGINT"]], { "nexmark.table": "bid" }),
    /column cost of nexmark table t is not a bid column; bid has auction, bidder, price/,
  );
  refused(
    table([["url", "BIGINT"]], { "nexmark.table": "bid" }),
    /column url of nexmark table t must be STRING, not BIGINT/,
  );
  refused(
    table([["price", "BIGINT"]], { "nexmark.table": "bid", "events.num": "-1" }),
    /'events.num' of table t must be an integer from 0/,
  );
  refused(
    table([["price", "BIGINT"]], { "nexmark.table": "bid", "events.number": "1" }),
    /Unsupported option 'events.number' for connector 'nexmark'/,
  );
  refused(
    table([["price", "BIGINT"]], { "nexmark.table": "bid", "first-event.rate": "0" }),
    /'first-event.rate' of table t must be > 0/,
  );
  refused(
    table([["price", "BIGINT"]], { "nexmark.table": "bid", "generator.base-time": "yesterday" }),
    /'generator.base-time' of table t must be epoch ms or a UTC timestamp/,
  );
  nexmarkTableConnector.validate(
    table([["price", "BIGINT"], ["dateTime", "TIMESTAMP"]], {
      "nexmark.table": "bid",
      "generator.base-time": "2020-01-01 00:00:00",
      "first-event.rate": "1000",
    }),
  );
});
