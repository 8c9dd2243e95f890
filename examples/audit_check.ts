/**
 * Auditing the output of the exactly-once audit job
 * (`exactly_once_audit.ts`) against the failure-free expectation, record by
 * record: per key exactly `seq` 1..N, in order.
 *
 * ## Counts
 *
 * For each key the records are taken in the order they were committed
 * (stream order, read committed):
 *
 * - `records`: data records read (violations not included);
 * - `lost`: expected `(key, seq)` pairs that never appear;
 * - `duplicated`: every appearance of a pair after its first;
 * - `out_of_order`: first appearances of a pair whose `seq` is below a
 *   `seq` of the same key that appeared before it;
 * - `violations`: violation records (the job's own semantic check found a
 *   gap or a repeat in its input);
 * - `unexpected`: data records of an unknown key or a `seq` outside 1..N.
 *
 * A failure-free run gives `records = keys × perKey` and every other count
 * 0. {@linkcode AuditTally} is pure; {@linkcode auditCommittedOutput} reads
 * the stream.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { AuditTally } from "./audit_check.ts";
 *
 * const tally = new AuditTally({ keys: 1, perKey: 3 });
 * for (const seq of [1, 3, 3, 2]) tally.add({ key: "k0", seq });
 * assert.deepEqual(tally.report(), {
 *   records: 4, lost: 0, duplicated: 1, outOfOrder: 1, violations: 0, unexpected: 0,
 * });
 * ```
 *
 * @module
 */

import { type NatsConnectionOptions, readCommitted } from "../connectors/jetstream/mod.ts";

/** What the audit counted; see the module docs. */
export interface AuditReport {
  /** Data records read. */
  readonly records: number;
  /** Expected records never read. */
  readonly lost: number;
  /** Extra copies of records already read. */
  readonly duplicated: number;
  /** Records read after a later record of their key. */
  readonly outOfOrder: number;
  /** Violation records written by the job's semantic check. */
  readonly violations: number;
  /** Records of an unknown key or a `seq` outside 1..N. */
  readonly unexpected: number;
}

/** One output record, as the audit job writes it (violations carry `violation`). */
export interface AuditedRecord {
  /** The key. */
  readonly key: string;
  /** The record's number within its key. */
  readonly seq: number;
  /** Present on violation records only. */
  readonly violation?: string;
}

/** Counts an audit output against `keys` × `perKey` (see the module docs). */
export class AuditTally {
  readonly #perKey: number;
  /** Per key: how often each seq was read (index = seq). */
  readonly #seen = new Map<string, Uint32Array>();
  /** Per key: the largest seq read so far. */
  readonly #max = new Map<string, number>();
  #records = 0;
  #duplicated = 0;
  #outOfOrder = 0;
  #violations = 0;
  #unexpected = 0;

  /**
   * Creates an empty tally expecting keys `k0` .. `k<keys-1>`, each with seq 1..perKey.
   * @throws {RangeError} unless both are positive integers.
   */
  constructor(shape: { readonly keys: number; readonly perKey: number }) {
    for (const [name, value] of [["keys", shape.keys], ["perKey", shape.perKey]] as const) {
      if (!Number.isSafeInteger(value) || value < 1) {
        throw new RangeError(`'${name}' must be a positive integer: current value is ${value}`);
      }
    }
    this.#perKey = shape.perKey;
    for (let i = 0; i < shape.keys; i++) {
      this.#seen.set(`k${i}`, new Uint32Array(shape.perKey + 1));
      this.#max.set(`k${i}`, 0);
    }
  }

  /** Counts the next record read. */
  add(record: AuditedRecord): void {
    if (record.violation !== undefined) {
      this.#violations++;
      return;
    }
    this.#records++;
    const seen = this.#seen.get(record.key);
    const seq = record.seq;
    if (seen === undefined || !Number.isInteger(seq) || seq < 1 || seq > this.#perKey) {
      this.#unexpected++;
      return;
    }
    const times = ++seen[seq]!;
    if (times > 1) {
      this.#duplicated++;
      return;
    }
    const max = this.#max.get(record.key)!;
    if (seq < max) this.#outOfOrder++;
    else this.#max.set(record.key, seq);
  }

  /** The counts so far; `lost` counts every expected record not read yet. */
  report(): AuditReport {
    let lost = 0;
    for (const seen of this.#seen.values()) {
      for (let seq = 1; seq <= this.#perKey; seq++) if (seen[seq] === 0) lost++;
    }
    return {
      records: this.#records,
      lost,
      duplicated: this.#duplicated,
      outOfOrder: this.#outOfOrder,
      violations: this.#violations,
      unexpected: this.#unexpected,
    };
  }
}

/** `records=… lost=… duplicated=… out_of_order=… violations=… unexpected=…`. */
export function formatAuditReport(report: AuditReport): string {
  return `records=${report.records} lost=${report.lost} duplicated=${report.duplicated} ` +
    `out_of_order=${report.outOfOrder} violations=${report.violations} unexpected=${report.unexpected}`;
}

/** Options of {@linkcode auditCommittedOutput}. */
export interface AuditReadOptions {
  /** How to connect. */
  readonly connection: NatsConnectionOptions;
  /** The audit job's output stream. */
  readonly stream: string;
  /** The KV bucket of the sink's transactions (default `weir-txn`). */
  readonly txnBucket?: string;
  /** Keys expected. */
  readonly keys: number;
  /** Records expected per key. */
  readonly perKey: number;
}

/**
 * Reads `stream` read committed, up to its last sequence now, and counts it
 * against the expectation (see the module docs).
 * @throws {Error} naming the stream when it cannot be read, or the sequence
 *   of a payload that is not an audit record.
 */
export async function auditCommittedOutput(options: AuditReadOptions): Promise<AuditReport> {
  const tally = new AuditTally(options);
  const decoder = new TextDecoder();
  for await (
    const record of readCommitted({
      connection: options.connection,
      stream: options.stream,
      bounded: true,
      ...(options.txnBucket === undefined ? {} : { txnBucket: options.txnBucket }),
    })
  ) {
    let value: AuditedRecord;
    try {
      value = JSON.parse(decoder.decode(record.data)) as AuditedRecord;
    } catch (error) {
      throw new Error(
        `Sequence ${record.seq} of stream ${options.stream} (subject ${record.subject}) is not an audit record: ${error}`,
      );
    }
    tally.add(value);
  }
  return tally.report();
}
