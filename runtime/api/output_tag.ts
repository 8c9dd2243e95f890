/**
 * Side outputs: a function emits to an {@linkcode OutputTag} and the job reads
 * that stream with `getSideOutput(tag)` (Flink's "Side Outputs").
 *
 * @module
 */

const TAG_ID = /^[A-Za-z0-9_-]+$/;

/**
 * Names a side output of type `T`. Two tags are the same side output when
 * their ids are equal.
 *
 * @example
 * ```ts
 * import { OutputTag } from "./output_tag.ts";
 * const lowTemp = new OutputTag<string>("low-temp");
 * ```
 */
export class OutputTag<_T> {
  /** The tag's id: letters, digits, `_` and `-`. */
  readonly id: string;
  /**
   * Makes a tag.
   * @param id the side output's name.
   * @throws {TypeError} when `id` is empty or has other characters than letters, digits, `_`, `-`.
   */
  constructor(id: string) {
    if (typeof id !== "string" || !TAG_ID.test(id)) {
      throw new TypeError(
        `An OutputTag id must match ${TAG_ID}: current value is ${JSON.stringify(id)}`,
      );
    }
    this.id = id;
  }
  /** `OutputTag(<id>)`. */
  toString(): string {
    return `OutputTag(${this.id})`;
  }
}
