import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { probeNats } from "./_with_nats.ts";
import { startNatsServer, TEST_NATS_URL } from "./_nats_server.ts";

const SCRIPT = fileURLToPath(new URL("./_with_nats.ts", import.meta.url));
const PROBE_MODULE = new URL("./_with_nats.ts", import.meta.url).href;

/** A port that was free a moment ago. */
function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

Deno.test("probeNats() tells a NATS server with JetStream, one without, and nothing", async (t) => {
  await t.step("the shared server has JetStream", async () => {
    const probe = await probeNats(TEST_NATS_URL);
    assert.equal(probe.kind, "nats", JSON.stringify(probe));
    assert.equal(probe.kind === "nats" && probe.jetstream, true);
  });
  await t.step("a server started without -js has none", async () => {
    const server = await startNatsServer();
    try {
      assert.deepEqual(
        { ...await probeNats(server.url), version: "" },
        { kind: "nats", jetstream: false, version: "" },
      );
    } finally {
      await server.stop();
    }
  });
  await t.step("a free port has nothing", async () => {
    const probe = await probeNats(`nats://127.0.0.1:${freePort()}`);
    assert.equal(probe.kind, "nothing", JSON.stringify(probe));
  });
  await t.step("an HTTP server is not NATS", async () => {
    const server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      () => new Response("hello"),
    );
    try {
      // An HTTP server says nothing until asked: no INFO line within the probe's 2 s.
      const probe = await probeNats(`nats://127.0.0.1:${server.addr.port}`);
      assert.equal(probe.kind, "not-nats", JSON.stringify(probe));
    } finally {
      await server.shutdown();
    }
  });
});

Deno.test({
  name: "_with_nats.ts starts a NATS server where none answers, runs the tests on it, stops it",
  sanitizeResources: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "weir-with-nats-" });
    try {
      // A test file for the inner `deno test`: it passes when the URL it is given answers.
      await Deno.writeTextFile(
        `${dir}/inner_test.ts`,
        `import { probeNats } from ${JSON.stringify(PROBE_MODULE)};\n` +
          `Deno.test("the URL answers", async () => {\n` +
          `  const probe = await probeNats(Deno.env.get("WEIR_TEST_NATS_URL")!);\n` +
          `  if (probe.kind !== "nats" || !probe.jetstream) throw new Error(JSON.stringify(probe));\n` +
          `  if (Deno.env.get("INNER_FAIL") === "1") throw new Error("asked to fail");\n` +
          `});\n`,
      );
      const url = `nats://127.0.0.1:${freePort()}`;
      const run = async (fail: boolean) => {
        const output = await new Deno.Command(Deno.execPath(), {
          args: ["run", "-A", SCRIPT, "-A", "--no-lock", `${dir}/inner_test.ts`],
          env: { WEIR_TEST_NATS_URL: url, INNER_FAIL: fail ? "1" : "0", NO_COLOR: "1" },
          stdout: "piped",
          stderr: "piped",
        }).output();
        const text = new TextDecoder().decode(output.stdout) +
          new TextDecoder().decode(output.stderr);
        return { code: output.code, text };
      };

      const passing = await run(false);
      assert.equal(passing.code, 0, passing.text);
      assert.match(
        passing.text,
        new RegExp(`no NATS server answered at ${url}; started nats-server`),
      );
      assert.match(passing.text, /1 passed/);
      assert.equal((await probeNats(url)).kind, "nothing", "the server was not stopped");

      const failing = await run(true);
      assert.equal(failing.code, 1, `the inner test's failure was not passed on:\n${failing.text}`);
      assert.match(failing.text, /asked to fail/);
      assert.equal((await probeNats(url)).kind, "nothing", "the server was not stopped");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
