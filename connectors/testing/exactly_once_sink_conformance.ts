/**
 * One conformance suite for every exactly-once sink (in the manner of Hono's
 * shared `common.case.test.ts` and Weir's storage and transport conformance
 * suites): it drives a sink through the real `SinkWriterOperator` and
 * crashes at each step of the two-phase protocol, then checks the committed
 * output record by record: nothing lost, nothing duplicated, nothing
 * uncommitted visible.
 *
 * A sink author writes `<dir>/<sink>_conformance_test.ts`:
 *
 * ```ts ignore
 * import { exactlyOnceSinkConformanceSuite } from "../testing/exactly_once_sink_conformance.ts";
 *
 * exactlyOnceSinkConformanceSuite("MySink", async () => {
 *   const table = await createUniqueTable();
 *   return {
 *     createSink: () => new MySink({ table, deliveryGuarantee: "exactly-once" }),
 *     readCommitted: () => readRows(table),
 *     cleanup: () => dropTable(table),
 *   };
 * });
 * ```
 *
 * ## How a case runs
 *
 * A miniature job (`_sink_job.ts`, driven by `_conformance_run.ts`): a replayable source of
 * {@linkcode ConformanceRecord}s (ids 0..39, record `id` on subtask
 * `id % parallelism`), one sink vertex of real `SinkWriterOperator`s, and a
 * coordinator that takes checkpoints (each subtask's snapshot through the
 * MessagePack codec), decides which complete, and delivers, drops or
 * reorders their notifications. A crash abandons the incarnation: its
 * writers and committers are closed, as a process end releases connections
 * (never a commit, never a prepare). A restore starts a new incarnation with
 * a fresh `createSink()`, the next attempt number and the same job id, from
 * a checkpoint (redistributed by the real operator-state repartitioner when
 * the parallelism changes), and replays the source from that checkpoint's
 * offset. Checkpoint ids keep growing across incarnations.
 *
 * ## Cases (each a `Deno.test` named `"<name> …"`)
 *
 * 1. happy path over several checkpoints (one aborted) and end of input;
 * 2. crash before pre-commit;
 * 3. crash after pre-commit, before the ack (the checkpoint never completes;
 *    restore from the previous one);
 * 4. crash after the ack, before the commit (the checkpoint completed, its
 *    notification never arrived; the restore commits it);
 * 5. crash during the commit (the committer commits the first request of a
 *    round, then the process dies);
 * 6. crash during the commit at restore, then restore again;
 * 7. completion notifications reordered and dropped;
 * 8. the same checkpoint restored twice;
 * 9. rescale 2 → 1 and 1 → 3 with committables pending;
 * 10. a crash after two checkpoints that never complete (the first aborted,
 *     the second pre-committed), restored from the last completed one: a
 *     sink that commits an earlier transaction at a later barrier (taking
 *     barrier n + 1 as proof that n completed) commits the aborted one's
 *     records, which the restore replays (case added by the breaker);
 * 11. a chain of rescales 2 → 1 → 2 → 3 → 1 → 4, each restoring a completed
 *     checkpoint whose notification never arrived: transaction ids, part
 *     file names or counters that a new subtask without writer state of its
 *     own starts again from 0 would collide with committed ones (case added
 *     by the breaker).
 *
 * After a partial commit (cases 5 and 6) the suite only checks that what is
 * visible is a duplicate-free subset of what was pre-committed: a sink may
 * split a checkpoint into several committables. While some subtasks have
 * committed a checkpoint and others still hold it undecided (case 7), it
 * checks that what is visible is a duplicate-free subset of what was
 * committed: a read-committed reader may stop at the first undecided
 * transaction (Kafka's last stable offset; the JetStream reader does).
 * Everywhere else the check is exact.
 *
 * @module
 */

import {
  CommitCrasher,
  type ExactlyOnceSinkFixture,
  expectSimulatedCrash,
  ofSubtask,
  RECORDS,
  Run,
} from "./_conformance_run.ts";

export {
  CONFORMANCE_RECORD_COUNT,
  type ConformanceRecord,
  conformanceRecord,
  type ExactlyOnceSink,
  type ExactlyOnceSinkFixture,
} from "./_conformance_run.ts";

/** One case of the suite: its title (after the sink's name) and how to run it. */
export interface ConformanceCase {
  /** The case's title, e.g. `"loses nothing on a crash before pre-commit"`. */
  readonly title: string;
  /**
   * Runs the case against a fresh fixture from `setup`, then closes what is
   * still open and calls the fixture's `cleanup`, passed or failed.
   * @throws {AssertionError} naming the step and the missing, duplicated,
   *   uncommitted or changed record ids when the sink is not exactly-once.
   */
  run(setup: () => Promise<ExactlyOnceSinkFixture>): Promise<void>;
}

/**
 * Registers the conformance cases as `Deno.test("<name> …")` (see the module
 * docs). `setup` makes a fresh fixture per case; its `cleanup` runs after
 * the case, passed or failed.
 *
 * @param name the sink's name, prefixed to every case name.
 * @param setup creates the case's fixture (a unique target).
 */
export function exactlyOnceSinkConformanceSuite(
  name: string,
  setup: () => Promise<ExactlyOnceSinkFixture>,
): void {
  for (const c of exactlyOnceSinkConformanceCases()) {
    Deno.test(`${name} ${c.title}`, () => c.run(setup));
  }
}

/** The suite's cases, to run by hand (the suite's own tests run them against broken sinks). */
export function exactlyOnceSinkConformanceCases(): readonly ConformanceCase[] {
  const cases: [string, string, (run: Run) => Promise<void>][] = [
    [
      "commits every record once over several checkpoints, an aborted one and the end of input",
      "happy",
      async (run) => {
        await run.start(2);
        const cp1 = await run.checkpointAt(10);
        await run.expect(0, "after pre-commit of checkpoint 1, before its notification");
        await run.incarnation.notifyComplete(cp1.id);
        await run.expect(10, "after checkpoint 1 completed");
        const cp2 = await run.checkpointAt(18);
        await run.writeUpTo(22);
        await run.incarnation.notifyAborted(cp2.id);
        await run.expect(10, "after checkpoint 2 was aborted");
        const cp3 = await run.checkpoint();
        await run.writeUpTo(25);
        await run.incarnation.notifyComplete(cp3.id);
        await run.expect(
          22,
          "after checkpoint 3 completed (it commits aborted checkpoint 2's too)",
        );
        await run.finish("happy path");
      },
    ],
    [
      "loses nothing on a crash before pre-commit",
      "before-precommit",
      async (run) => {
        await run.start(2);
        const cp1 = await run.completeAt(10);
        await run.crashAt(18);
        await run.expect(10, "after a crash with records written since checkpoint 1");
        await run.restore(cp1, 2, "after the restore from checkpoint 1");
        await run.finish("crash before pre-commit");
      },
    ],
    [
      "neither loses nor shows records on a crash after pre-commit, before the ack",
      "before-ack",
      async (run) => {
        await run.start(2);
        const cp1 = await run.completeAt(10);
        await run.checkpointAt(20); // pre-committed, never completes
        await run.crashAt(25);
        await run.expect(10, "after a crash with checkpoint 2 pre-committed and never completed");
        await run.restore(
          cp1,
          2,
          "after the restore from checkpoint 1 (checkpoint 2's records stay invisible)",
        );
        await run.finish("crash after pre-commit, before the ack");
      },
    ],
    [
      "commits at restore what a completed checkpoint pre-committed when the crash came before the commit",
      "before-commit",
      async (run) => {
        await run.start(2);
        await run.completeAt(10);
        const cp2 = await run.checkpointAt(20); // completes; its notification never arrives
        await run.crashAt(26);
        await run.expect(10, "after a crash before checkpoint 2's commit");
        await run.restore(cp2, 2, "after the restore from checkpoint 2 (the restore commits it)");
        await run.finish("crash after the ack, before the commit");
      },
    ],
    [
      "commits everything once after a crash during the commit",
      "during-commit",
      async (run) => {
        const crasher = new CommitCrasher();
        await run.start(2, undefined, crasher.wrap);
        await run.checkpointAt(10); // completes; its notification is dropped
        const cp2 = await run.checkpointAt(20);
        await run.writeUpTo(23);
        crasher.armed = true;
        await expectSimulatedCrash(
          run.incarnation.notifyComplete(cp2.id, [0]),
          "notification of checkpoint 2 on subtask 0",
        );
        await run.crash();
        await run.expectSubset(
          RECORDS.slice(0, 20),
          "after a crash inside the commit of checkpoints 1 and 2",
        );
        await run.restore(cp2, 2, "after the restore from checkpoint 2");
        await run.finish("crash during the commit");
      },
    ],
    [
      "commits everything once after a crash during the commit at restore",
      "during-restore-commit",
      async (run) => {
        await run.start(2);
        await run.checkpointAt(10); // completes; its notification is dropped
        const cp2 = await run.checkpointAt(20); // completes; its notification never arrives
        await run.crashAt(24);
        await run.expect(0, "after a crash before any commit");
        const crasher = new CommitCrasher();
        crasher.armed = true;
        await expectSimulatedCrash(
          run.start(2, cp2, crasher.wrap),
          "the restore from checkpoint 2",
        );
        await run.expectSubset(RECORDS.slice(0, 20), "after a crash inside the commit at restore");
        await run.restore(cp2, 2, "after restoring checkpoint 2 again");
        await run.finish("crash during the commit at restore");
      },
    ],
    [
      "commits once whatever order completion notifications come in, and despite dropped ones",
      "notifications",
      async (run) => {
        await run.start(2);
        const cp1 = await run.checkpointAt(8);
        const cp2 = await run.checkpointAt(16);
        const cp3 = await run.checkpointAt(24);
        await run.writeUpTo(27);
        await run.incarnation.notifyComplete(cp3.id, [0]);
        await run.expectSubset(
          ofSubtask(0, 24, 0, 2),
          "after checkpoint 3's notification on subtask 0 only",
        );
        await run.incarnation.notifyComplete(cp1.id, [0]);
        await run.incarnation.notifyComplete(cp2.id, [0]);
        await run.expectSubset(
          ofSubtask(0, 24, 0, 2),
          "after late notifications of checkpoints 1 and 2 on subtask 0",
        );
        await run.incarnation.notifyComplete(cp2.id, [1]); // subtask 1 never hears of 1 and 3
        await run.expectSubset(
          [...ofSubtask(0, 24, 0, 2), ...ofSubtask(0, 16, 1, 2)],
          "after checkpoint 2's notification on subtask 1 (1 and 3 dropped there)",
        );
        await run.completeAt(32, [1, 0]);
        await run.expect(32, "after checkpoint 4 completed on both subtasks");
        await run.finish("notifications reordered and dropped");
      },
    ],
    [
      "commits once when the same checkpoint is restored twice",
      "restore-twice",
      async (run) => {
        await run.start(2);
        await run.completeAt(10);
        const cp2 = await run.checkpointAt(20); // completes; its notification never arrives
        await run.crashAt(25);
        await run.restore(cp2, 2, "after the first restore from checkpoint 2");
        await run.checkpointAt(30); // pre-committed, never completes
        await run.crashAt(33);
        await run.expect(20, "after a crash in the first restored incarnation");
        await run.restore(cp2, 2, "after the second restore from checkpoint 2");
        await run.finish("the same checkpoint restored twice");
      },
    ],
    [
      // Added by the breaker: the only case where a sink committing checkpoint
      // n's transaction at barrier n + 1 commits records of a checkpoint that
      // never completed (the others catch it only when a completed
      // checkpoint's records show before its notification).
      "neither loses nor shows records on a crash after an aborted checkpoint and a later one that never completes",
      "aborted-then-uncompleted",
      async (run) => {
        await run.start(2);
        const cp1 = await run.completeAt(10);
        const cp2 = await run.checkpointAt(16);
        await run.incarnation.notifyAborted(cp2.id);
        await run.checkpointAt(22); // pre-committed, never completes
        await run.crashAt(25);
        await run.expect(
          10,
          "after a crash with checkpoint 2 aborted and checkpoint 3 never completed",
        );
        await run.restore(
          cp1,
          2,
          "after the restore from checkpoint 1 (checkpoints 2 and 3 stay invisible)",
        );
        await run.finish("crash after an aborted and an uncompleted checkpoint");
      },
    ],
    [
      "commits once across a rescale from 2 subtasks to 1",
      "rescale-2-1",
      async (run) => {
        await run.start(2);
        await run.completeAt(10);
        const cp2 = await run.checkpointAt(20); // completes; its notification never arrives
        await run.crashAt(23);
        await run.restore(cp2, 1, "after restoring checkpoint 2 at parallelism 1");
        await run.completeAt(30);
        await run.expect(30, "after a checkpoint at parallelism 1");
        await run.finish("rescale 2 -> 1");
      },
    ],
    [
      "commits once across a rescale from 1 subtask to 3",
      "rescale-1-3",
      async (run) => {
        await run.start(1);
        await run.checkpointAt(10); // completes; its notification is dropped
        const cp2 = await run.checkpointAt(20); // completes; its notification never arrives
        await run.crashAt(22);
        await run.expect(0, "after a crash before any commit");
        await run.restore(cp2, 3, "after restoring checkpoint 2 at parallelism 3");
        await run.completeAt(31, [2, 0, 1]);
        await run.expect(31, "after a checkpoint at parallelism 3");
        await run.finish("rescale 1 -> 3");
      },
    ],
    [
      // Added by the breaker: one rescale per case leaves counters restarted
      // at a subtask that had none before unexercised against earlier ones.
      "commits once across a chain of rescales 2 → 1 → 2 → 3 → 1 → 4",
      "rescale-chain",
      async (run) => {
        await run.start(2);
        let to = 4;
        await run.completeAt(to);
        for (const parallelism of [1, 2, 3, 1, 4]) {
          const restored = await run.checkpointAt(to += 3); // completes; its notification never arrives
          await run.crashAt(to + 1);
          await run.restore(
            restored,
            parallelism,
            `after restoring checkpoint ${restored.id} at parallelism ${parallelism}`,
          );
          const next = await run.completeAt(to += 3);
          await run.expect(to, `after checkpoint ${next.id} at parallelism ${parallelism}`);
        }
        await run.finish("a chain of rescales");
      },
    ],
  ];
  return cases.map(([title, slug, body]) => ({
    title,
    run: async (setup: () => Promise<ExactlyOnceSinkFixture>) => {
      const fixture = await setup();
      const run = new Run(fixture, slug);
      let failure: { error: unknown } | undefined;
      try {
        await body(run);
      } catch (error) {
        failure = { error };
      }
      try {
        await run.crash();
      } catch (error) {
        // After a passed case a close failure is the failure; after a failed one it is reported beside it.
        if (failure === undefined) failure = { error };
        else console.error(`${title}: closing the sink after the failed case also failed:`, error);
      }
      await fixture.cleanup();
      if (failure !== undefined) throw failure.error;
    },
  }));
}
