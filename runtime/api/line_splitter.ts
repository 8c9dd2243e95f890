/**
 * Splitting a stream of text chunks into delimited lines, for
 * `env.socketTextStream` (`socket_source.ts`): delimiters found in linear
 * time across chunk boundaries (a delimiter may be cut between two chunks),
 * and lines longer than a limit refused with {@linkcode LineTooLongError}
 * instead of growing memory without bound.
 *
 * @module
 */

/** The default longest line, in UTF-16 code units (16 Mi: about 32 MiB of memory). */
export const SOCKET_SOURCE_MAX_LINE_LENGTH = 16 * 1024 * 1024;

/**
 * A line longer than a {@linkcode LineSplitter}'s `maxLineLength` (a
 * `RangeError`): `lines` are the lines the same `push` completed before it,
 * which the caller still owns.
 */
export class LineTooLongError extends RangeError {
  /** The complete lines before the long one, in order, without delimiters. */
  readonly lines: readonly string[];
  /** The long line's length so far, in UTF-16 code units. */
  readonly lineLength: number;

  /**
   * Builds the error.
   * @param message names the limit and the current length.
   * @param lines the complete lines before the long one.
   * @param lineLength the long line's length so far.
   */
  constructor(message: string, lines: readonly string[], lineLength: number) {
    super(message);
    this.name = "LineTooLongError";
    this.lines = lines;
    this.lineLength = lineLength;
  }
}

/**
 * Cuts decoded text into lines at a delimiter, across chunk boundaries (the
 * pure part of the socket reader).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { LineSplitter } from "./line_splitter.ts";
 * const s = new LineSplitter("\n");
 * assert.deepEqual(s.push("a\r\nb"), ["a"]);
 * assert.deepEqual(s.push("c\n"), ["bc"]);
 * assert.equal(s.end(), undefined);
 * ```
 */
export class LineSplitter {
  readonly #delimiter: string;
  readonly #stripCr: boolean;
  readonly #maxLineLength: number;
  /** The text after the last delimiter, in pieces (their concatenation holds no delimiter). */
  #pending: string[] = [];
  #pendingLength = 0;
  /** The last `delimiter.length - 1` code units of the pending text. */
  #carry = "";

  /**
   * Creates a splitter.
   * @param delimiter where a line ends, non-empty.
   * @param maxLineLength the longest line, in UTF-16 code units (an integer
   *   ≥ 1; default {@linkcode SOCKET_SOURCE_MAX_LINE_LENGTH}).
   * @throws {RangeError} when `delimiter` is not a non-empty string or
   *   `maxLineLength` not an integer ≥ 1.
   */
  constructor(delimiter: string, maxLineLength: number = SOCKET_SOURCE_MAX_LINE_LENGTH) {
    if (!(Number.isSafeInteger(maxLineLength) && maxLineLength >= 1)) {
      throw new RangeError(
        `socket source 'maxLineLength' must be an integer >= 1: current value is ${maxLineLength}`,
      );
    }
    this.#maxLineLength = maxLineLength;
    if (typeof delimiter !== "string" || delimiter.length === 0) {
      throw new RangeError(
        `socket source 'delimiter' must be a non-empty string: current value is ${
          JSON.stringify(delimiter)
        }`,
      );
    }
    this.#delimiter = delimiter;
    this.#stripCr = delimiter === "\n";
  }

  /**
   * Adds a chunk of text.
   * @param text the next decoded text.
   * @returns the lines it completed, in order, without delimiters.
   * @throws {LineTooLongError} when a line (complete, or still without its
   *   delimiter) is longer than `maxLineLength`, naming both lengths and
   *   holding the lines completed before it.
   */
  push(text: string): string[] {
    // The pending text holds no delimiter, so only one that ends in the new
    // text can be found: search the new text (with the pending text's last
    // delimiter.length - 1 code units), and join the pieces only once a line
    // is complete, which keeps a long line linear.
    const window = this.#carry + text;
    const first = window.indexOf(this.#delimiter);
    if (first < 0) {
      this.#pending.push(text);
      this.#pendingLength += text.length;
      this.#carry = window.slice(window.length - (this.#delimiter.length - 1));
      this.#checkLength(this.#pendingLength, " and no delimiter yet", []);
      return [];
    }
    const buffer = this.#pending.join("") + text;
    const lines: string[] = [];
    let start = 0;
    let at = this.#pendingLength - this.#carry.length + first;
    while (at >= 0) {
      this.#checkLength(at - start, "", lines);
      lines.push(this.#line(buffer.slice(start, at)));
      start = at + this.#delimiter.length;
      at = buffer.indexOf(this.#delimiter, start);
    }
    const rest = buffer.slice(start);
    this.#pending = rest.length > 0 ? [rest] : [];
    this.#pendingLength = rest.length;
    this.#carry = rest.slice(rest.length - (this.#delimiter.length - 1));
    this.#checkLength(rest.length, " and no delimiter yet", lines);
    return lines;
  }

  #checkLength(length: number, detail: string, before: readonly string[]): void {
    if (length <= this.#maxLineLength) return;
    throw new LineTooLongError(
      `a line is longer than maxLineLength ${this.#maxLineLength} (UTF-16 code units)${detail}: current length is ${length}`,
      before,
      length,
    );
  }

  /**
   * The input ended.
   * @returns the text after the last delimiter as a last line, or
   *   `undefined` when there is none; the splitter is empty afterwards.
   */
  end(): string | undefined {
    const rest = this.#pending.join("");
    this.#pending = [];
    this.#pendingLength = 0;
    this.#carry = "";
    return rest.length > 0 ? this.#line(rest) : undefined;
  }

  #line(text: string): string {
    return this.#stripCr && text.endsWith("\r") ? text.slice(0, -1) : text;
  }
}
