/**
 * Runs a `Correlate` node (`plan_lateral.ts`) as a stateless `flatMap`:
 * per input row, the table function's rows appended to the row's fields,
 * each with the input row's kind (NULL-padded for a LEFT join when the
 * function yields nothing).
 *
 * A function that throws, yields a row of the wrong width or a value of
 * the wrong type ends the job at once (`SuppressRestartsError`), naming
 * the node and the row: the same row would fail again after a restart.
 *
 * @module
 */

import type { DataStream } from "../api/datastream.ts";
import type { Collector } from "../api/functions.ts";
import { SuppressRestartsError } from "../failure.ts";
import { type CorrelateNode, describeCorrelate } from "./plan_lateral.ts";
import { formatRow, type Row, type SqlValue } from "./row.ts";

/**
 * The rows a Correlate node gives for one input row. Pure.
 * @throws {Error} what the function throws, or a TypeError for a row that does not fit.
 */
export function correlateRows(node: CorrelateNode, row: Row): Row[] {
  const args = node.args.map((a) => a.evaluate(row.fields));
  const out: Row[] = [];
  for (const produced of node.call.rows(args)) {
    const fields: SqlValue[] = [...row.fields, ...produced];
    if (node.condition === null || node.condition.evaluate(fields) === true) {
      out.push({ kind: row.kind, fields });
    }
  }
  if (out.length === 0 && node.joinType === "LEFT") {
    out.push({ kind: row.kind, fields: [...row.fields, ...node.call.columns.map(() => null)] });
  }
  return out;
}

/**
 * Translates a Correlate node over its input's stream.
 * @param uid the operator's uid.
 */
export function translateCorrelate(
  input: DataStream<Row>,
  node: CorrelateNode,
  uid: string,
): DataStream<Row> {
  const name = describeCorrelate(node);
  return input.flatMap((row: Row, out: Collector<Row>) => {
    let rows: Row[];
    try {
      rows = correlateRows(node, row);
    } catch (error) {
      throw new SuppressRestartsError(
        `${name} failed on ${formatRow(row)}: ${
          error instanceof Error ? error.message : String(error)
        }`,
        { cause: error },
      );
    }
    for (const r of rows) out.collect(r);
  }).uid(uid).name(name);
}
