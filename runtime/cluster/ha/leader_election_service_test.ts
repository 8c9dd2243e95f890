import assert from "node:assert/strict";
import { connect, kvApi, type NatsConnection } from "../../actor/nats_deps.ts";
import { LeaderElection, type LeaseValue } from "./leader_election.ts";
import { LeaderElectionService } from "./leader_election_service.ts";

const NATS = Deno.env.get("WEIR_TEST_NATS_URL") ?? "nats://127.0.0.1:4222";
const LEASE_MS = 600;

interface Candidate {
  readonly id: string;
  readonly nc: NatsConnection;
  readonly service: LeaderElectionService;
  readonly events: string[];
  epoch: number | undefined;
}

async function candidate(id: string, bucket: string): Promise<Candidate> {
  const nc = await connect({ servers: NATS });
  const c: Candidate = {
    id,
    nc,
    events: [],
    epoch: undefined,
    service: undefined as unknown as LeaderElectionService,
  };
  (c as { service: LeaderElectionService }).service = new LeaderElectionService({
    connection: nc,
    bucket,
    election: new LeaderElection({ candidateId: id, leaseMs: LEASE_MS }),
    renewIntervalMs: LEASE_MS / 4,
    contender: {
      granted: (epoch) => {
        c.epoch = epoch;
        c.events.push(`granted ${epoch}`);
      },
      revoked: (reason) => {
        c.epoch = undefined;
        c.events.push(`revoked ${reason}`);
      },
      standby: (leader: LeaseValue) => c.events.push(`standby ${leader.holder}@${leader.epoch}`),
    },
  });
  return c;
}

async function until(what: string, check: () => boolean, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

Deno.test({
  name: "LeaderElectionService: one of two candidates leads, the other takes over when it is gone",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const bucket = `weir-test-ha-${crypto.randomUUID().slice(0, 8)}`;
    const a = await candidate("a", bucket);
    const b = await candidate("b", bucket);
    const c = await candidate("c", bucket);
    try {
      await a.service.start();
      await b.service.start();
      await t.step("the first leads with epoch 1, the second stands by", () => {
        assert.deepEqual(a.events, ["granted 1"]);
        assert.deepEqual(b.events, ["standby a@1"]);
      });
      await t.step("the standby does not take over while the leader renews", async () => {
        await new Promise((r) => setTimeout(r, LEASE_MS * 3));
        assert.deepEqual(b.events, ["standby a@1"]);
        assert.equal(a.epoch, 1);
      });
      await t.step(
        "a leader that cannot renew steps down; the standby takes over with epoch 2",
        async () => {
          await a.nc.close(); // a crash, as far as the lease can tell
          await until("b leads", () => b.epoch !== undefined);
          assert.equal(b.epoch, 2);
          await until("a stepped down", () => a.events.length === 2);
          assert.match(a.events[1]!, /^revoked no renewal/);
        },
      );
      await t.step(
        "a leader that stops releases the lease: a new candidate leads at once",
        async () => {
          await c.service.start();
          assert.deepEqual(c.events, ["standby b@2"]);
          const stoppedAt = Date.now();
          await b.service.stop();
          assert.match(b.events.at(-1)!, /^revoked the coordinator stopped/);
          await until("c leads", () => c.epoch !== undefined);
          assert.equal(c.epoch, 3);
          // Released, not expired: c took over within a few rounds, well before a lease.
          console.log(`released lease taken over after ${Date.now() - stoppedAt} ms`);
        },
      );
    } finally {
      await c.service.stop();
      await b.service.stop();
      await a.service.stop().catch(() => {});
      await (await new kvApi.Kvm(c.nc).open(bucket)).destroy().catch(() => {});
      for (const x of [a, b, c]) await x.nc.close().catch(() => {});
    }
  },
});
