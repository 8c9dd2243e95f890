/**
 * Every table connector of `connectors/`, for registering on a
 * `StreamTableEnvironment` (Flink finds its `DynamicTableFactory`s on the
 * class path; Weir's are listed here, see `runtime/table/table_connectors.ts`).
 *
 * ```ts ignore
 * import { StreamExecutionEnvironment, StreamTableEnvironment } from "./mod.ts";
 * import { TABLE_CONNECTOR_FACTORIES } from "./connectors/table.ts";
 *
 * const tEnv = StreamTableEnvironment.create(
 *   StreamExecutionEnvironment.getExecutionEnvironment(),
 *   { connectors: TABLE_CONNECTOR_FACTORIES },
 * );
 * ```
 *
 * | identifier | source | sink | file |
 * |---|---|---|---|
 * | `nexmark` | yes | no | `datagen/nexmark/table.ts` |
 * | `filesystem` | yes (bounded) | append-only, exactly-once | `file/table.ts` |
 * | `jetstream` | yes (replayable, read-committed) | append-only, exactly-once | `jetstream/table.ts` |
 * | `mariadb` | no | upsert by PRIMARY KEY or append-only, exactly-once (XA) | `mariadb/table.ts` |
 * | `postgres` | no | upsert by PRIMARY KEY or append-only, exactly-once (prepared transactions) | `postgres/table.ts` |
 *
 * The built-ins `values`, `datagen`, `print` and `blackhole` are always
 * registered.
 *
 * @module
 */

import type { TableConnector } from "../runtime/table/table_connectors.ts";
import { nexmarkTableConnector } from "./datagen/nexmark/table.ts";
import { filesystemTableConnector } from "./file/table.ts";
import { jetstreamTableConnector } from "./jetstream/table.ts";
import { mariaDbTableConnector } from "./mariadb/table.ts";
import { postgresTableConnector } from "./postgres/table.ts";

export {
  filesystemTableConnector,
  jetstreamTableConnector,
  mariaDbTableConnector,
  nexmarkTableConnector,
  postgresTableConnector,
};

/** The table connectors of `connectors/`, to pass as `StreamTableEnvironment.create(env, { connectors })`. */
export const TABLE_CONNECTOR_FACTORIES: readonly TableConnector[] = [
  nexmarkTableConnector,
  filesystemTableConnector,
  jetstreamTableConnector,
  mariaDbTableConnector,
  postgresTableConnector,
];
