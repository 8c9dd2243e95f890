import assert from "node:assert/strict";
import { SingleOutputStreamOperator } from "../api/datastream.ts";
import { StreamExecutionEnvironment } from "../api/environment.ts";
import type { WatermarkStrategy } from "../time/watermark.ts";
import type { ScanNode } from "./plan.ts";
import type { Row } from "./row.ts";
import { translatePlan } from "./translate.ts";
import { TYPES } from "./types.ts";

const scan: ScanNode = {
  op: "TableSourceScan",
  table: "bids",
  columns: [{ name: "ts", type: { ...TYPES.TIMESTAMP, timeAttribute: "rowtime" } }],
  mode: "append",
  watermark: {
    rowtime: 0,
    delayMillis: 1_000,
    text: "ts - INTERVAL '1' SECOND",
    emit: "on-periodic",
  },
};

function idleTimeoutOf(sourceIdleTimeoutMs: number | undefined): number | undefined {
  const env = StreamExecutionEnvironment.getExecutionEnvironment();
  const out = translatePlan(
    scan,
    () => env.fromCollection<Row>([]),
    "idle",
    sourceIdleTimeoutMs === undefined ? {} : { sourceIdleTimeoutMs },
  );
  assert.ok(out instanceof SingleOutputStreamOperator);
  const spec = out.node.spec;
  assert.equal(spec.kind, "timestampsAndWatermarks");
  return (spec as { fn: WatermarkStrategy<unknown> }).fn.idleTimeoutMs;
}

Deno.test("table.exec.source.idle-timeout marks a scan's splits idle through its watermark strategy", () => {
  assert.equal(idleTimeoutOf(30_000), 30_000);
  assert.equal(idleTimeoutOf(0), undefined);
  assert.equal(idleTimeoutOf(undefined), undefined);
});
