/**
 * One Nexmark query as a job module, for cluster mode: `main.ts --nats URL`
 * runs it as a client process, and the workers' slot threads import it to
 * rebuild the same graph.
 *
 *     deno run -A bench/nexmark/job.ts --nats nats://127.0.0.1:4222 --query q1 \
 *       --events 2000000 [--parallelism 2] [--checkpoint-interval 1000] --report DIR
 *
 * Each sink subtask writes `<DIR>/sink-<subtask>.json` at `close()`: a
 * {@linkcode SinkReport} with its tally. The client prints one line
 * `RESULT <json>` ({@linkcode JobResultLine}).
 *
 * @module
 */

import { join } from "node:path";
import { parseArgs } from "node:util";
import { RestartStrategies, StreamExecutionEnvironment } from "../../mod.ts";
import { type CountTally, isQueryName, newTally, QUERIES } from "./queries.ts";

/** What one sink subtask of a cluster run reports. */
export interface SinkReport {
  /** The subtask's index. */
  readonly subtask: number;
  /** The process it ran in (a worker). */
  readonly pid: number;
  /** Records received. */
  readonly records: number;
  /** Records of committed transactions. */
  readonly committed: number;
  /** Transactions committed. */
  readonly transactions: number;
  /** Sum mod 2^32 of the committed records' hashes (windowed and updating queries; else 0). */
  readonly checksum: number;
  /** Committed records counted with their signs (`CountTally.net`). */
  readonly net: number;
  /** Wall-clock ms of its first record (0: none). */
  readonly firstMs: number;
  /** Wall-clock ms of its close. */
  readonly closedMs: number;
}

/** What the client prints after `RESULT `. */
export interface JobResultLine {
  /** The job's id. */
  readonly jobId: string;
  /** Submission to finish, ms. */
  readonly durationMs: number;
  /** Restarts. */
  readonly restarts: number;
  /** Checkpoints completed. */
  readonly checkpoints: number;
  /** Checkpoints failed. */
  readonly failedCheckpoints: number;
}

/** The sink's `close()` hook writing a {@linkcode SinkReport} into `dir`. */
export function reportTo(dir: string): (tally: CountTally, subtask: number) => void {
  return (t, subtask) => {
    const report: SinkReport = {
      subtask,
      pid: Deno.pid,
      records: t.records,
      committed: t.committed,
      transactions: t.transactions,
      checksum: t.checksum,
      net: t.net,
      firstMs: t.firstMs,
      closedMs: t.closedMs,
    };
    Deno.writeTextFileSync(join(dir, `sink-${subtask}.json`), JSON.stringify(report));
  };
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      nats: { type: "string" },
      query: { type: "string", default: "q1" },
      events: { type: "string", default: "2000000" },
      parallelism: { type: "string", default: "2" },
      "checkpoint-interval": { type: "string", default: "1000" },
      report: { type: "string" },
    },
  });
  const query = values.query;
  if (!isQueryName(query)) throw new Error(`job.ts: unknown --query '${query}'`);
  if (values.report === undefined) throw new Error("job.ts needs --report DIR");
  const env = StreamExecutionEnvironment.getExecutionEnvironment();
  env.setParallelism(Number(values.parallelism));
  const interval = Number(values["checkpoint-interval"]);
  if (interval > 0) env.enableCheckpointing(interval);
  env.setRestartStrategy(RestartStrategies.noRestart());
  QUERIES[query](env, {
    source: { events: Number(values.events) },
    tally: newTally(),
    onSinkClose: reportTo(values.report),
  });
  const result = await env.execute(`nexmark-${query}`);
  const line: JobResultLine = {
    jobId: result.jobId,
    durationMs: result.durationMs,
    restarts: result.restarts,
    checkpoints: result.checkpoints.completed,
    failedCheckpoints: result.checkpoints.failed,
  };
  console.log(`RESULT ${JSON.stringify(line)}`);
}
