/**
 * What window coGroup (`co_grouped_streams.ts`) and window join
 * (`joined_streams.ts`) share: the steps that name both inputs' keys
 * (`where`, `equalTo`), the window step (trigger, evictor, allowed
 * lateness) and the building of the window operator over a keyed tagged
 * union. Flink writes these steps twice, once in `CoGroupedStreams` and
 * once in `JoinedStreams`; here each operation's classes extend one base per
 * step and add only the method that leads to its own next step (so that
 * step keeps its own public type, e.g. `JoinedWhere`).
 *
 * Invariants: a key selector is checked when it is named (a `TypeError`
 * naming the call, e.g. `join().where()`); trigger, evictor and allowed
 * lateness are applied when the operation is built, in that order, so a
 * trigger that cannot merge on a merging assigner fails at `apply`.
 *
 * @module
 */

import type { DataStream, SingleOutputStreamOperator } from "./datastream.ts";
import type { ProcessWindowFunction } from "./window_functions.ts";
import { checkKeySelector, keyedTaggedUnion, type TaggedUnion } from "./tagged_union.ts";
import type { Key } from "../state/key_group.ts";
import type { WindowAssigner } from "../time/windows/window_assigner.ts";
import type { Trigger } from "../time/windows/trigger.ts";
import type { Evictor } from "../time/windows/evictor.ts";
import type { Window } from "../time/windows/window.ts";

/**
 * The first step of a window coGroup or join (Flink's `CoGroupedStreams`
 * and `JoinedStreams`): both inputs, before any key is named.
 *
 * @typeParam T1 records of the first input.
 * @typeParam T2 records of the second input.
 */
export abstract class TwoInputStreams<T1, T2> {
  readonly #first: DataStream<T1>;
  readonly #second: DataStream<T2>;

  /** @internal Use `DataStream.coGroup(other)` or `DataStream.join(other)`. */
  constructor(first: DataStream<T1>, second: DataStream<T2>) {
    this.#first = first;
    this.#second = second;
  }

  /**
   * Both inputs with `keySelector` as the first input's key.
   * @param keySelector the first input's key.
   * @param call the user's call, for the error, e.g. `"join().where()"`.
   * @throws {TypeError} when `keySelector` is not a function.
   */
  protected withFirstKey<K extends Key>(
    keySelector: (value: T1) => K,
    call: string,
  ): TwoInputFirstKey<T1, T2, K> {
    checkKeySelector(keySelector, call);
    return { first: this.#first, second: this.#second, firstKey: keySelector };
  }
}

/** The two inputs of a window join or coGroup and the first input's key. */
export type TwoInputFirstKey<T1, T2, K extends Key> = Omit<TwoInputKeys<T1, T2, K>, "secondKey">;

/**
 * The step of a window coGroup or join with its first key (Flink's
 * `CoGroupedStreams.Where` and `JoinedStreams.Where`).
 *
 * @typeParam T1 records of the first input.
 * @typeParam T2 records of the second input.
 * @typeParam K the key.
 */
export abstract class TwoInputWhere<T1, T2, K extends Key> {
  readonly #keys: TwoInputFirstKey<T1, T2, K>;

  /** @internal Use `CoGroupedStreams.where` or `JoinedStreams.where`. */
  constructor(keys: TwoInputFirstKey<T1, T2, K>) {
    this.#keys = keys;
  }

  /**
   * Both inputs and both keys, `keySelector` being the second input's.
   * @param keySelector the second input's key.
   * @param call the user's call, for the error, e.g. `"join().where().equalTo()"`.
   * @throws {TypeError} when `keySelector` is not a function.
   */
  protected withSecondKey(keySelector: (value: T2) => K, call: string): TwoInputKeys<T1, T2, K> {
    checkKeySelector(keySelector, call);
    return { ...this.#keys, secondKey: keySelector };
  }
}

/**
 * The step of a window coGroup or join with both keys (Flink's
 * `CoGroupedStreams.Where.EqualTo` and `JoinedStreams.Where.EqualTo`).
 *
 * @typeParam T1 records of the first input.
 * @typeParam T2 records of the second input.
 * @typeParam K the key.
 */
export abstract class TwoInputEqualTo<T1, T2, K extends Key> {
  /** Both inputs and their keys. */
  protected readonly keys: TwoInputKeys<T1, T2, K>;

  /** @internal Use `CoGroupedWhere.equalTo` or `JoinedWhere.equalTo`. */
  constructor(keys: TwoInputKeys<T1, T2, K>) {
    this.keys = keys;
  }
}

/** The window settings of a two-input window operation, applied when it is built. */
export interface TwoInputWindowSettings<T1, T2, W extends Window> {
  /** The window assigner (sees tagged elements). */
  readonly assigner: WindowAssigner<TaggedUnion<T1, T2>, W>;
  /** The trigger, or `undefined` for the assigner's default. */
  trigger: Trigger<TaggedUnion<T1, T2>, W> | undefined;
  /** The evictor, or `undefined`. */
  evictor: Evictor<TaggedUnion<T1, T2>, W> | undefined;
  /** Allowed lateness, ms. */
  allowedLateness: number;
}

/**
 * Builds the window operator of a window coGroup or join: tagged keyed
 * union, window with `settings`, and `fn` as its process window function.
 * @throws {TypeError|RangeError} as `WindowedStream.trigger` and `allowedLateness`.
 */
export function buildTwoInputWindow<T1, T2, K extends Key, W extends Window, O>(
  options: {
    readonly first: DataStream<T1>;
    readonly second: DataStream<T2>;
    readonly firstKey: (value: T1) => K;
    readonly secondKey: (value: T2) => K;
    readonly settings: TwoInputWindowSettings<T1, T2, W>;
    readonly fn: ProcessWindowFunction<TaggedUnion<T1, T2>, O, K, W>;
    readonly name: string;
  },
): SingleOutputStreamOperator<O> {
  const { settings } = options;
  const windowed = keyedTaggedUnion({
    first: options.first,
    second: options.second,
    firstKey: options.firstKey,
    secondKey: options.secondKey,
    name: options.name,
  }).window(settings.assigner);
  if (settings.trigger !== undefined) windowed.trigger(settings.trigger);
  if (settings.evictor !== undefined) windowed.evictor(settings.evictor);
  windowed.allowedLateness(settings.allowedLateness);
  return windowed.process(options.fn).name(`${options.name}(${settings.assigner})`);
}

/** The two inputs of a window join or coGroup and their keys. */
export interface TwoInputKeys<T1, T2, K extends Key> {
  /** The first input. */
  readonly first: DataStream<T1>;
  /** The second input. */
  readonly second: DataStream<T2>;
  /** The first input's key. */
  readonly firstKey: (value: T1) => K;
  /** The second input's key; records with equal keys meet. */
  readonly secondKey: (value: T2) => K;
}

/**
 * The window stage both {@linkcode CoGroupedWithWindow} and
 * `JoinedWithWindow` share (Flink's `CoGroupedStreams.WithWindow` and
 * `JoinedStreams.WithWindow`, two copies there, one base here): the
 * trigger, evictor and allowed lateness, then `apply`, which each defines
 * over {@linkcode TwoInputWithWindow.build}.
 *
 * @typeParam T1 records of the first input.
 * @typeParam T2 records of the second input.
 * @typeParam K the key.
 * @typeParam W the window type.
 */
export abstract class TwoInputWithWindow<T1, T2, K extends Key, W extends Window> {
  readonly #keys: TwoInputKeys<T1, T2, K>;
  readonly #settings: TwoInputWindowSettings<T1, T2, W>;
  readonly #operation: string;

  /**
   * Starts with no trigger (the assigner's default), no evictor and no lateness.
   * @param operation `"join"` or `"coGroup"`, for error messages.
   * @param keys the inputs and their keys.
   * @param assigner the window assigner (it sees tagged elements).
   */
  protected constructor(
    operation: string,
    keys: TwoInputKeys<T1, T2, K>,
    assigner: WindowAssigner<TaggedUnion<T1, T2>, W>,
  ) {
    this.#operation = operation;
    this.#keys = keys;
    this.#settings = { assigner, trigger: undefined, evictor: undefined, allowedLateness: 0 };
  }

  /** Sets the trigger (see `WindowedStream.trigger`); checked when applied. */
  trigger(trigger: Trigger<TaggedUnion<T1, T2>, W>): this {
    this.#settings.trigger = trigger;
    return this;
  }

  /** Sets an evictor (see `WindowedStream.evictor`). */
  evictor(evictor: Evictor<TaggedUnion<T1, T2>, W>): this {
    this.#settings.evictor = evictor;
    return this;
  }

  /**
   * Lets elements up to `ms` behind a window's end still update it and fire
   * it again (see `WindowedStream.allowedLateness`); a window that fires
   * again emits all its results again, as in Flink. Default 0.
   * @throws {RangeError} unless `ms` is an integer >= 0.
   */
  allowedLateness(ms: number): this {
    if (!Number.isSafeInteger(ms) || ms < 0) {
      throw new RangeError(
        `${this.#operation}().allowedLateness() needs an integer >= 0 ms: current value is ${ms}`,
      );
    }
    this.#settings.allowedLateness = ms;
    return this;
  }

  /**
   * The window operator with `fn` as its process window function.
   * @param fn splits each window's tagged elements and calls the user's function.
   * @param name the operator's name, e.g. `"Join"`.
   */
  protected build<O>(
    fn: ProcessWindowFunction<TaggedUnion<T1, T2>, O, K, W>,
    name: string,
  ): SingleOutputStreamOperator<O> {
    return buildTwoInputWindow<T1, T2, K, W, O>({
      ...this.#keys,
      settings: this.#settings,
      fn,
      name,
    });
  }
}
