import assert from "node:assert/strict";
import {
  connectNats,
  natsOptionsFromArgs,
  natsOptionsFromEnv,
  natsServerList,
} from "./nats_connect.ts";
import { startNatsServer, TEST_NATS_URL } from "../../tests/_nats_server.ts";
import { deadline } from "./async.ts";

Deno.test("natsOptionsFromEnv() reads every WEIR_NATS_ variable", () => {
  assert.deepEqual(
    natsOptionsFromEnv({
      WEIR_NATS_URL: "nats://a:4222,nats://b:4222",
      WEIR_NATS_USER: "u",
      WEIR_NATS_PASSWORD: "p",
      WEIR_NATS_TOKEN: "t",
      WEIR_NATS_TLS_CA: "ca.pem",
      WEIR_NATS_TLS_CERT: "cert.pem",
      WEIR_NATS_TLS_KEY: "key.pem",
      UNRELATED: "x",
    }),
    {
      servers: "nats://a:4222,nats://b:4222",
      user: "u",
      password: "p",
      token: "t",
      tls: { caFile: "ca.pem", certFile: "cert.pem", keyFile: "key.pem" },
    },
  );
});

Deno.test("natsOptionsFromEnv() gives nothing without WEIR_NATS_URL", () => {
  assert.equal(natsOptionsFromEnv({}), undefined);
  assert.equal(natsOptionsFromEnv({ WEIR_NATS_USER: "u", WEIR_NATS_TOKEN: "t" }), undefined);
  assert.equal(natsOptionsFromEnv({ WEIR_NATS_URL: "" }), undefined, "an empty URL is unset");
});

Deno.test("natsOptionsFromEnv() reads Deno.env", () => {
  const before = Deno.env.get("WEIR_NATS_URL");
  Deno.env.set("WEIR_NATS_URL", "nats://from-deno-env:4222");
  try {
    assert.deepEqual(natsOptionsFromEnv(Deno.env), { servers: "nats://from-deno-env:4222" });
  } finally {
    if (before === undefined) Deno.env.delete("WEIR_NATS_URL");
    else Deno.env.set("WEIR_NATS_URL", before);
  }
});

Deno.test("natsOptionsFromArgs() reads its flags anywhere in an argv", async (t) => {
  await t.step("the space form among other flags", () => {
    assert.deepEqual(
      natsOptionsFromArgs(
        [
          "input.csv",
          "--parallelism",
          "4",
          "--nats",
          "nats://n1:4222",
          "--nats-token",
          "tok",
          "--nats-tls-ca",
          "/etc/ca.pem",
          "--verbose",
        ],
        {},
      ),
      { servers: "nats://n1:4222", token: "tok", tls: { caFile: "/etc/ca.pem" } },
    );
  });
  await t.step("the = form, which may hold '=' in its value", () => {
    assert.deepEqual(
      natsOptionsFromArgs(
        [
          "--nats=nats://n1:4222",
          "--nats-user=u",
          "--nats-password=a=b",
          "--nats-tls-cert=c.pem",
          "--nats-tls-key=k.pem",
        ],
        {},
      ),
      {
        servers: "nats://n1:4222",
        user: "u",
        password: "a=b",
        tls: { certFile: "c.pem", keyFile: "k.pem" },
      },
    );
  });
  await t.step("flags with similar names are not taken for its flags", () => {
    assert.equal(
      natsOptionsFromArgs(["--nats-url", "x", "--natsy=y", "-nats", "z", "--nats-users=u"], {}),
      undefined,
    );
  });
  await t.step("the last of a repeated flag wins", () => {
    assert.deepEqual(natsOptionsFromArgs(["--nats", "nats://a:1", "--nats=nats://b:2"], {}), {
      servers: "nats://b:2",
    });
  });
  await t.step("nothing after --", () => {
    assert.equal(natsOptionsFromArgs(["--", "--nats", "nats://a:1"], {}), undefined);
  });
  await t.step("no URL anywhere gives nothing", () => {
    assert.equal(natsOptionsFromArgs([], {}), undefined);
    assert.equal(natsOptionsFromArgs(["--nats-user", "u"], { WEIR_NATS_USER: "v" }), undefined);
  });
});

Deno.test("natsOptionsFromArgs() takes what the flags leave unset from the environment", async (t) => {
  const env = {
    WEIR_NATS_URL: "nats://env:4222",
    WEIR_NATS_USER: "env-user",
    WEIR_NATS_PASSWORD: "env-password",
    WEIR_NATS_TLS_CA: "env-ca.pem",
  };
  await t.step("flags win, field by field", () => {
    assert.deepEqual(
      natsOptionsFromArgs(["--nats-user", "flag-user", "--nats=nats://flag:4222"], env),
      {
        servers: "nats://flag:4222",
        user: "flag-user",
        password: "env-password",
        tls: { caFile: "env-ca.pem" },
      },
    );
  });
  await t.step("the environment alone gives the URL", () => {
    assert.deepEqual(natsOptionsFromArgs(["--nats-tls-key", "k.pem"], env), {
      servers: "nats://env:4222",
      user: "env-user",
      password: "env-password",
      tls: { caFile: "env-ca.pem", keyFile: "k.pem" },
    });
  });
  await t.step("an empty flag value does not hide the environment's", () => {
    assert.equal(natsOptionsFromArgs(["--nats="], env)?.servers, "nats://env:4222");
  });
});

Deno.test("natsOptionsFromArgs() refuses one of its flags without a value", () => {
  assert.throws(
    () => natsOptionsFromArgs(["job.ts", "--nats"], {}),
    (e: unknown) =>
      e instanceof TypeError && /--nats needs a value.*it is the last argument/.test(e.message),
  );
  assert.throws(
    () => natsOptionsFromArgs(["--nats-user", "--nats", "nats://a:1"], {}),
    (e: unknown) =>
      e instanceof TypeError && /--nats-user needs a value.*followed by --nats/.test(e.message),
  );
});

Deno.test("natsServerList() splits comma-separated URLs and refuses none", () => {
  assert.deepEqual(natsServerList({ servers: " nats://a:1 , nats://b:2,," }), [
    "nats://a:1",
    "nats://b:2",
  ]);
  assert.throws(() => natsServerList({ servers: " , " }), /holds no URL: current value is " , "/);
});

Deno.test("connectNats() connects to the shared server", async () => {
  const nc = await connectNats({ servers: TEST_NATS_URL, name: "weir-connect-test" });
  try {
    assert.ok(nc.info !== undefined && nc.info.max_payload > 0, "no server info");
    const subject = `weirtest_${crypto.randomUUID().slice(0, 8)}.ping`;
    const sub = nc.subscribe(subject, { max: 1 });
    nc.publish(subject, new Uint8Array([1]));
    for await (const msg of sub) assert.deepEqual([...msg.data], [1]);
  } finally {
    await nc.close();
  }
});

Deno.test("connectNats() fails fast naming the servers when nothing listens", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  const start = performance.now();
  await assert.rejects(
    connectNats({ servers: `nats://127.0.0.1:${port}` }),
    (e: unknown) =>
      e instanceof Error &&
      e.message.startsWith(`Cannot connect to NATS at nats://127.0.0.1:${port}: `) &&
      e.cause instanceof Error,
  );
  const ms = performance.now() - start;
  assert.ok(ms < 5_000, `the first connect waited ${ms.toFixed(0)} ms instead of failing`);
});

Deno.test("connectNats() names an unreadable TLS file", async () => {
  await assert.rejects(
    connectNats({ servers: TEST_NATS_URL, tls: { caFile: "/nonexistent/weir-ca.pem" } }),
    (e: unknown) =>
      e instanceof Error &&
      e.message.startsWith(
        `Cannot connect to NATS at ${TEST_NATS_URL}: cannot read the TLS CA file /nonexistent/weir-ca.pem`,
      ),
  );
});

Deno.test("connectNats() passes user and password through", async (t) => {
  const server = await startNatsServer({ args: ["--user", "weir-user", "--pass", "s3cret"] });
  try {
    await t.step("with the right credentials it connects", async () => {
      const nc = await connectNats({ servers: server.url, user: "weir-user", password: "s3cret" });
      await nc.flush();
      await nc.close();
    });
    await t.step("without credentials it is refused, naming the server", async () => {
      await assert.rejects(
        connectNats({ servers: server.url }),
        (e: unknown) =>
          e instanceof Error &&
          e.message.startsWith(`Cannot connect to NATS at ${server.url}: `) &&
          /authoriz/i.test(e.message),
      );
    });
    await t.step("with a wrong password it is refused", async () => {
      await assert.rejects(
        connectNats({ servers: server.url, user: "weir-user", password: "wrong" }),
        /authoriz/i,
      );
    });
  } finally {
    await server.stop();
  }
});

Deno.test("connectNats() passes a token through", async () => {
  const server = await startNatsServer({ args: ["--auth", "weir-token"] });
  try {
    const nc = await connectNats({ servers: server.url, token: "weir-token" });
    await nc.flush();
    await nc.close();
    await assert.rejects(connectNats({ servers: server.url, token: "other" }), /authoriz/i);
  } finally {
    await server.stop();
  }
});

Deno.test("connectNats() keeps reconnecting past NATS's default 10 attempts, and logs it", async () => {
  const server = await startNatsServer();
  const lines: string[] = [];
  const original = console.error;
  console.error = (...args: unknown[]) => lines.push(args.map(String).join(" "));
  try {
    const nc = await connectNats({ servers: server.url, name: "weir-reconnect-test" });
    try {
      const events: string[] = [];
      let onEvent = () => {};
      (async () => {
        for await (const status of nc.status()) {
          events.push(status.type);
          onEvent();
        }
      })();
      const until = (what: string, done: () => boolean) =>
        deadline(
          new Promise<void>((resolve) => {
            onEvent = () => done() && resolve();
            onEvent();
          }),
          20_000,
          what,
        );
      await server.kill();
      await until(
        "13 reconnect attempts",
        () => events.filter((e) => e === "reconnecting").length > 12,
      );
      assert.equal(nc.isClosed(), false, "the client gave up reconnecting");
      await server.restart();
      await until("the reconnect", () => events.includes("reconnect"));
      await nc.flush();
      assert.equal(nc.isClosed(), false);
    } finally {
      await nc.close();
    }
  } finally {
    console.error = original;
    await server.stop();
  }
  const log = lines.join("\n");
  assert.match(log, /WARN nats connection weir-reconnect-test lost server 127\.0\.0\.1:\d+/, log);
  assert.match(log, /WARN nats connection weir-reconnect-test reconnected to server/, log);
});

Deno.test("connectNats() passes the TLS CA, certificate and key files through", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "weir-tls-" });
  try {
    await makeCertificates(dir);
    const server = await startNatsServer({
      args: [
        "--tlsverify",
        "--tlscert",
        `${dir}/server.pem`,
        "--tlskey",
        `${dir}/server.key`,
        "--tlscacert",
        `${dir}/ca.pem`,
      ],
    });
    try {
      await t.step("with the CA and a client certificate it connects", async () => {
        const nc = await connectNats({
          servers: server.url,
          tls: {
            caFile: `${dir}/ca.pem`,
            certFile: `${dir}/client.pem`,
            keyFile: `${dir}/client.key`,
          },
        });
        await nc.flush();
        await nc.close();
      });
      await t.step("without a client certificate the server refuses it", async () => {
        await assert.rejects(
          connectNats({
            servers: server.url,
            tls: { caFile: `${dir}/ca.pem` },
            connectTimeoutMs: 1_000, // the client sees the refusal only as a handshake timeout
          }),
          (e: unknown) =>
            e instanceof Error && e.message.startsWith(`Cannot connect to NATS at ${server.url}: `),
        );
      });
      await t.step("without the CA it does not trust the server", async () => {
        await assert.rejects(
          connectNats({
            servers: server.url,
            tls: { certFile: `${dir}/client.pem`, keyFile: `${dir}/client.key` },
          }),
          (e: unknown) =>
            e instanceof Error && e.message.startsWith(`Cannot connect to NATS at ${server.url}: `),
        );
      });
    } finally {
      await server.stop();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** A CA, and a server (127.0.0.1) and a client certificate it signed, made with openssl. */
async function makeCertificates(dir: string): Promise<void> {
  const openssl = async (...args: string[]) => {
    const out = await new Deno.Command("openssl", {
      args,
      cwd: dir,
      stdout: "null",
      stderr: "piped",
    })
      .output()
      .catch((error) => {
        if (!(error instanceof Deno.errors.NotFound)) throw error;
        throw new Error("This test makes certificates with openssl: apt-get install openssl", {
          cause: error,
        });
      });
    if (!out.success) {
      throw new Error(`openssl ${args.join(" ")} failed: ${new TextDecoder().decode(out.stderr)}`);
    }
  };
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  await openssl(
    "req",
    "-x509",
    ...ec,
    "-keyout",
    "ca.key",
    "-out",
    "ca.pem",
    "-days",
    "1",
    "-subj",
    "/CN=weir-test-ca",
  );
  await Deno.writeTextFile(`${dir}/server.ext`, "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
  await Deno.writeTextFile(`${dir}/client.ext`, "extendedKeyUsage=clientAuth\n");
  for (const who of ["server", "client"]) {
    await openssl(
      "req",
      ...ec,
      "-keyout",
      `${who}.key`,
      "-out",
      `${who}.csr`,
      "-subj",
      `/CN=weir-test-${who}`,
    );
    await openssl(
      "x509",
      "-req",
      "-in",
      `${who}.csr`,
      "-CA",
      "ca.pem",
      "-CAkey",
      "ca.key",
      "-CAcreateserial",
      "-out",
      `${who}.pem`,
      "-days",
      "1",
      "-extfile",
      `${who}.ext`,
    );
  }
}
