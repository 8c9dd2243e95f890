/**
 * End-to-end tests of the rolling aggregations on a `KeyedStream`:
 * `aggregate`, `min`, `max`, `minBy` and `maxBy`, run as jobs (a
 * `TestSource` into a keyed operator at parallelism 2 into a
 * `CollectingSink`), with Flink's semantics, across a failure, and with bad
 * input.
 *
 * All readings sit in one source split, so each key's records reach its
 * keyed subtask in input order and each key's outputs are deterministic;
 * keys may interleave differently, so outputs are compared key by key.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  type AggregateFunction,
  JobFailedError,
  RestartStrategies,
  StreamExecutionEnvironment,
  WatermarkStrategy,
} from "../mod.ts";
import { CollectingSink, type TestItem, TestSource } from "../testing.ts";
import { withTempDir } from "./_job_kit.ts";

interface Reading {
  readonly id: string;
  readonly seq: number;
  readonly t: number;
}

/** Seed 2's readings (DESIGN §10), numbered per sensor. */
const READINGS: Reading[] = (() => {
  const rows: [string, number][] = [
    ["sensor_1", 35.8],
    ["sensor_1", 32.4],
    ["sensor_1", 42.4],
    ["sensor_10", 52.6],
    ["sensor_10", 22.5],
    ["sensor_7", 6.7],
    ["sensor_7", 9.9],
    ["sensor_1", 36.3],
    ["sensor_7", 19.9],
    ["sensor_7", 30],
    ["sensor_1", 32.4],
  ];
  const seq = new Map<string, number>();
  return rows.map(([id, t]) => {
    const n = seq.get(id) ?? 0;
    seq.set(id, n + 1);
    return { id, seq: n, t };
  });
})();

/** Each key's records, in order. */
function byKey<R>(records: readonly R[], key: (r: R) => string): Record<string, R[]> {
  const out: Record<string, R[]> = {};
  for (const r of records) (out[key(r)] ??= []).push(r);
  return out;
}

/** What a sink committed, per sensor, as `[seq, t]` pairs in order. */
function pairsBySensor(sink: CollectingSink<Reading>): Record<string, number[][]> {
  return Object.fromEntries(
    Object.entries(byKey(sink.committed(), (r) => r.id)).map(([id, rs]) => [
      id,
      rs.map((r) => [r.seq, r.t]),
    ]),
  );
}

/**
 * Per sensor `[id, sum of temperatures in tenths, count]` (integers, so the
 * expected values are exact); the accumulator changes in place.
 */
const TOTALS: AggregateFunction<Reading, { id: string; tenths: number; count: number }, unknown[]> =
  {
    createAccumulator: () => ({ id: "", tenths: 0, count: 0 }),
    add: (r, acc) => {
      acc.id = r.id;
      acc.tenths += Math.round(r.t * 10);
      acc.count++;
      return acc;
    },
    getResult: (acc) => [acc.id, acc.tenths, acc.count],
    merge: (a, b) => ({ id: a.id, tenths: a.tenths + b.tenths, count: a.count + b.count }),
  };

Deno.test("min, max, minBy, maxBy and aggregate give Flink's running results per key", async () => {
  await withTempDir(async (dir) => {
    const env = StreamExecutionEnvironment.getExecutionEnvironment()
      .setParallelism(2)
      .setCheckpointDirectory(dir);
    const readings = env.fromSource(
      TestSource.of(READINGS),
      WatermarkStrategy.noWatermarks(),
      "readings",
    ).uid("readings").setParallelism(1);
    const sinks = {
      min: new CollectingSink<Reading>(),
      max: new CollectingSink<Reading>(),
      minBy: new CollectingSink<Reading>(),
      maxBy: new CollectingSink<Reading>(),
    };
    for (const op of ["min", "max", "minBy", "maxBy"] as const) {
      readings.keyBy((r) => r.id)[op]("t").uid(op).sinkTo(sinks[op]).uid(`${op}-out`);
    }
    const averages = new CollectingSink<unknown[]>();
    readings.keyBy((r) => r.id).aggregate(TOTALS).uid("average").sinkTo(averages).uid("avg-out");
    await env.execute("keyed aggregations");

    // min/max: the first record (seq 0) with the running extreme in t.
    assert.deepEqual(
      pairsBySensor(sinks.min),
      {
        sensor_1: [[0, 35.8], [0, 32.4], [0, 32.4], [0, 32.4], [0, 32.4]],
        sensor_10: [[0, 52.6], [0, 22.5]],
        sensor_7: [[0, 6.7], [0, 6.7], [0, 6.7], [0, 6.7]],
      },
    );
    assert.deepEqual(
      pairsBySensor(sinks.max),
      {
        sensor_1: [[0, 35.8], [0, 35.8], [0, 42.4], [0, 42.4], [0, 42.4]],
        sensor_10: [[0, 52.6], [0, 52.6]],
        sensor_7: [[0, 6.7], [0, 9.9], [0, 19.9], [0, 30]],
      },
    );
    // minBy/maxBy: the whole extreme record; the tie at 32.4 (seq 1 and 4) keeps seq 1.
    assert.deepEqual(
      pairsBySensor(sinks.minBy),
      {
        sensor_1: [[0, 35.8], [1, 32.4], [1, 32.4], [1, 32.4], [1, 32.4]],
        sensor_10: [[0, 52.6], [1, 22.5]],
        sensor_7: [[0, 6.7], [0, 6.7], [0, 6.7], [0, 6.7]],
      },
    );
    assert.deepEqual(
      pairsBySensor(sinks.maxBy),
      {
        sensor_1: [[0, 35.8], [0, 35.8], [2, 42.4], [2, 42.4], [2, 42.4]],
        sensor_10: [[0, 52.6], [0, 52.6]],
        sensor_7: [[0, 6.7], [1, 9.9], [2, 19.9], [3, 30]],
      },
    );
    assert.deepEqual(byKey(averages.committed(), (r) => r[0] as string), {
      sensor_1: [
        ["sensor_1", 358, 1],
        ["sensor_1", 682, 2],
        ["sensor_1", 1106, 3],
        ["sensor_1", 1469, 4],
        ["sensor_1", 1793, 5],
      ],
      sensor_10: [["sensor_10", 526, 1], ["sensor_10", 751, 2]],
      sensor_7: [["sensor_7", 67, 1], ["sensor_7", 166, 2], ["sensor_7", 365, 3], [
        "sensor_7",
        665,
        4,
      ]],
    });
  });
});

Deno.test("aggregate's accumulators survive a failure: the committed output equals a run without it", async () => {
  await withTempDir(async (dir) => {
    const script: TestItem<Reading>[] = [
      ...READINGS.slice(0, 6),
      TestSource.awaitCheckpoint(),
      TestSource.fail("crash after a checkpoint holding six readings"),
      ...READINGS.slice(6),
    ];
    const env = StreamExecutionEnvironment.getExecutionEnvironment()
      .setParallelism(2)
      .enableCheckpointing(20, { directory: dir })
      .setRestartStrategy(RestartStrategies.fixedDelay(1, 0));
    const averages = new CollectingSink<unknown[]>();
    env.fromSource(TestSource.of(script), WatermarkStrategy.noWatermarks(), "readings")
      .uid("readings").setParallelism(1)
      .keyBy((r) => r.id)
      .aggregate(TOTALS).uid("average")
      .sinkTo(averages).uid("avg-out");
    const result = await env.execute("keyed aggregate with a failure");

    assert.equal(result.restarts, 1, "the induced failure restarted the job once");
    const last = Object.fromEntries(
      Object.entries(byKey(averages.committed(), (r) => r[0] as string)).map((
        [k, rs],
      ) => [k, rs.at(-1)]),
    );
    assert.deepEqual(last, {
      sensor_1: ["sensor_1", 1793, 5],
      sensor_10: ["sensor_10", 751, 2],
      sensor_7: ["sensor_7", 665, 4],
    });
    assert.equal(
      averages.committed().length,
      READINGS.length,
      "one output per reading, none twice",
    );
  });
});

Deno.test("min() over a record without the field fails the job, naming field, value and record", async () => {
  await withTempDir(async (dir) => {
    const env = StreamExecutionEnvironment.getExecutionEnvironment()
      .setCheckpointDirectory(dir)
      .setRestartStrategy(RestartStrategies.noRestart());
    const bad = { id: "sensor_1", seq: 1, temperature: 30 } as unknown as Reading;
    env.fromSource(TestSource.of([READINGS[0]!, bad]), WatermarkStrategy.noWatermarks(), "readings")
      .uid("readings")
      .keyBy((r) => r.id)
      .min("t").uid("min")
      .sinkTo(new CollectingSink<Reading>()).uid("out");
    const error = await env.execute("min over a bad record").then(
      () => assert.fail("the job finished though a record has no field t"),
      (e: unknown) => e,
    );
    assert.ok(error instanceof JobFailedError, `not a JobFailedError: ${error}`);
    assert.match(
      error.message,
      /min\("t"\) needs a number, string, bigint or boolean in field "t": current value is undefined in record \{"id":"sensor_1","seq":1,"temperature":30\}/,
    );
  });
});
