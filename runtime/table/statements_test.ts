import assert from "node:assert/strict";
import { StreamExecutionEnvironment } from "../api/environment.ts";
import { PlanningError } from "./changelog_mode.ts";
import type { PlanNode } from "./plan.ts";
import { applyJobOptions, executeSet, explainResult, formatTableResult } from "./statements.ts";
import { TableConfig } from "./table_config.ts";
import { TYPES } from "./types.ts";

Deno.test("executeSet() sets an option, shows one, and lists them all", () => {
  const config = new TableConfig();
  assert.deepEqual(executeSet(config, "pipeline.name", "clicks", ""), {
    resultKind: "SUCCESS",
    statement: "SET",
  });
  assert.equal(config.get("pipeline.name"), "clicks");
  const one = executeSet(config, "pipeline.name", null, "");
  assert.deepEqual([one.resultKind, one.columns, one.rows], [
    "SUCCESS_WITH_CONTENT",
    ["key", "value"],
    [["pipeline.name", "clicks"]],
  ]);
  const all = executeSet(config, null, null, "");
  assert.equal(all.rows!.length, config.list().length);
  assert.deepEqual(all.rows!.find((r) => r[0] === "pipeline.name"), ["pipeline.name", "clicks"]);
});

Deno.test("executeSet() refuses an unknown key or a bad value with a PlanningError saying where", () => {
  const config = new TableConfig();
  assert.throws(
    () => executeSet(config, "table.exec.state.tll", "1 h", " at line 2, column 1"),
    (e) =>
      e instanceof PlanningError &&
      e.message.startsWith("SET: unknown option 'table.exec.state.tll' (known options: ") &&
      e.message.endsWith(" at line 2, column 1"),
  );
  assert.throws(
    () => executeSet(config, "parallelism.default", "many", ""),
    (e) =>
      e instanceof PlanningError &&
      /'parallelism\.default': 'many' is not a positive/.test(e.message),
  );
  assert.throws(() => executeSet(config, "nope", null, ""), PlanningError);
});

const scan: PlanNode = {
  op: "TableSourceScan",
  table: "clicks",
  columns: [{ name: "user", type: TYPES.STRING }, { name: "url", type: TYPES.STRING }],
  mode: "append",
};

Deno.test("explainResult() gives the plan with changelog modes as one row", () => {
  const result = explainResult(scan, null);
  assert.deepEqual(result.columns, ["result"]);
  assert.equal(
    result.rows![0]![0],
    "== Optimized Physical Plan ==\nTableSourceScan(table=[[clicks]], fields=[user, url], changelogMode=[I])\n",
  );
});

Deno.test("explainResult() of an INSERT puts the Sink node on top of the plan", () => {
  const text = String(explainResult(scan, { table: "out", fields: ["u", "v"] }).rows![0]![0]);
  assert.equal(
    text,
    [
      "== Optimized Physical Plan ==",
      "Sink(table=[[out]], fields=[u, v])",
      "+- TableSourceScan(table=[[clicks]], fields=[user, url], changelogMode=[I])",
      "",
    ].join("\n"),
  );
});

Deno.test("formatTableResult() prints a boxed table, a plan as it is, or the success line", () => {
  assert.equal(
    formatTableResult({
      resultKind: "SUCCESS_WITH_CONTENT",
      statement: "SET",
      columns: ["key", "value"],
      rows: [["pipeline.name", "x"], ["parallelism.default", null]],
    }),
    [
      "+---------------------+-------+",
      "| key                 | value |",
      "+---------------------+-------+",
      "| pipeline.name       | x     |",
      "| parallelism.default | null  |",
      "+---------------------+-------+",
      "2 row(s) in set",
      "",
    ].join("\n"),
  );
  const plan = explainResult(scan, null);
  assert.equal(formatTableResult(plan), plan.rows![0]![0]);
  assert.equal(
    formatTableResult({ resultKind: "SUCCESS", statement: "SET" }),
    "[INFO] Execute statement succeeded.\n",
  );
});

Deno.test("applyJobOptions() sets parallelism and the checkpoint interval, and names the job, from the config", () => {
  const env = StreamExecutionEnvironment.getExecutionEnvironment();
  const config = new TableConfig();
  assert.equal(applyJobOptions(config, env, "collect_1"), "collect_1");
  config.set("parallelism.default", "3");
  config.set("pipeline.name", "nightly");
  assert.equal(applyJobOptions(config, env, "collect_1"), "nightly");
  assert.equal(env.getParallelism(), 3);
  const intervals: number[] = [];
  env.enableCheckpointing = (ms: number) => {
    intervals.push(ms);
    return env;
  };
  applyJobOptions(config, env, "x");
  assert.deepEqual(intervals, [], "0 keeps the environment's setting");
  config.set("execution.checkpointing.interval", "10 s");
  applyJobOptions(config, env, "x");
  assert.deepEqual(intervals, [10_000]);
});
