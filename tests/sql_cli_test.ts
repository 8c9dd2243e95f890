/**
 * `weir sql` as a user runs it: the REPL fed on stdin (statements over
 * several lines, HELP, an error that does not end the session, QUIT, the
 * result modes changelog, table and tableau), and scripts with the
 * connectors of `connectors/` (a nexmark source, a filesystem sink).
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";

const root = new URL("..", import.meta.url);

/** Runs `deno run -A cli.ts sql <args>` with `input` on stdin. */
async function weirSql(
  args: string[],
  input: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "cli.ts", "sql", ...args],
    cwd: root,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
    env: { WEIR_NATS_URL: "" },
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(input));
  await writer.close();
  const output = await child.output();
  const text = new TextDecoder();
  return {
    code: output.code,
    stdout: text.decode(output.stdout),
    stderr: text.decode(output.stderr),
  };
}

const CLICKS = `CREATE TABLE clicks (\`user\` STRING, url STRING) WITH ('connector' = 'values');
INSERT INTO clicks VALUES ('Mary', './home'), ('Bob', './cart'),
  ('Mary', './prod?id=1'), ('Liz', './home');
`;
const QUERY = "SELECT `user`, COUNT(url) AS cnt\n  FROM clicks GROUP BY `user`;\n";

Deno.test({
  name:
    "the weir sql REPL runs piped statements, prints a changelog, reports an error and goes on, and stops at QUIT",
  sanitizeResources: false,
  async fn() {
    const { code, stdout, stderr } = await weirSql(
      [],
      `${CLICKS}HELP;\nSELECT nope FROM clicks;\n${QUERY}QUIT;\nSELECT 'after quit';\n`,
    );
    assert.equal(code, 0, stderr);
    const lines = stdout.trim().split("\n");
    assert.ok(lines.some((l) => l.startsWith("Statements end with ';'")), "HELP printed");
    assert.deepEqual(lines.filter((l) => /^[+-][IUD]\(/.test(l)), [
      "+I(Mary,1)",
      "+I(Bob,1)",
      "-U(Mary,1)",
      "+U(Mary,2)",
      "+I(Liz,1)",
    ]);
    assert.match(stderr, /\[ERROR\] .*nope/);
    assert.doesNotMatch(stdout, /after quit/);
  },
});

Deno.test({
  name:
    "in the weir sql REPL, SET result-mode 'table' prints the materialized result, 'tableau' a row per change",
  sanitizeResources: false,
  async fn() {
    const { code, stdout, stderr } = await weirSql(
      [],
      `${CLICKS}SET 'sql-client.execution.result-mode' = 'table';\n${QUERY}` +
        `SET 'sql-client.execution.result-mode' = 'tableau';\n${QUERY}`,
    );
    assert.equal(code, 0, stderr);
    const tables = stdout.split("rows in set");
    assert.ok(tables.length >= 2, stdout);
    const last = tables[tables.length - 2]!;
    assert.ok(
      last.endsWith(
        "| user | cnt |\n+------+-----+\n| Bob  |   1 |\n| Mary |   2 |\n| Liz  |   1 |\n+------+-----+\n3 ",
      ),
      last,
    );
    assert.match(stdout, /\| op \| user +\| cnt +\|/);
    assert.match(stdout, /\| -U \| Mary +\| +1 \|\n\| \+U \| Mary +\| +2 \|/);
    assert.match(stdout, /Received a total of 5 rows/);
  },
});

Deno.test({
  name: "the weir sql REPL ends with exit code 1 when stdin ends inside a statement",
  sanitizeResources: false,
  async fn() {
    const { code, stderr } = await weirSql([], "SELECT 1\n");
    assert.equal(code, 1);
    assert.match(stderr, /the input ended inside a statement not ended by ';': SELECT 1/);
  },
});

Deno.test({
  name: "weir sql -f writes nexmark bids through a query into a filesystem sink table",
  sanitizeResources: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "weir-sql-cli-" });
    try {
      const script = join(dir, "bids.sql");
      await Deno.writeTextFile(
        script,
        `CREATE TABLE bid (auction BIGINT, price BIGINT, \`dateTime\` TIMESTAMP(3))
           WITH ('connector' = 'nexmark', 'nexmark.table' = 'bid', 'events.num' = '100');
         CREATE TABLE cheap (auction BIGINT, price BIGINT)
           WITH ('connector' = 'filesystem', 'path' = '${dir}/out', 'format' = 'csv');
         INSERT INTO cheap SELECT auction, price FROM bid WHERE price < 10000;`,
      );
      const { code, stderr } = await weirSql(["-f", script], "");
      assert.equal(code, 0, stderr);
      const { NexmarkGenerator } = await import("../connectors/datagen/nexmark/generator.ts");
      const generator = new NexmarkGenerator();
      const expected: string[] = [];
      for (let n = 0; n < 100; n++) {
        const e = generator.event(n);
        if (e.type === "bid" && e.bid.price < 10000) {
          expected.push(`${e.bid.auction},${e.bid.price}`);
        }
      }
      const lines: string[] = [];
      for await (const entry of Deno.readDir(join(dir, "out"))) {
        if (entry.name.startsWith(".")) continue;
        lines.push(
          ...(await Deno.readTextFile(join(dir, "out", entry.name))).split("\n").filter((l) => l),
        );
      }
      assert.ok(expected.length > 0);
      assert.deepEqual(lines.sort(), expected.sort());
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
