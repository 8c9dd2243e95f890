import assert from "node:assert/strict";
import { type ElectionAction, LeaderElection, type LeaseValue } from "./leader_election.ts";

const LEASE = 3000;

function candidate(id: string): LeaderElection {
  return new LeaderElection({ candidateId: id, leaseMs: LEASE });
}

/** Applies a write action as the KV would accept it, at revision `revision`. */
function win(e: LeaderElection, action: ElectionAction, revision: number, now: number) {
  assert.ok(action.kind === "create" || action.kind === "take-over" || action.kind === "renew");
  return e.written(revision, action.value, now);
}

const lease = (epoch: number, holder: string, released = false): LeaseValue => ({
  epoch,
  holder,
  description: holder,
  released,
});

Deno.test("LeaderElection creates the lease with epoch 1 when the key does not exist", () => {
  const e = candidate("a");
  e.observe(undefined, 0);
  const action = e.next(0);
  assert.equal(action.kind, "create");
  assert.deepEqual(win(e, action, 1, 0), { kind: "granted", epoch: 1 });
  assert.equal(e.isLeader, true);
  assert.equal(e.epoch, 1);
});

Deno.test("LeaderElection waits before it read the key", () => {
  assert.deepEqual(candidate("a").next(0), { kind: "wait", leader: undefined, expiresInMs: 0 });
});

Deno.test("LeaderElection: a standby waits while the lease is renewed, on its own clock", async (t) => {
  const b = candidate("b");
  b.observe({ revision: 5, value: lease(1, "a") }, 1_000_000);
  await t.step("waits until leaseMs after it first saw the revision", () => {
    const action = b.next(1_000_000 + LEASE - 1);
    assert.equal(action.kind, "wait");
    if (action.kind === "wait") {
      assert.equal(action.leader?.holder, "a");
      assert.equal(action.expiresInMs, 1);
    }
  });
  await t.step("seeing the same revision again does not restart the clock", () => {
    b.observe({ revision: 5, value: lease(1, "a") }, 1_000_000 + 2000);
    assert.equal(b.next(1_000_000 + LEASE).kind, "take-over");
  });
  await t.step("a new revision restarts the clock", () => {
    b.observe({ revision: 6, value: lease(1, "a") }, 1_000_000 + 2500);
    assert.equal(b.next(1_000_000 + LEASE).kind, "wait");
    assert.equal(b.next(1_000_000 + 2500 + LEASE - 1).kind, "wait");
  });
});

Deno.test("LeaderElection: a standby takes over an expired lease at its revision with the next epoch", () => {
  const b = candidate("b");
  b.observe({ revision: 9, value: lease(4, "a") }, 0);
  const action = b.next(LEASE);
  assert.deepEqual(action, {
    kind: "take-over",
    expectedRevision: 9,
    value: lease(5, "b"),
  });
  assert.deepEqual(win(b, action, 10, LEASE), { kind: "granted", epoch: 5 });
});

Deno.test("LeaderElection: a released lease is taken over at once", () => {
  const b = candidate("b");
  b.observe({ revision: 3, value: lease(2, "a", true) }, 0);
  const action = b.next(1);
  assert.equal(action.kind, "take-over");
  if (action.kind === "take-over") assert.equal(action.value.epoch, 3);
});

Deno.test("LeaderElection: of two standbys at the same revision only the compare-and-set winner leads", () => {
  const b = candidate("b");
  const c = candidate("c");
  const seen = { revision: 7, value: lease(1, "a") };
  b.observe(seen, 0);
  c.observe(seen, 0);
  const fromB = b.next(LEASE);
  const fromC = c.next(LEASE);
  assert.equal(fromB.kind, "take-over");
  assert.equal(fromC.kind, "take-over");
  // The KV accepts the first update at revision 7 and refuses the second.
  assert.deepEqual(win(b, fromB, 8, LEASE), { kind: "granted", epoch: 2 });
  assert.deepEqual(c.conflict(), { kind: "none" });
  assert.equal(c.isLeader, false);
  c.observe({ revision: 8, value: lease(2, "b") }, LEASE + 10);
  assert.equal(c.next(LEASE + 20).kind, "wait");
});

Deno.test("LeaderElection: a leader renews at its own revision and keeps its epoch", () => {
  const a = candidate("a");
  a.observe(undefined, 0);
  win(a, a.next(0), 1, 0);
  const renew = a.next(750);
  assert.deepEqual(renew, { kind: "renew", expectedRevision: 1, value: lease(1, "a") });
  assert.deepEqual(win(a, renew, 2, 750), { kind: "renewed" });
  assert.deepEqual(a.next(1500), { kind: "renew", expectedRevision: 2, value: lease(1, "a") });
});

Deno.test("LeaderElection: a leader steps down leaseMs after it sent its last successful write", () => {
  const a = candidate("a");
  a.observe(undefined, 0);
  win(a, a.next(0), 1, 100);
  // Renewals fail (NATS unreachable): nothing is written.
  assert.equal(a.next(100 + LEASE - 1).kind, "renew");
  const action = a.next(100 + LEASE);
  assert.equal(action.kind, "step-down");
  if (action.kind === "step-down") assert.match(action.reason, /no renewal .* for 3000 ms/);
  a.stepDown();
  assert.equal(a.isLeader, false);
  assert.equal(a.epoch, undefined);
});

Deno.test("LeaderElection: the old leader's deadline passes before a standby may take over", () => {
  const a = candidate("a");
  const b = candidate("b");
  a.observe(undefined, 0);
  win(a, a.next(0), 1, 0); // sent at 0
  b.observe({ revision: 1, value: lease(1, "a") }, 40); // read after it was written
  assert.equal(a.next(LEASE).kind, "step-down");
  assert.equal(b.next(LEASE).kind, "wait");
  assert.equal(b.next(LEASE + 40).kind, "take-over");
});

Deno.test("LeaderElection: a renewal that loses its compare-and-set revokes the leader", () => {
  const a = candidate("a");
  a.observe(undefined, 0);
  win(a, a.next(0), 1, 0);
  const outcome = a.conflict();
  assert.equal(outcome.kind, "revoked");
  assert.equal(a.isLeader, false);
});

Deno.test("LeaderElection: a released write leaves the candidate without the lead", () => {
  const a = candidate("a");
  a.observe(undefined, 0);
  win(a, a.next(0), 1, 0);
  assert.deepEqual(a.written(2, lease(1, "a", true), 10), { kind: "renewed" });
  assert.equal(a.isLeader, false);
  // Its own released lease may be taken again, with a new epoch.
  const again = a.next(20);
  assert.equal(again.kind, "take-over");
  if (again.kind === "take-over") assert.equal(again.value.epoch, 2);
});

Deno.test("LeaderElection refuses a lease that is not a positive integer", () => {
  assert.throws(
    () => new LeaderElection({ candidateId: "a", leaseMs: 0 }),
    /leaseMs must be a positive integer: current value is 0/,
  );
  assert.throws(() => new LeaderElection({ candidateId: "", leaseMs: 10 }), /candidateId/);
});
