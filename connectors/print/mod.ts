/**
 * The print sink: writes each record as a line on stdout or stderr
 * (at-least-once: lines may repeat after a failure). It lives in the runtime
 * (it backs `DataStream.print()`); this module is its place among the
 * connectors.
 *
 * @module
 */
export { PrintSink } from "../../runtime/api/print_sink.ts";
export type { PrintSinkOptions, SyncWriter } from "../../runtime/api/print_sink.ts";
