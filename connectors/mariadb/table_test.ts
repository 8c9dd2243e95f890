import assert from "node:assert/strict";
import { PlanningError } from "../../runtime/table/changelog_mode.ts";
import { TYPES } from "../../runtime/table/types.ts";
import { mariaDbConnection, mariaDbStatement, mariaDbTableConnector } from "./table.ts";

const table = (options: Record<string, string>, primaryKey: string[] | null = null) => ({
  name: "totals",
  columns: [{ name: "k", type: TYPES.STRING }, { name: "v", type: TYPES.BIGINT }],
  options: { connector: "mariadb", username: "root", ...options },
  rows: [],
  primaryKey,
  watermark: null,
});

Deno.test("a mariadb table connects by url or by host/port/database, and writes by its primary key", () => {
  assert.deepEqual(mariaDbConnection(table({ url: "jdbc:mysql://db.local/shop" })), {
    host: "db.local",
    port: 3306,
    database: "shop",
    user: "root",
  });
  assert.deepEqual(
    mariaDbConnection(table({ host: "h", port: "3307", database: "d", password: "pw" })),
    { host: "h", port: 3307, database: "d", user: "root", password: "pw" },
  );
  assert.equal(
    mariaDbStatement(table({ database: "d", "table-name": "t2" })),
    "INSERT INTO `t2` (`k`, `v`) VALUES (?, ?)",
  );
  assert.equal(
    mariaDbStatement(table({ database: "d" }, ["k"])),
    "INSERT INTO `totals` (`k`, `v`) VALUES (?, ?) ON DUPLICATE KEY UPDATE `v` = VALUES(`v`)",
  );
  assert.equal(mariaDbTableConnector.sink!(table({ database: "d" })).accepts, "append");
  assert.equal(mariaDbTableConnector.sink!(table({ database: "d" }, ["k"])).accepts, "updates");
});

Deno.test("the mariadb connector refuses bad options by name", () => {
  const refused = (options: Record<string, string>, pattern: RegExp) =>
    assert.throws(
      () => mariaDbTableConnector.validate(table(options)),
      (e: unknown) => e instanceof PlanningError && pattern.test(e.message),
    );
  refused(
    {},
    /table totals needs option 'url' \(jdbc:mariadb:\/\/host:port\/database\) or 'database'/,
  );
  refused({ url: "jdbc:postgresql://h/d" }, /option 'url' of table totals must be jdbc:mariadb:/);
  refused({ url: "jdbc:mariadb://h/d", host: "x" }, /gives 'url' and also 'host'/);
  refused({ database: "d", port: "99999" }, /the port of table totals must be 1-65535/);
  refused(
    { database: "d", "sink.buffer-flush.max-rows": "0" },
    /'sink.buffer-flush.max-rows' of table totals must be an integer from 1/,
  );
  refused(
    { database: "d", "sink.delivery-guarantee": "twice" },
    /'sink.delivery-guarantee' of table totals must be one of/,
  );
  refused({ database: "d", "sink.xid-prefix": "bad prefix!" }, /table totals: .*xidPrefix|prefix/);
  refused({ database: "d", lookup: "x" }, /Unsupported option 'lookup' for connector 'mariadb'/);
  assert.throws(
    () =>
      mariaDbTableConnector.validate({
        ...table({ database: "d" }),
        options: { connector: "mariadb", database: "d" },
      }),
    /table totals needs option 'username'/,
  );
});
