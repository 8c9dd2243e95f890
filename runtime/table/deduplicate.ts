/**
 * Deduplication: Flink's `Deduplicate` (`ProcTimeDeduplicateKeepFirstRowFunction`,
 * `ProcTimeDeduplicateKeepLastRowFunction`, `RowTimeDeduplicateFunction`),
 * the plan of
 *
 * ```sql
 * SELECT * FROM (
 *   SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY t ASC|DESC) AS rn FROM src
 * ) WHERE rn = 1
 * ```
 *
 * where `t` is a time attribute and `rn` is not selected. It is a
 * KeyedProcessFunction keyed by the PARTITION BY keys that keeps, per key,
 * the row it emitted last in keyed ValueState.
 *
 * ## Per input row (the decision is {@linkcode decideDeduplicate}, pure)
 *
 * | order | keeps | replaces the kept row when | output mode |
 * |---|---|---|---|
 * | processing time ASC | the first row | never | append (`+I` once per key) |
 * | processing time DESC | the last row | always | retract (`-U` old, `+U` new) |
 * | event time ASC | the row of the smallest rowtime | its rowtime < the kept one's | retract |
 * | event time DESC | the row of the largest rowtime | its rowtime >= the kept one's | retract |
 *
 * Event-time deduplication follows `RowTimeDeduplicateFunction`: rows are
 * not buffered until the watermark; an out-of-order row that wins replaces
 * the kept one at once (`-U` old, `+U` new). This is why Flink (and Weir)
 * derive a retract mode for event-time keep-first as well: only
 * processing-time keep-first is append-only. A tie on rowtime keeps the
 * first row in keep-first and the last in keep-last, as Flink.
 *
 * Input must be append-only (`+I` rows; Flink's Deduplicate consumes only
 * inserts): any other kind is an error naming the row. Without
 * `generateUpdateBefore` (upsert mode) the `-U` rows are left out.
 *
 * With idle state retention (`table.exec.state.ttl`, `state_retention.ts`)
 * a key's kept row expires when the key was not written for that long;
 * the key's next row then counts as its first (`+I` again), as in Flink.
 *
 * @module
 */

import type {
  Collector,
  KeyedProcessContext,
  KeyedProcessFunction,
  RuntimeContext,
} from "../api/functions.ts";
import { type ValueState, ValueStateDescriptor } from "../api/state.ts";
import { SuppressRestartsError } from "../failure.ts";
import { formatRow, type Row, type SqlValue } from "./row.ts";
import { stateTtlConfig } from "./state_retention.ts";
import { timeAttributeMillis } from "./time_attribute.ts";

/** How a deduplication orders and keeps rows. */
export interface DeduplicateSpec {
  /** Keep the last row (ORDER BY time DESC) rather than the first (ASC). */
  readonly keepLastRow: boolean;
  /**
   * The index of the rowtime column for event-time order, or `null` for
   * processing time (arrival order).
   */
  readonly rowtimeIndex: number | null;
  /** The rowtime column's name, for messages (ignored in processing time). */
  readonly rowtimeName?: string;
  /** Emit `-U` before `+U` (retract mode) rather than only `+U` (upsert). */
  readonly generateUpdateBefore: boolean;
}

/** What one row does to a key: the row to keep (or `undefined`: unchanged) and the rows to emit. */
export interface DeduplicateDecision {
  /** The new kept row, or `undefined` to keep the old one. */
  readonly keep: readonly SqlValue[] | undefined;
  /** The changes to emit, in order. */
  readonly emit: Row[];
}

/**
 * Whether Deduplicate's output is append-only (Flink: only processing-time
 * keep-first is).
 */
export function deduplicateIsAppendOnly(spec: DeduplicateSpec): boolean {
  return !spec.keepLastRow && spec.rowtimeIndex === null;
}

/**
 * Decides what one input row does (see the module docs). Pure.
 *
 * @param spec the deduplication.
 * @param kept the key's kept row, or `undefined` when the key has none.
 * @param row the input row.
 * @throws {Error} for a row that is not `+I`, or a rowtime that is not a
 *   time (via {@linkcode timeAttributeMillis}), naming the row.
 */
export function decideDeduplicate(
  spec: DeduplicateSpec,
  kept: readonly SqlValue[] | undefined,
  row: Row,
): DeduplicateDecision {
  if (row.kind !== "INSERT") {
    throw new Error(
      `Deduplicate consumes only inserts, got ${formatRow(row)}: its input must be append-only`,
    );
  }
  if (kept === undefined) {
    return { keep: row.fields, emit: [{ kind: "INSERT", fields: row.fields }] };
  }
  let replace: boolean;
  if (spec.rowtimeIndex === null) {
    replace = spec.keepLastRow;
  } else {
    const name = spec.rowtimeName ?? `$${spec.rowtimeIndex}`;
    const current = timeAttributeMillis(row.fields[spec.rowtimeIndex] ?? null, name);
    const previous = timeAttributeMillis(kept[spec.rowtimeIndex] ?? null, name);
    replace = spec.keepLastRow ? current >= previous : current < previous;
  }
  if (!replace) return { keep: undefined, emit: [] };
  const emit: Row[] = spec.generateUpdateBefore ? [{ kind: "UPDATE_BEFORE", fields: kept }] : [];
  emit.push({ kind: "UPDATE_AFTER", fields: row.fields });
  return { keep: row.fields, emit };
}

/**
 * The Deduplicate operator's function (see the module docs), applied after
 * `keyBy` on the PARTITION BY keys. Fields are TypeScript `private`:
 * function objects are copied per subtask.
 */
export class DeduplicateFunction implements KeyedProcessFunction<string, Row, Row> {
  private readonly spec: DeduplicateSpec;
  private readonly stateTtlMs: number;
  private state: ValueState<readonly SqlValue[]> | undefined;

  /**
   * @param spec the deduplication.
   * @param stateTtlMs idle state retention in ms (`table.exec.state.ttl`); 0 keeps state forever.
   */
  constructor(spec: DeduplicateSpec, stateTtlMs = 0) {
    this.spec = spec;
    this.stateTtlMs = stateTtlMs;
  }

  /** Binds the kept-row state (`deduplicate-state`). */
  open(ctx: RuntimeContext): void {
    const ttl = stateTtlConfig(this.stateTtlMs);
    this.state = ctx.getState(
      new ValueStateDescriptor<readonly SqlValue[]>("deduplicate-state", ttl ? { ttl } : {}),
    );
  }

  /** Applies one row to its key (see {@linkcode decideDeduplicate}). */
  processElement(row: Row, _ctx: KeyedProcessContext<string>, out: Collector<Row>): void {
    let decision: DeduplicateDecision;
    try {
      decision = decideDeduplicate(this.spec, this.state!.value(), row);
    } catch (error) {
      throw new SuppressRestartsError(
        `Deduplicate failed on ${formatRow(row)}: ${
          error instanceof Error ? error.message : String(error)
        }`,
        { cause: error },
      );
    }
    if (decision.keep !== undefined) this.state!.update(decision.keep);
    for (const change of decision.emit) out.collect(change);
  }
}
