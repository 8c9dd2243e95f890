/**
 * Internal: the harness of the exactly-once sink conformance suite
 * (`exactly_once_sink_conformance.ts`): the conformance records and the
 * fixture a sink provides, the record-by-record check of the committed
 * output, the committer that crashes mid-commit, and {@linkcode Run}, one
 * case's job (source position, checkpoints, the current incarnation of
 * `_sink_job.ts`).
 *
 * @module
 */

import { AssertionError } from "node:assert";
import type { TwoPhaseCommitSink } from "../../runtime/api/sink.ts";
import type { Committer, SinkV2 } from "../../runtime/api/sink_v2.ts";
import { type CommitterWrapper, Incarnation, type TakenCheckpoint } from "./_sink_job.ts";

/** The record every conformance case writes. */
export interface ConformanceRecord {
  /** Unique per record, 0..39; also the record's position in the source. */
  readonly id: number;
  /** One of `key-0` … `key-4`. */
  readonly key: string;
  /** An integer in [-50, 50]. */
  readonly amount: number;
}

/**
 * A sink the suite can drive: a `SinkV2` or a `TwoPhaseCommitSink` (the
 * exactly-once members of `Sink`; a `SinkFunction` has nothing to commit).
 */
export type ExactlyOnceSink<T> =
  // deno-lint-ignore no-explicit-any
  | SinkV2<T, any, any>
  // deno-lint-ignore no-explicit-any
  | TwoPhaseCommitSink<T, any>;

/** What a sink under test provides (one per case; see the module docs). */
export interface ExactlyOnceSinkFixture {
  /** A sink writing ConformanceRecords into this fixture's target; called for every incarnation (start, each restore), same configuration each time. */
  createSink(): ExactlyOnceSink<ConformanceRecord>;
  /** Every record committed so far (what a read-committed reader sees), any order. */
  readCommitted(): Promise<ConformanceRecord[]>;
  /** Removes everything the fixture created. */
  cleanup(): Promise<void>;
}

/** The number of records each case's source holds. */
export const CONFORMANCE_RECORD_COUNT = 40;

/** Record `id` of the conformance source. */
export function conformanceRecord(id: number): ConformanceRecord {
  return { id, key: `key-${id % 5}`, amount: ((id * 37) % 101) - 50 };
}

/** The conformance source's records, ids 0..39. */
export const RECORDS: readonly ConformanceRecord[] = Array.from(
  { length: CONFORMANCE_RECORD_COUNT },
  (_, id) => conformanceRecord(id),
);

/** The crash a wrapped committer simulates. */
class SimulatedCrash extends Error {
  override name = "SimulatedCrash";
}

function describeIds(list: readonly number[]): string {
  return list.length === 0 ? "none" : list.join(", ");
}

/** Compares what a read-committed reader sees with `expected`, record by record. */
async function checkCommitted(
  fixture: ExactlyOnceSinkFixture,
  expected: readonly ConformanceRecord[],
  context: string,
  mode: "exactly" | "subset" = "exactly",
): Promise<void> {
  const got = await fixture.readCommitted();
  const count = new Map<number, number>();
  const expectedById = new Map(expected.map((r) => [r.id, r]));
  const changed: string[] = [];
  const unexpected: number[] = [];
  for (const record of got) {
    const id = (record as { id?: unknown })?.id as number;
    count.set(id, (count.get(id) ?? 0) + 1);
    const want = expectedById.get(id);
    if (want === undefined) unexpected.push(id);
    else if (record.key !== want.key || record.amount !== want.amount) {
      changed.push(`${id}: ${JSON.stringify(record)} instead of ${JSON.stringify(want)}`);
    }
  }
  const duplicated = [...count].filter(([, n]) => n > 1).map(([id]) => id).sort((a, b) => a - b);
  const missing = mode === "exactly"
    ? expected.filter((r) => !count.has(r.id)).map((r) => r.id)
    : [];
  if (missing.length + duplicated.length + unexpected.length + changed.length === 0) return;
  throw new AssertionError({
    message: `${context}: the committed output is wrong (${got.length} record(s) visible, ` +
      `${mode === "exactly" ? "expected exactly" : "expected a subset of"} ${expected.length}): ` +
      `missing ids ${describeIds(missing)}; duplicated ids ${describeIds(duplicated)}; ` +
      `uncommitted or foreign ids ${describeIds(unexpected.sort((a, b) => a - b))}; ` +
      `changed records ${changed.length === 0 ? "none" : changed.join("; ")}`,
  });
}

/** Records with ids in `[from, to)` that subtask `subtask` of `parallelism` wrote. */
export function ofSubtask(from: number, to: number, subtask: number, parallelism: number) {
  return RECORDS.slice(from, to).filter((r) => r.id % parallelism === subtask);
}

/** A committer wrapper that, once armed, commits a round's first request and then dies. */
export class CommitCrasher {
  /** Whether the next commit round crashes after its first request. */
  armed = false;
  /** Crashes simulated so far. */
  crashes = 0;
  /** Wraps a committer (for `Run.start`). */
  readonly wrap: CommitterWrapper = (inner: Committer<unknown>) => ({
    commit: async (requests) => {
      if (!this.armed) return await inner.commit(requests);
      this.armed = false;
      this.crashes++;
      await inner.commit(requests.slice(0, 1));
      throw new SimulatedCrash(
        `simulated crash after committing 1 of ${requests.length} request(s)`,
      );
    },
    close: () => inner.close(),
  });
}

function causeChainHas(error: unknown, type: new (message: string) => Error): boolean {
  const seen = new Set<unknown>();
  let e: unknown = error;
  while (e instanceof Error && !seen.has(e)) {
    if (e instanceof type) return true;
    seen.add(e);
    e = (e as Error).cause;
  }
  return false;
}

/**
 * Awaits `work`, which the armed {@linkcode CommitCrasher} must end.
 * @throws {AssertionError} when it ends without the simulated crash; the
 *   error when it fails otherwise.
 */
export async function expectSimulatedCrash(work: Promise<unknown>, context: string): Promise<void> {
  try {
    await work;
  } catch (error) {
    if (causeChainHas(error, SimulatedCrash)) return;
    throw error;
  }
  throw new AssertionError({ message: `${context}: the armed committer did not run` });
}

/** One case's job: the source position, the checkpoints, the current incarnation. */
export class Run {
  readonly #fixture: ExactlyOnceSinkFixture;
  readonly #job: { readonly jobId: string; readonly uid: string };
  /** How many records the last `expect` saw committed (`finish` checks them before the last notification). */
  #lastVisible = 0;
  #attempt = 0;
  #nextCheckpoint = 1;
  /** The source position the records written so far end at. */
  offset = 0;
  /** The running incarnation, `undefined` after a crash. */
  current: Incarnation<ConformanceRecord> | undefined;

  /** A run of the case named `slug` (in its job id) against `fixture`. */
  constructor(fixture: ExactlyOnceSinkFixture, slug: string) {
    this.#fixture = fixture;
    this.#job = { jobId: `conformance-${slug}-${crypto.randomUUID().slice(0, 8)}`, uid: "sink" };
  }

  /**
   * The running incarnation.
   * @throws {Error} when none is running.
   */
  get incarnation(): Incarnation<ConformanceRecord> {
    if (this.current === undefined) throw new Error("No incarnation is running");
    return this.current;
  }

  /** Starts an incarnation, from `restore` if given; a failed start leaves none running. */
  async start(
    parallelism: number,
    restore?: TakenCheckpoint,
    wrapCommitter?: CommitterWrapper,
  ): Promise<void> {
    const sink = this.#fixture.createSink();
    const kind = (sink as { kind?: unknown }).kind;
    if (kind !== "v2" && kind !== "two-phase-commit") {
      throw new TypeError(
        `The exactly-once sink conformance suite needs a SinkV2 or TwoPhaseCommitSink: createSink() gave kind ${
          JSON.stringify(kind)
        }`,
      );
    }
    this.current = undefined;
    this.offset = restore?.offset ?? 0;
    this.current = await Incarnation.start(this.#job, this.#attempt++, {
      sink,
      parallelism,
      ...(restore === undefined ? {} : { restore }),
      ...(wrapCommitter === undefined ? {} : { wrapCommitter }),
    });
  }

  /** Replays/writes the source up to position `to`. */
  async writeUpTo(to: number): Promise<void> {
    await this.incarnation.write(RECORDS.slice(this.offset, to));
    this.offset = to;
  }

  /** Takes the next checkpoint (every subtask pre-commits). */
  async checkpoint(): Promise<TakenCheckpoint> {
    const id = this.#nextCheckpoint++;
    const incarnation = this.incarnation;
    const snapshots = await incarnation.snapshot(id);
    return { id, offset: this.offset, parallelism: incarnation.parallelism, snapshots };
  }

  /** Writes the source up to position `to`, then takes the next checkpoint (every subtask pre-commits). */
  async checkpointAt(to: number): Promise<TakenCheckpoint> {
    await this.writeUpTo(to);
    return await this.checkpoint();
  }

  /**
   * Writes up to `to`, takes the next checkpoint and delivers its completion
   * notification to `subtasks` (every subtask when omitted, in that order).
   */
  async completeAt(to: number, subtasks?: readonly number[]): Promise<TakenCheckpoint> {
    const checkpoint = await this.checkpointAt(to);
    await this.incarnation.notifyComplete(checkpoint.id, subtasks);
    return checkpoint;
  }

  /** Abandons the running incarnation (if any): its writers and committers are closed, nothing is committed. */
  async crash(): Promise<void> {
    const incarnation = this.current;
    this.current = undefined;
    await incarnation?.crash();
  }

  /** Writes up to `to` (records no checkpoint covers), then crashes. */
  async crashAt(to: number): Promise<void> {
    await this.writeUpTo(to);
    await this.crash();
  }

  /**
   * Starts a new incarnation at `parallelism` from `checkpoint` (a completed
   * one), then checks that exactly the records it covers (before its source
   * offset) are visible: the restore commits what it pre-committed.
   */
  async restore(checkpoint: TakenCheckpoint, parallelism: number, context: string): Promise<void> {
    await this.start(parallelism, checkpoint);
    await this.expect(checkpoint.offset, context);
  }

  /** Writes the rest, ends the input, takes and completes the final checkpoint, then checks everything is committed once. */
  async finish(context: string): Promise<void> {
    await this.writeUpTo(RECORDS.length);
    await this.incarnation.endInput();
    const last = await this.checkpoint();
    await checkCommitted(
      this.#fixture,
      RECORDS.slice(0, this.#lastVisible),
      `${context}: before the final checkpoint's notification`,
    );
    await this.incarnation.notifyComplete(last.id);
    await checkCommitted(this.#fixture, RECORDS, `${context}: after the end of input`);
    await this.crash();
  }

  /** Checks that exactly the records before position `to` are committed. */
  async expect(to: number, context: string): Promise<void> {
    await checkCommitted(this.#fixture, RECORDS.slice(0, to), context);
    this.#lastVisible = to;
  }

  /**
   * Checks that what is visible is a duplicate-free subset of `records`
   * (after a partial commit, or while some subtasks hold a checkpoint
   * undecided).
   */
  async expectSubset(records: readonly ConformanceRecord[], context: string): Promise<void> {
    await checkCommitted(this.#fixture, records, context, "subset");
  }
}
