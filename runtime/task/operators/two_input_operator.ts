/**
 * The contract of two-input operators and the base of those that run user
 * functions (Flink's `TwoInputStreamOperator` and
 * `AbstractStreamOperator`'s two-input side).
 *
 * ## How records arrive
 *
 * A two-input operator heads its vertex. Each input edge of the vertex
 * carries its input number (`JobEdge.typeNumber`, Flink's `StreamEdge`
 * `typeNumber`); the task's input hands each buffer of an edge numbered 1
 * to `processElement1`, of an edge numbered 2 to `processElement2`
 * (`checkpointed_input.ts`). `processElement` (the one-input entry) throws.
 *
 * ## Keys
 *
 * A keyed two-input operator has one key selector per input
 * (`keySelector`, `keySelector2`), both mapping to keys of one key space:
 * keyed state and timers are shared by the two inputs. A producer on a hash
 * edge computes the key group with the edge's own selector, so an input's
 * key group is passed along only when the edge is keyed by that input's
 * selector (as for one input).
 *
 * ## Time
 *
 * The task's input combines the channels of each input in its own
 * `StatusWatermarkValve` and the two inputs in a `TwoInputWatermarkValve`
 * (Flink's `CombinedWatermarkStatus`): the operator's watermark is the
 * minimum over the inputs that are not idle, and it is idle when both are.
 *
 * @module
 */

import type { KeySelector } from "../../graph/stream_graph.ts";
import type { Key } from "../../state/key_group.ts";
import type { OperatorEnvironment, Output, StreamOperator } from "./operator.ts";
import { UdfOperator } from "./udf_operator.ts";

/** An operator with two inputs (Flink's `TwoInputStreamOperator`). */
export interface TwoInputStreamOperator extends StreamOperator {
  /**
   * Processes a record of input 1; the arguments are those of
   * `StreamOperator.processElement`.
   */
  processElement1(
    value: unknown,
    timestamp: number | undefined,
    keyGroup?: number,
    key?: unknown,
  ): void;
  /** Processes a record of input 2. */
  processElement2(
    value: unknown,
    timestamp: number | undefined,
    keyGroup?: number,
    key?: unknown,
  ): void;
}

/** Whether `op` takes two inputs. */
export function isTwoInputOperator(op: StreamOperator): op is TwoInputStreamOperator {
  return typeof (op as Partial<TwoInputStreamOperator>).processElement1 === "function";
}

/**
 * The one-input view of input `input` of `op`: what the task's buffer
 * dispatch calls `processElement` on.
 */
export function inputOf(
  op: TwoInputStreamOperator,
  input: 1 | 2,
): Pick<StreamOperator, "processElement"> {
  return { processElement: (input === 1 ? op.processElement1 : op.processElement2).bind(op) };
}

/** Options of {@linkcode TwoInputUdfOperator}. */
export interface TwoInputUdfOperatorOptions<F> {
  readonly uid: string;
  readonly name: string;
  readonly fn: F;
  readonly env: OperatorEnvironment;
  readonly output: Output;
  /** Input 1's key selector (keyed operators). */
  readonly keySelector: KeySelector | undefined;
  /** Input 2's key selector (keyed co-process operators; absent when input 2 is broadcast). */
  readonly keySelector2: KeySelector | undefined;
}

/** Base of two-input operators running a user function (see the module docs). */
export abstract class TwoInputUdfOperator<F> extends UdfOperator<F>
  implements TwoInputStreamOperator {
  /** Input 2's key selector, for keyed co-process operators. */
  protected readonly keySelector2: KeySelector | undefined;

  constructor(options: TwoInputUdfOperatorOptions<F>) {
    super(options);
    this.keySelector2 = options.keySelector2;
  }

  /**
   * Not an entry of a two-input operator.
   * @throws {Error} always: records must arrive on input 1 or 2.
   */
  processElement(): void {
    throw new Error(
      `${this.where()} is a two-input operator: a record arrived without an input number (1 or 2)`,
    );
  }

  abstract processElement1(
    value: unknown,
    timestamp: number | undefined,
    keyGroup?: number,
    key?: unknown,
  ): void;

  abstract processElement2(
    value: unknown,
    timestamp: number | undefined,
    keyGroup?: number,
    key?: unknown,
  ): void;

  /**
   * Sets the current key of a record of input 2: the handed-over key, else
   * input 2's key selector applied to `value`.
   */
  protected setKeyOf2(value: unknown, keyGroup?: number, key?: unknown): void {
    this.setKey(key === undefined ? this.keySelector2!(value) : key as Key, keyGroup);
  }
}
