/**
 * `weir sql --nats` on a cluster of its own (a coordinator and two worker
 * processes): a script's INSERT becomes a job of the generic job module
 * `cli/sql_job.ts`, which the workers re-plan from the shipped SQL text;
 * its rows land in a filesystem sink table exactly as the generator made
 * them. The REPL on the cluster: a SELECT's changelog comes back over NATS
 * and, folded, equals the batch GROUP BY.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { REPO_ROOT, TestCluster } from "./_cluster.ts";
import { startNatsServer } from "./_nats_server.ts";
import { NexmarkGenerator } from "../connectors/datagen/nexmark/generator.ts";

Deno.test({
  name:
    "cluster: weir sql --nats -f submits the script's INSERT as a job that the workers re-plan from its SQL",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const nats = await startNatsServer({ jetstream: true });
    const cluster = new TestCluster({ nats: nats.url, workers: 2, slots: 2 });
    const dir = await Deno.makeTempDir({ prefix: "weir-sql-cluster-" });
    try {
      await cluster.start();
      const script = join(dir, "job.sql");
      await Deno.writeTextFile(
        script,
        `-- setup statements travel with the job
         CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT)
           WITH ('connector' = 'nexmark', 'nexmark.table' = 'bid', 'events.num' = '400');
         CREATE TABLE big (auction BIGINT, price BIGINT)
           WITH ('connector' = 'filesystem', 'path' = '${dir}/out', 'format' = 'csv');
         SET 'pipeline.name' = 'sql-on-a-cluster';
         EXPLAIN SELECT auction, price FROM bid WHERE price > 100000;
         INSERT INTO big SELECT auction, price FROM bid WHERE price > 100000;`,
      );
      const run = await cluster.cli("sql", "-f", script, "-p", "2");
      assert.equal(run.code, 0, run.output + cluster.logs());
      assert.match(run.output, /Calc\(select=\[auction, price\], where=\[/, "EXPLAIN ran here");
      const generator = new NexmarkGenerator();
      const expected: string[] = [];
      for (let n = 0; n < 400; n++) {
        const e = generator.event(n);
        if (e.type === "bid" && e.bid.price > 100000) {
          expected.push(`${e.bid.auction},${e.bid.price}`);
        }
      }
      const lines: string[] = [];
      for await (const entry of Deno.readDir(join(dir, "out"))) {
        if (entry.name.startsWith(".")) continue;
        const text = await Deno.readTextFile(join(dir, "out", entry.name));
        lines.push(...text.split("\n").filter((l) => l !== ""));
      }
      assert.ok(expected.length > 10);
      assert.deepEqual(lines.sort(), expected.sort());
      assert.match(cluster.coordinatorLog, /sql-on-a-cluster/, "the SET reached the job");

      // The REPL on the cluster: a GROUP BY's changelog comes back over NATS.
      const repl = new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", join(REPO_ROOT, "cli.ts"), "sql", "--nats", nats.url, "-p", "2"],
        stdin: "piped",
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      const writer = repl.stdin.getWriter();
      await writer.write(
        new TextEncoder().encode(
          `CREATE TABLE bid (auction BIGINT, price BIGINT)
             WITH ('connector' = 'nexmark', 'nexmark.table' = 'bid', 'events.num' = '300');
           SELECT auction, COUNT(*) AS n FROM bid GROUP BY auction;\nQUIT;\n`,
        ),
      );
      await writer.close();
      const out = await repl.output();
      const stdout = new TextDecoder().decode(out.stdout);
      assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
      const folded = new Map<string, number>();
      for (const line of stdout.split("\n")) {
        const m = /^([+-][IUD])\((\d+),(\d+)\)$/.exec(line);
        if (m === null) continue;
        const key = `${m[2]},${m[3]}`;
        folded.set(key, (folded.get(key) ?? 0) + (m[1]!.startsWith("+") ? 1 : -1));
      }
      const counts = new Map<number, number>();
      for (let n = 0; n < 300; n++) {
        const e = generator.event(n);
        if (e.type === "bid") counts.set(e.bid.auction, (counts.get(e.bid.auction) ?? 0) + 1);
      }
      assert.deepEqual(
        [...folded].filter(([, c]) => c !== 0).map(([k]) => k).sort(),
        [...counts].map(([a, c]) => `${a},${c}`).sort(),
        "the changelog folded is the batch GROUP BY",
      );
    } catch (error) {
      console.error(cluster.logs());
      throw error;
    } finally {
      await cluster.stop();
      await nats.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
