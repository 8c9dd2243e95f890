import assert from "node:assert/strict";
import { decideNoResponders, noRespondersIn, subjectMatches } from "./subject_check.ts";
import { PublishError } from "./publisher.ts";

Deno.test("NATS subject filters match one token per '*' and one or more per final '>'", () => {
  const cases: [string, string, boolean][] = [
    ["orders.>", "orders.eu", true],
    ["orders.>", "orders.eu.created", true],
    ["orders.>", "orders", false],
    ["orders.*", "orders.eu", true],
    ["orders.*", "orders.eu.created", false],
    ["orders.*.created", "orders.eu.created", true],
    ["orders.*.created", "orders.eu.deleted", false],
    ["orders", "orders", true],
    ["orders", "orders.eu", false],
    [">", "anything.at.all", true],
    ["a.>.b", "a.x.b", false],
  ];
  for (const [pattern, subject, expected] of cases) {
    assert.equal(subjectMatches(pattern, subject), expected, `${pattern} ~ ${subject}`);
  }
});

Deno.test("a no-responders publish is permanent only when none of the stream's subjects matches", () => {
  assert.deepEqual(decideNoResponders(["t.a", "t.b.*"], "u.a"), {
    kind: "not-stored",
    subjects: ["t.a", "t.b.*"],
  });
  assert.deepEqual(decideNoResponders(["t.a", "t.b.*"], "t.b.x"), { kind: "retry" });
  assert.deepEqual(decideNoResponders([], "t.a"), { kind: "not-stored", subjects: [] });
});

Deno.test("only a no-responders publish error in the cause chain counts", () => {
  const publish = new PublishError("no stream stores the subject (no responders)", "t.a");
  assert.equal(noRespondersIn(new Error("wrapped", { cause: publish })), publish);
  assert.equal(
    noRespondersIn(new PublishError("no acknowledgement after 3 tries", "t.a")),
    undefined,
  );
  assert.equal(noRespondersIn("not an error"), undefined);
});
