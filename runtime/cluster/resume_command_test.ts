import assert from "node:assert/strict";
import { displayModule, natsFlags, resumeCommand, shellQuote } from "./resume_command.ts";

Deno.test("shellQuote() leaves plain words and single-quotes the rest, escaping quotes", () => {
  assert.equal(shellQuote("nats://127.0.0.1:4222"), "nats://127.0.0.1:4222");
  assert.equal(shellQuote("--max=5"), "--max=5");
  assert.equal(shellQuote("my file.csv"), "'my file.csv'");
  assert.equal(shellQuote("it's"), `'it'\\''s'`);
  assert.equal(shellQuote(""), "''");
  assert.equal(shellQuote("$HOME"), "'$HOME'");
});

Deno.test("displayModule() shows a file URL below cwd relative to it, else absolute; other URLs as given", () => {
  assert.equal(displayModule("file:///work/repo/jobs/count.ts", "/work/repo"), "jobs/count.ts");
  assert.equal(displayModule("file:///elsewhere/count.ts", "/work/repo"), "/elsewhere/count.ts");
  assert.equal(
    displayModule("http://10.0.0.5:8000/count.ts", "/work/repo"),
    "http://10.0.0.5:8000/count.ts",
  );
});

Deno.test("natsFlags() prints user and TLS files, never the password or token", () => {
  assert.deepEqual(
    natsFlags({
      servers: "nats://a:4222,nats://b:4222",
      user: "weir",
      password: "secret",
      token: "t0k3n",
      tls: { caFile: "/etc/ca.pem" },
    }),
    [
      "--nats",
      "nats://a:4222,nats://b:4222",
      "--nats-user",
      "weir",
      "--nats-password",
      "<password>",
      "--nats-token",
      "<token>",
      "--nats-tls-ca",
      "/etc/ca.pem",
    ],
  );
});

Deno.test("resumeCommand() gives cluster jobs by id and NATS flags, local jobs with module, -p and arguments", () => {
  assert.equal(
    resumeCommand({
      jobId: "count-1a2b3c4d",
      nats: { servers: "nats://h:4222", password: "secret" },
    }),
    "weir resume count-1a2b3c4d --nats nats://h:4222 --nats-password <password>",
  );
  assert.equal(
    resumeCommand({
      jobId: "count-1a2b3c4d",
      module: "jobs/count.ts",
      args: ["--input", "a b.csv"],
      defaultParallelism: 3,
    }),
    "weir resume count-1a2b3c4d jobs/count.ts -p 3 -- --input 'a b.csv'",
  );
  assert.equal(
    resumeCommand({ jobId: "j-1", module: "job.ts", args: [] }),
    "weir resume j-1 job.ts",
  );
});
