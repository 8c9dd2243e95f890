/**
 * The collection source: a bounded stream over an in-memory array. It lives
 * in the runtime (it backs `env.fromCollection`); this module is its place
 * among the connectors.
 *
 * @module
 */
export { CollectionSource } from "../../runtime/api/collection_source.ts";
export type {
  CollectionSourceOptions,
  CollectionSplit,
} from "../../runtime/api/collection_source.ts";
