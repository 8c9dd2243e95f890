/**
 * The job-level check of sink delivery guarantees against the checkpointing
 * mode, run by `execute()` before anything starts. A pure decision: it
 * reads the sinks and the mode and returns what to do; `execute()` throws
 * or logs.
 *
 * A guarantee is a property of the source, the checkpointing mode and the
 * sink together (DESIGN §12). A sink's own `deliveryGuarantee` is what it
 * can give when checkpoints are exactly-once; the job may weaken it:
 *
 * | sink guarantee  | checkpointing off, a source unbounded | checkpointing off, all bounded | at-least-once mode | exactly-once mode |
 * |-----------------|---------------------------------------|--------------------------------|--------------------|-------------------|
 * | `exactly-once`  | refused: {@linkcode DeliveryGuaranteeError} | ok                       | warning: at-least-once end to end | ok |
 * | `at-least-once` | ok (at-most-once end to end); refused when it `commitsOnlyAtCheckpoints` | ok | ok            | ok                |
 * | `none`          | ok                                    | ok                             | ok                 | ok                |
 *
 * Why: an exactly-once sink makes its writes visible only when a checkpoint
 * completes. Without periodic checkpoints an unbounded job never commits
 * anything, so Weir refuses the combination (Flink's `KafkaSink` with
 * `EXACTLY_ONCE` likewise needs checkpointing to commit). A job whose
 * sources are all bounded still takes its final checkpoint at the end of
 * input (the coordinator does so even with checkpointing off), which
 * commits everything at once, so the combination is allowed. A failure
 * before the final checkpoint completes commits nothing, and a restart (if
 * a restart strategy is set; with checkpointing off the default is none)
 * starts from the beginning, with no checkpoint to restore. A failure after
 * it completed (e.g. a committer that throws) restarts from the final
 * checkpoint, like a restart from any completed checkpoint: the sources
 * resume at their end and the restored committables are committed again
 * (the committer recognizes those it already committed, as after any
 * restore). Either way the output is exactly-once.
 *
 * "Bounded" is the sources' `boundedness`. A source whose end is up to
 * someone else is `"continuous-unbounded"` even when it can end: the
 * socket source (`socket_source.ts`) ends when its peer closes, but the
 * job cannot count on that, and it cannot replay what it read, so an
 * exactly-once sink behind it without checkpointing is refused.
 *
 * With at-least-once checkpoints the sink still commits each checkpoint's writes exactly once,
 * but the snapshot it commits against may already hold records from after
 * the barrier, which a restore replays: end to end the job is at-least-once.
 * Flink allows this, so Weir only warns.
 *
 * Which sinks count as exactly-once: a `SinkV2` whose `deliveryGuarantee`
 * is `"exactly-once"`, and every `TwoPhaseCommitSink` (exactly-once by
 * nature). A `SinkFunction` declares no guarantee and is not checked. A
 * `SinkV2` declaring `commitsOnlyAtCheckpoints` (the file sink, the
 * write-ahead-log sink) is refused like an exactly-once one in an
 * unbounded job with checkpointing off, whatever its guarantee: it would
 * never commit. Those sinks do not refuse checkpointing `"none"` at run
 * time: they cannot know whether the job is bounded, and a bounded job's
 * final checkpoint commits them.
 *
 * @example
 * ```ts
 * import { decideDeliveryGuarantees } from "./delivery_check.ts";
 * const decisions = decideDeliveryGuarantees({
 *   sinks: [{ name: "Sink: bills", uid: "bills", sink: { kind: "simple", invoke: () => {} } }],
 *   mode: "none",
 *   bounded: false,
 * });
 * console.assert(decisions.length === 0);
 * ```
 *
 * @module
 */

import type { CheckpointingMode } from "./sink_v2.ts";
import { DeliveryGuaranteeError } from "./sink_v2.ts";
import type { Sink } from "./sink.ts";

/** A sink of the job, as `execute()` sees it in the stream graph. */
export interface JobSink {
  /** The sink operator's display name (e.g. `Sink: bills`). */
  readonly name: string;
  /** Its uid set with `.uid()`, or `undefined`. */
  readonly uid: string | undefined;
  /** The sink given to `sinkTo`. */
  readonly sink: Sink<unknown>;
}

/** What {@linkcode decideDeliveryGuarantees} found about one sink. */
export type DeliveryDecision =
  /** The job cannot run this sink as configured: `message` says why and what to do. */
  | { readonly kind: "refuse"; readonly sink: JobSink; readonly message: string }
  /** The job runs, but the sink's guarantee is weaker end to end: `message` says so. */
  | { readonly kind: "warn"; readonly sink: JobSink; readonly message: string };

/**
 * Whether `sink` promises exactly-once: a `SinkV2` declaring it, or a
 * `TwoPhaseCommitSink`.
 * @param sink any sink `sinkTo` accepts.
 * @returns `true` for an exactly-once sink.
 */
export function isExactlyOnceSink(sink: Sink<unknown>): boolean {
  switch (sink.kind) {
    case "two-phase-commit":
      return true;
    case "v2":
      return sink.deliveryGuarantee === "exactly-once";
    default:
      return false;
  }
}

/**
 * Whether `sink` commits only at checkpoints whatever its guarantee: a
 * `SinkV2` declaring `commitsOnlyAtCheckpoints`.
 */
function commitsOnlyAtCheckpoints(sink: Sink<unknown>): boolean {
  return sink.kind === "v2" && sink.commitsOnlyAtCheckpoints === true;
}

/** `Sink: bills (uid "bills")`, or just the name when the sink has no uid. */
function describe(sink: JobSink): string {
  return sink.uid === undefined ? sink.name : `${sink.name} (uid "${sink.uid}")`;
}

/** What {@linkcode decideDeliveryGuarantees} decides on. */
export interface DeliveryFacts {
  /** Every sink of the job. */
  readonly sinks: readonly JobSink[];
  /** The job's checkpointing mode, `"none"` when checkpointing is off. */
  readonly mode: CheckpointingMode | "none";
  /** Whether every source of the job is bounded (then a final checkpoint commits at the end). */
  readonly bounded: boolean;
}

/**
 * Decides, per sink, whether the job's checkpointing mode can give the
 * sink's guarantee (see the module docs' table). Performs no I/O.
 *
 * @param facts the job's sinks, checkpointing mode and boundedness.
 * @returns one decision per sink that is refused or weakened, in `sinks`
 *   order; empty when every sink gets what it promises.
 */
export function decideDeliveryGuarantees(facts: DeliveryFacts): DeliveryDecision[] {
  const { sinks, mode, bounded } = facts;
  const decisions: DeliveryDecision[] = [];
  for (const sink of sinks) {
    if (!isExactlyOnceSink(sink.sink)) {
      if (mode === "none" && !bounded && commitsOnlyAtCheckpoints(sink.sink)) {
        decisions.push({
          kind: "refuse",
          sink,
          message: `${
            describe(sink)
          } makes records visible only when a checkpoint completes (whatever its deliveryGuarantee), but checkpointing is off and the job has an unbounded source, so it would never commit. Call env.enableCheckpointing(intervalMs)`,
        });
      }
      continue;
    }
    if (mode === "none" && !bounded) {
      decisions.push({
        kind: "refuse",
        sink,
        message: `${
          describe(sink)
        } has deliveryGuarantee "exactly-once" but checkpointing is off and the job has an unbounded source: it commits only when a checkpoint completes, so it would never commit. Call env.enableCheckpointing(intervalMs) (mode "exactly-once"), or configure the sink with a weaker deliveryGuarantee`,
      });
    } else if (mode === "at-least-once") {
      decisions.push({
        kind: "warn",
        sink,
        message: `${
          describe(sink)
        } has deliveryGuarantee "exactly-once" but checkpointing mode is "at-least-once": end to end it is at-least-once (a restore replays records its committed output already holds). Use enableCheckpointing(intervalMs, { mode: "exactly-once" }) for exactly-once`,
      });
    }
  }
  return decisions;
}

/**
 * Applies {@linkcode decideDeliveryGuarantees}: throws for refused sinks
 * and returns the warnings to log.
 *
 * @param facts the job's sinks, checkpointing mode and boundedness.
 * @returns the warning messages, one per weakened sink.
 * @throws {DeliveryGuaranteeError} naming every refused sink (by name and
 *   uid) and saying to call `enableCheckpointing`.
 */
export function checkJobDeliveryGuarantees(facts: DeliveryFacts): string[] {
  const decisions = decideDeliveryGuarantees(facts);
  const refused = decisions.filter((d) => d.kind === "refuse");
  if (refused.length > 0) {
    throw new DeliveryGuaranteeError(refused.map((d) => d.message).join("; "));
  }
  return decisions.map((d) => d.message);
}
