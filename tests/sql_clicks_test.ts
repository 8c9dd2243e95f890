/**
 * Seed example 7 end to end, through the shipped CLI and the Table API
 * example: `weir sql -f examples/clicks.sql` and `examples/clicks.ts` each
 * print exactly the seed's changelog on stdout.
 *
 * @module
 */

import assert from "node:assert/strict";
import { EXPECTED_CHANGELOG } from "../examples/clicks.ts";

const root = new URL("..", import.meta.url);

/** Runs `deno run -A <args>` in the repository; returns its exit code, stdout and stderr. */
async function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", ...args],
    cwd: root,
    stdout: "piped",
    stderr: "piped",
    env: { WEIR_NATS_URL: "" },
  }).output();
  const text = new TextDecoder();
  return {
    code: output.code,
    stdout: text.decode(output.stdout),
    stderr: text.decode(output.stderr),
  };
}

Deno.test({
  name: "weir sql -f examples/clicks.sql prints the seed's changelog exactly",
  sanitizeResources: false,
  async fn() {
    const { code, stdout, stderr } = await run(["cli.ts", "sql", "-f", "examples/clicks.sql"]);
    assert.equal(code, 0, stderr);
    assert.equal(stdout, EXPECTED_CHANGELOG.join("\n") + "\n");
    assert.equal(
      EXPECTED_CHANGELOG.join(" "),
      "+I(Mary,1) +I(Bob,1) -U(Mary,1) +U(Mary,2) +I(Liz,1) -U(Bob,1) +U(Bob,2) -U(Mary,2) +U(Mary,3)",
    );
  },
});

Deno.test({
  name: "examples/clicks.ts, the same query in the Table API, prints the same changelog",
  sanitizeResources: false,
  async fn() {
    const { code, stdout, stderr } = await run(["examples/clicks.ts"]);
    assert.equal(code, 0, stderr);
    assert.equal(stdout, EXPECTED_CHANGELOG.join("\n") + "\n");
  },
});

Deno.test({
  name:
    "weir sql --explain prints each operator's changelog mode on stderr; a bad script names its file, line and column",
  sanitizeResources: false,
  async fn() {
    const explained = await run(["cli.ts", "sql", "-f", "examples/clicks.sql", "--explain"]);
    assert.equal(explained.code, 0, explained.stderr);
    assert.match(
      explained.stderr,
      /GroupAggregate\(groupBy=\[user\], select=\[user, COUNT\(url\) AS cnt\], changelogMode=\[I,UB,UA,D\]\)/,
    );
    assert.match(
      explained.stderr,
      /TableSourceScan\(table=\[\[clicks\]\], fields=\[user, cTime, url\], changelogMode=\[I\]\)/,
    );
    const dir = await Deno.makeTempDir({ prefix: "weir-sql-" });
    try {
      const file = `${dir}/bad.sql`;
      await Deno.writeTextFile(
        file,
        "CREATE TABLE t (a INT) WITH ('connector' = 'values');\n\nSELECT a FROM t WHERE;\n",
      );
      const bad = await run(["cli.ts", "sql", "-f", file]);
      assert.equal(bad.code, 1);
      assert.match(
        bad.stderr,
        new RegExp(
          `error: ${
            file.replaceAll("/", "\\/")
          }: SQL parse error at line 3, column 22: unexpected (';'|end of input \\(the statement is incomplete\\)); expecting an expression or name`,
        ),
      );
      const usage = await run(["cli.ts", "sql", "clicks.sql"]);
      assert.equal(usage.code, 2);
      assert.match(usage.stderr, /weir sql takes no positional argument \(use -f FILE\)/);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "INSERT INTO a print table prints the changelog with its print-identifier; HAVING filters the changes",
  sanitizeResources: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "weir-sql-" });
    try {
      const clicks = await Deno.readTextFile(new URL("examples/clicks.sql", root));
      const script = clicks.replace(
        /SELECT `user`, COUNT\(url\) AS cnt FROM clicks GROUP BY `user`;/,
        "CREATE TABLE frequent (`user` VARCHAR, cnt BIGINT) WITH ('connector' = 'print', 'print-identifier' = 'frequent');\n" +
          "INSERT INTO frequent SELECT `user`, COUNT(url) FROM clicks GROUP BY `user` HAVING COUNT(url) >= 2;",
      );
      assert.notEqual(script, clicks);
      await Deno.writeTextFile(`${dir}/frequent.sql`, script);
      const { code, stdout, stderr } = await run(["cli.ts", "sql", "-f", `${dir}/frequent.sql`]);
      assert.equal(code, 0, stderr);
      assert.equal(
        stdout,
        ["+U(Mary,2)", "+U(Bob,2)", "-U(Mary,2)", "+U(Mary,3)"].map((l) => `frequent> ${l}\n`).join(
          "",
        ),
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
