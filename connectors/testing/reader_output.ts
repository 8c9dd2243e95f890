/**
 * A {@linkcode ReaderOutput} that records what a `SourceReader` emits, for
 * testing readers without running a job: records with their timestamps and
 * the split output they came through, side outputs, and the split outputs'
 * lifecycle and watermark calls, all in order.
 *
 * It is strict where the runtime is lenient, to catch reader bugs: a record
 * (or watermark call) on a split output after that output was released
 * throws.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { RecordingReaderOutput } from "./reader_output.ts";
 *
 * const output = new RecordingReaderOutput<string>();
 * const split = output.createOutputForSplit("a");
 * split.collect("x", 5);
 * output.releaseOutputForSplit("a");
 * assert.deepEqual(output.records, ["x"]);
 * assert.deepEqual(output.recordsOf("a"), ["x"]);
 * assert.deepEqual(output.timestamps, [5]);
 * assert.deepEqual(output.events.map((e) => e.kind), ["created", "record", "released"]);
 * ```
 *
 * @module
 */

import type { ReaderOutput, SourceOutput } from "../../runtime/api/source.ts";
import type { OutputTag } from "../../runtime/api/output_tag.ts";

/**
 * One thing a reader did, in order. `split` is the split output's id, or
 * `undefined` for the main output.
 */
export type ReaderOutputEvent<T> =
  | {
    readonly kind: "record";
    readonly split: string | undefined;
    readonly value: T;
    readonly timestamp: number | undefined;
  }
  | { readonly kind: "side"; readonly tag: string; readonly value: unknown }
  | { readonly kind: "watermark"; readonly split: string | undefined; readonly watermark: number }
  | { readonly kind: "idle" | "active"; readonly split: string | undefined }
  | { readonly kind: "created" | "released"; readonly split: string };

/** Records what a reader emits; see the module docs. */
export class RecordingReaderOutput<T> implements ReaderOutput<T> {
  /** Everything the reader did, in order. */
  readonly events: ReaderOutputEvent<T>[] = [];
  readonly #open = new Map<string, SourceOutput<T>>();

  /** The records, in order, whichever output they came through. */
  get records(): T[] {
    return this.#recordEvents().map((e) => e.value);
  }

  /** The records' timestamps (ms), in order (`undefined`: none). */
  get timestamps(): (number | undefined)[] {
    return this.#recordEvents().map((e) => e.timestamp);
  }

  /** The side outputs, in order, as `[tag id, value]`. */
  get side(): [string, unknown][] {
    const out: [string, unknown][] = [];
    for (const e of this.events) if (e.kind === "side") out.push([e.tag, e.value]);
    return out;
  }

  /** The ids of the split outputs currently created and not released. */
  get openSplits(): string[] {
    return [...this.#open.keys()];
  }

  /** The records that came through split `splitId`'s output (`undefined`: the main output). */
  recordsOf(splitId: string | undefined): T[] {
    return this.#recordEvents().filter((e) => e.split === splitId).map((e) => e.value);
  }

  /** Records a record on the main output. */
  collect(record: T, timestamp?: number): void {
    this.events.push({ kind: "record", split: undefined, value: record, timestamp });
  }

  /** Records a watermark on the main output. */
  emitWatermark(watermark: number): void {
    this.events.push({ kind: "watermark", split: undefined, watermark });
  }

  /** Records that the main output was marked idle. */
  markIdle(): void {
    this.events.push({ kind: "idle", split: undefined });
  }

  /** Records that the main output was marked active. */
  markActive(): void {
    this.events.push({ kind: "active", split: undefined });
  }

  /** Records a side-output value. */
  output<X>(tag: OutputTag<X>, value: X): void {
    this.events.push({ kind: "side", tag: tag.id, value });
  }

  /** The output of split `splitId` (the same one until released). */
  createOutputForSplit(splitId: string): SourceOutput<T> {
    const existing = this.#open.get(splitId);
    if (existing !== undefined) return existing;
    this.events.push({ kind: "created", split: splitId });
    const check = () => {
      if (this.#open.get(splitId) !== output) {
        throw new Error(`A reader used the output of split ${splitId} after releasing it`);
      }
    };
    const output: SourceOutput<T> = {
      collect: (value: T, timestamp?: number) => {
        check();
        this.events.push({ kind: "record", split: splitId, value, timestamp });
      },
      emitWatermark: (watermark: number) => {
        check();
        this.events.push({ kind: "watermark", split: splitId, watermark });
      },
      markIdle: () => {
        check();
        this.events.push({ kind: "idle", split: splitId });
      },
      markActive: () => {
        check();
        this.events.push({ kind: "active", split: splitId });
      },
    };
    this.#open.set(splitId, output);
    return output;
  }

  /** Releases split `splitId`'s output (nothing happens for a split without one). */
  releaseOutputForSplit(splitId: string): void {
    if (!this.#open.delete(splitId)) return;
    this.events.push({ kind: "released", split: splitId });
  }

  #recordEvents() {
    return this.events.filter((e): e is Extract<ReaderOutputEvent<T>, { kind: "record" }> =>
      e.kind === "record"
    );
  }
}
