import assert from "node:assert/strict";
import {
  formatDuration,
  parseDuration,
  TABLE_OPTIONS,
  TableConfig,
  TableConfigError,
} from "./table_config.ts";

Deno.test("parseDuration() reads Flink's duration forms in milliseconds", () => {
  const cases: [string, number][] = [
    ["500", 500],
    ["500 ms", 500],
    ["2s", 2_000],
    ["30 min", 1_800_000],
    ["1 h", 3_600_000],
    ["2 hours", 7_200_000],
    ["1d", 86_400_000],
    [" 0 ", 0],
  ];
  for (const [text, ms] of cases) assert.deepEqual(parseDuration(text), ms, text);
});

Deno.test("parseDuration() names what is wrong with a bad duration", () => {
  assert.deepEqual(parseDuration("-1 h"), {
    error:
      "'-1 h' is not a duration (a non-negative integer with an optional unit: ms, s, min, h, d)",
  });
  const unknown = parseDuration("3 weeks");
  assert.deepEqual(
    typeof unknown === "object" && unknown.error.includes("unknown time unit 'weeks'"),
    true,
  );
});

Deno.test("formatDuration() prints the largest unit that divides the duration", () => {
  assert.deepEqual(formatDuration(3_600_000), "1 h");
  assert.deepEqual(formatDuration(90_000), "90 s");
  assert.deepEqual(formatDuration(1_500), "1500 ms");
  assert.deepEqual(formatDuration(0), "0 ms");
});

Deno.test("TableConfig gives defaults until an option is set, and typed values after", () => {
  const config = new TableConfig();
  assert.deepEqual(config.get("table.exec.state.ttl"), 0);
  assert.deepEqual(config.get("parallelism.default"), null);
  assert.deepEqual(config.get("sql-client.execution.result-mode"), "changelog");
  config.set("table.exec.state.ttl", "1 h");
  config.set("parallelism.default", "4");
  config.set("pipeline.name", "my job");
  config.set("sql-client.execution.result-mode", "TABLE");
  assert.deepEqual(config.stateTtlMs, 3_600_000);
  assert.deepEqual(config.get("parallelism.default"), 4);
  assert.deepEqual(config.get("pipeline.name"), "my job");
  assert.deepEqual(config.get("sql-client.execution.result-mode"), "table");
  config.reset("table.exec.state.ttl");
  assert.deepEqual(config.stateTtlMs, 0);
});

Deno.test("TableConfig refuses an unknown key, listing the known ones", () => {
  const config = new TableConfig();
  let error = new Error();
  assert.throws(() => config.set("table.exec.state.tll", "1 h"), (e) => {
    error = e as Error;
    return e instanceof TableConfigError;
  });
  assert.deepEqual(
    error.message.startsWith("unknown option 'table.exec.state.tll' (known options: "),
    true,
  );
  for (const o of TABLE_OPTIONS) assert.deepEqual(error.message.includes(o.key), true, o.key);
  assert.throws(
    () => config.get("nope" as "pipeline.name"),
    (e) => e instanceof TableConfigError && e.message.includes("unknown option 'nope'"),
  );
});

Deno.test("TableConfig refuses a bad value, naming the key and the value, and keeps the old one", () => {
  const config = new TableConfig();
  config.set("parallelism.default", "2");
  assert.throws(
    () => config.set("parallelism.default", "0"),
    (e) =>
      e instanceof TableConfigError &&
      e.message.includes(
        "invalid value for option 'parallelism.default': '0' is not a positive integer",
      ),
  );
  assert.throws(
    () => config.set("sql-client.execution.result-mode", "grid"),
    (e) =>
      e instanceof TableConfigError &&
      e.message.includes("'grid' is not one of changelog, table, tableau"),
  );
  assert.throws(
    () => config.set("table.exec.state.ttl", "soon"),
    (e) => e instanceof TableConfigError && e.message.includes("'soon'"),
  );
  assert.throws(
    () => config.set("pipeline.name", "  "),
    (e) => e instanceof TableConfigError && e.message.includes("empty"),
  );
  assert.deepEqual(config.get("parallelism.default"), 2);
});

Deno.test("TableConfig.list() shows every option, its printed value and whether it was set", () => {
  const config = new TableConfig();
  config.set("execution.checkpointing.interval", "10 s");
  const list = config.list();
  assert.deepEqual(list.map((e) => e.key), TABLE_OPTIONS.map((o) => o.key));
  const interval = list.find((e) => e.key === "execution.checkpointing.interval")!;
  assert.deepEqual([interval.value, interval.isSet], ["10 s", true]);
  const ttl = list.find((e) => e.key === "table.exec.state.ttl")!;
  assert.deepEqual([ttl.value, ttl.isSet], ["0 ms", false]);
});
