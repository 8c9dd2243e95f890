/**
 * The conformance suite's own tests: it must fail sinks that are not
 * exactly-once, naming the step and the record ids. Each broken sink wraps a
 * {@linkcode CollectingSink} and breaks one rule of the protocol.
 *
 * @module
 */

import assert from "node:assert/strict";
import { AssertionError } from "node:assert";
import type { Committer, SinkV2 } from "../../runtime/api/sink_v2.ts";
import { collectingFixture } from "./_collecting_fixture.ts";
import { CollectingSink, type CollectingTxn } from "./collecting_sink.ts";
import {
  type ConformanceRecord,
  exactlyOnceSinkConformanceCases,
  type ExactlyOnceSinkFixture,
} from "./exactly_once_sink_conformance.ts";

type Txn = CollectingTxn<ConformanceRecord>;

/** Runs the case titled like `title` and returns its assertion message. */
async function failureOf(
  title: RegExp,
  setup: () => Promise<ExactlyOnceSinkFixture>,
): Promise<string> {
  const found = exactlyOnceSinkConformanceCases().filter((c) => title.test(c.title));
  assert.equal(found.length, 1, `one case matches ${title}`);
  try {
    await found[0]!.run(setup);
  } catch (error) {
    assert.ok(error instanceof AssertionError, `an assertion fails: ${error}`);
    return error.message;
  }
  assert.fail(`the case '${found[0]!.title}' passed a broken sink`);
}

/** The CollectingSink's own SinkV2 hooks, with `overrides`. */
function collecting(
  inner: CollectingSink<ConformanceRecord>,
  overrides: Partial<SinkV2<ConformanceRecord, Txn, Txn>> = {},
): SinkV2<ConformanceRecord, Txn, Txn> {
  return {
    kind: "v2",
    deliveryGuarantee: "exactly-once",
    createWriter: (context) => inner.createWriter(context),
    createCommitter: () => inner.createCommitter(),
    checkCommittable: (raw) => inner.checkCommittable(raw),
    checkWriterState: (raw) => inner.checkWriterState(raw),
    ...overrides,
  };
}

Deno.test("the conformance suite passes the CollectingSink through a plain wrapper", async () => {
  for (const c of exactlyOnceSinkConformanceCases()) {
    await c.run(collectingFixture((inner) => collecting(inner)));
  }
});

Deno.test("the conformance suite fails a sink whose commit is not idempotent", async () => {
  const message = await failureOf(
    /after a crash during the commit$/,
    collectingFixture((inner) => {
      return collecting(inner, {
        createCommitter: (): Committer<Txn> => ({
          // Every commit is a new transaction: a replayed commit duplicates.
          commit: (requests) => {
            for (const r of requests) {
              inner.commit({ ...r.committable, id: `${r.committable.id}#${crypto.randomUUID()}` });
            }
          },
          close: () => {},
        }),
      });
    }),
  );
  assert.match(message, /after the restore from checkpoint 2: the committed output is wrong/);
  assert.match(message, /duplicated ids 0, 2, 4, 6, 8/);
});

Deno.test("the conformance suite fails a sink that shows records at pre-commit", async () => {
  const message = await failureOf(
    /over several checkpoints/,
    collectingFixture((inner) =>
      collecting(inner, {
        createWriter: async (context) => {
          const writer = await inner.createWriter(context);
          return {
            write: (v, c) => writer.write(v, c),
            flush: (end) => writer.flush(end),
            prepareCommit: async (n) => {
              const committables = await writer.prepareCommit!(n);
              for (const txn of committables) inner.commit(txn);
              return committables;
            },
            snapshotState: (n) => writer.snapshotState!(n),
            close: () => writer.close(),
          };
        },
      })
    ),
  );
  assert.match(message, /^after pre-commit of checkpoint 1, before its notification: /);
  assert.match(message, /uncommitted or foreign ids 0, 1, 2, 3, 4, 5, 6, 7, 8, 9;/);
});

Deno.test("the conformance suite fails a sink that does not commit restored committables", async () => {
  const message = await failureOf(
    /before the commit$/,
    collectingFixture((inner) =>
      collecting(inner, {
        createCommitter: (context): Committer<Txn> => {
          const committer = inner.createCommitter();
          const restored = context.restoredCheckpointId ?? 0;
          return {
            // Committables of the restored checkpoint are taken as committed without committing them.
            commit: (requests) =>
              committer.commit(requests.filter((r) => r.checkpointId > restored)),
            close: () => committer.close(),
          };
        },
      })
    ),
  );
  assert.match(message, /^after the restore from checkpoint 2 \(the restore commits it\): /);
  assert.match(message, /missing ids 10, 11, 12, 13, 14, 15, 16, 17, 18, 19;/);
});

Deno.test("the conformance suite fails a sink that commits what it should have aborted", async () => {
  const message = await failureOf(
    /after pre-commit, before the ack$/,
    collectingFixture((inner) =>
      collecting(inner, {
        createWriter: async (context) => {
          // The restored open transaction is committed instead of aborted.
          for (const txn of context.restoredState) inner.commit(txn);
          return await inner.createWriter({ ...context, restoredState: [] });
        },
      })
    ),
  );
  assert.match(
    message,
    /^after the restore from checkpoint 1 \(checkpoint 2's records stay invisible\): /,
  );
});
