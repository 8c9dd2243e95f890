import assert from "node:assert/strict";
import { checkGidPrefix, decideLingering, formatGid, newGidToken, parseGid } from "./gid.ts";

const TOKEN = "0123456789abcdef";

Deno.test("formatGid writes weir:<prefix>:<owner>:<checkpoint>:<token> and parseGid reads it back", () => {
  const parts = { gidPrefix: "bills.v2", ownerSubtask: 3, checkpointId: 42, token: TOKEN };
  const gid = formatGid(parts);
  assert.equal(gid, `weir:bills.v2:3:42:${TOKEN}`);
  assert.deepEqual(parseGid(gid), { kind: "weir", parts });
  const longest = formatGid({
    gidPrefix: "p".repeat(64),
    ownerSubtask: 9_999_999_999,
    checkpointId: 9_999_999_999,
    token: TOKEN,
  });
  assert.ok(longest.length <= 114 && longest.length < 200, `${longest.length} characters`);
});

Deno.test("newGidToken draws 16 lowercase hex digits, different each time", () => {
  const a = newGidToken();
  assert.match(a, /^[0-9a-f]{16}$/);
  assert.notEqual(a, newGidToken());
});

Deno.test("formatGid and checkGidPrefix refuse parts out of range, naming them with the current value", () => {
  assert.throws(
    () => formatGid({ gidPrefix: "p", ownerSubtask: -1, checkpointId: 1, token: TOKEN }),
    /ownerSubtask must be an integer in \[0, 9999999999\]: current value is -1/,
  );
  assert.throws(
    () => formatGid({ gidPrefix: "p", ownerSubtask: 0, checkpointId: 0, token: TOKEN }),
    /checkpointId must be an integer in \[1, 9999999999\]: current value is 0/,
  );
  assert.throws(
    () => formatGid({ gidPrefix: "p", ownerSubtask: 0, checkpointId: 1, token: "XYZ" }),
    /token must be 16 lowercase hex digits: current value is "XYZ"/,
  );
  assert.throws(
    () => checkGidPrefix("Sink", "a:b"),
    /Sink: gidPrefix must be 1-64 characters .*: current value is "a:b"/,
  );
  assert.throws(() => checkGidPrefix("Sink", ""), /current value is ""/);
  assert.throws(() => checkGidPrefix("Sink", "x".repeat(65)), /gidPrefix must be 1-64/);
});

Deno.test("parseGid tells other applications' and damaged gids apart from Weir's, saying what is wrong", () => {
  const cases: [string, RegExp][] = [
    ["some-other-app-txn", /5 ':'-separated fields: current value "some-other-app-txn" has 1/],
    [`xa:p:0:1:${TOKEN}`, /field 1 must be 'weir': current value is "xa"/],
    [`weir:a b:0:1:${TOKEN}`, /field 2 \(gidPrefix\)/],
    [`weir:p:01:1:${TOKEN}`, /field 3 \(ownerSubtask\) .*current value is "01"/],
    [`weir:p:0:0:${TOKEN}`, /field 4 \(checkpointId\) .*current value is "0"/],
    [`weir:p:0:99999999999:${TOKEN}`, /field 4 \(checkpointId\)/],
    ["weir:p:0:1:0123", /field 5 \(token\) .*current value is "0123"/],
  ];
  for (const [gid, problem] of cases) {
    const parsed = parseGid(gid);
    assert.equal(parsed.kind, "invalid", gid);
    if (parsed.kind === "invalid") assert.match(parsed.problem, problem);
  }
});

Deno.test("decideLingering rolls back on a fresh start every gid of the prefix the subtask owns, by owner modulo parallelism", () => {
  const gid = (prefix: string, owner: number, checkpoint: number) =>
    formatGid({ gidPrefix: prefix, ownerSubtask: owner, checkpointId: checkpoint, token: TOKEN });
  const prepared = [
    gid("p", 0, 1),
    gid("p", 1, 2),
    gid("p", 2, 3),
    gid("p", 3, 4),
    gid("q", 0, 1), // another sink's
    "not-weir",
  ];
  const facts = {
    gidPrefix: "p",
    parallelism: 2,
    restoredCheckpointId: undefined,
    preparedGids: prepared,
  };
  assert.deepEqual(decideLingering({ ...facts, subtaskIndex: 0 }), [
    gid("p", 0, 1),
    gid("p", 2, 3),
  ]);
  assert.deepEqual(decideLingering({ ...facts, subtaskIndex: 1 }), [
    gid("p", 1, 2),
    gid("p", 3, 4),
  ]);
  // scaled to 1: subtask 0 owns every old owner
  assert.deepEqual(
    decideLingering({ ...facts, parallelism: 1, subtaskIndex: 0 }),
    prepared.slice(0, 4),
  );
});

Deno.test("decideLingering on a restore from checkpoint n rolls back only gids prepared after n", () => {
  const gid = (owner: number, checkpoint: number) =>
    formatGid({ gidPrefix: "p", ownerSubtask: owner, checkpointId: checkpoint, token: TOKEN });
  const prepared = [gid(0, 4), gid(0, 5), gid(0, 6), gid(1, 7)];
  assert.deepEqual(
    decideLingering({
      gidPrefix: "p",
      subtaskIndex: 0,
      parallelism: 1,
      restoredCheckpointId: 5,
      preparedGids: prepared,
    }),
    [gid(0, 6), gid(1, 7)],
  );
});
