import assert from "node:assert/strict";
import { checkRestPort, LeaderRestEndpoint } from "./leader_rest_endpoint.ts";
import type { RestBackend } from "./job_facts.ts";

const backend: RestBackend = {
  overview: () => ({ jobs: [], workers: [] }),
  jobFacts: () => undefined,
  cancelJob: (jobId) => ({ ok: false, error: `no job ${jobId}` }),
  savepoint: (order) => Promise.reject(new Error(`no job ${order.jobId}`)),
};

Deno.test("LeaderRestEndpoint serves only between leading() and notLeading()", async () => {
  const coordinator: { ready?: RestBackend } = {};
  const ports: number[] = [];
  const rest = new LeaderRestEndpoint({
    port: 0,
    hostname: "127.0.0.1",
    backend: () => coordinator.ready,
    onListen: (p) => ports.push(p),
  });
  assert.equal(rest.port, undefined);
  rest.leading();
  const port = rest.port!;
  assert.deepEqual(ports, [port]);
  // Leading, but the coordinator is still taking over: 503.
  const notReady = await fetch(`http://127.0.0.1:${port}/jobs`);
  assert.equal(notReady.status, 503);
  assert.equal(notReady.headers.get("retry-after"), "1");
  assert.match((await notReady.json()).errors[0], /taking over the leadership/);
  coordinator.ready = backend;
  const res = await fetch(`http://127.0.0.1:${port}/jobs`);
  assert.deepEqual(await res.json(), { jobs: [] });
  await rest.notLeading();
  assert.equal(rest.port, undefined);
  await assert.rejects(fetch(`http://127.0.0.1:${port}/jobs`));
});

Deno.test("an explicit REST port that is taken fails checkRestPort, and leading() serves nothing", async () => {
  const taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  try {
    const port = (taken.addr as Deno.NetAddr).port;
    assert.throws(
      () => checkRestPort(port, "127.0.0.1"),
      new RegExp(`cannot serve the REST API on 127\\.0\\.0\\.1:${port}: AddrInUse`),
    );
    const rest = new LeaderRestEndpoint({ port, hostname: "127.0.0.1", backend: () => backend });
    rest.leading(); // logged as an error, not thrown: the process keeps coordinating
    assert.equal(rest.port, undefined);
    await rest.notLeading();
  } finally {
    taken.close();
  }
  checkRestPort(0);
});

Deno.test("LeaderRestEndpoint refuses a port out of range and an empty token", () => {
  assert.throws(
    () => new LeaderRestEndpoint({ port: 70000, backend: () => backend }),
    /integer from 0 to 65535: current value is 70000/,
  );
  assert.throws(
    () => new LeaderRestEndpoint({ token: "", backend: () => backend }),
    /must not be empty/,
  );
});
