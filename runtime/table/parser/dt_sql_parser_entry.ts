/**
 * The entry point that `flink_sql_bundle.ts` gives to `deno bundle`: it
 * re-exports `dt-sql-parser`'s FlinkSQL grammar (an ANTLR 4 grammar of
 * Flink SQL, `npm:dt-sql-parser@4.5.1`). The package's ESM build uses
 * directory imports, which Deno's module loader refuses, so Weir never
 * imports this file at run time: it is bundled once into a cache and the
 * bundle is loaded instead. Importing it here keeps the package in
 * `deno.lock`, so `deno install`, `deno check` and `deno cache` fetch it.
 *
 * @module
 */

export { FlinkSQL } from "npm:dt-sql-parser@4.5.1";
