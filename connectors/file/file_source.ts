/**
 * A bounded source of the lines of text files (Flink's `FileSource` with a
 * line format), with byte-offset positions for exactly-once replay.
 *
 * ## Format
 *
 * - UTF-8 only. A byte order mark at the start of a file is dropped.
 * - Lines end with `\n` or `\r\n`; the line ending is not part of the line.
 *   The last line may lack a line ending. A lone `\r` does not end a line.
 * - Blank lines (empty, or only whitespace) are skipped: they reach neither
 *   the deserializer nor the output, but they count for line numbers.
 * - A line that is not valid UTF-8 is a malformed line, like one the
 *   deserializer rejects.
 *
 * ## Splits and positions
 *
 * One split per file, read in the order given; the split id is the path as
 * given (resolved against the working directory of the process that reads
 * it). A file's records go through its own split output (so it has its own
 * watermarks), created when the file is opened and released at its end.
 * Files are read one after the other, so only the file being read counts
 * for the subtask's watermark: records of a later file with timestamps below
 * an earlier file's watermark are late (as with Flink's `FileSource`). A split's position is the byte offset of the next line and that line's
 * 1-based number, so a restore reopens the file, seeks, and continues with
 * exactly the line after the last one the checkpoint covers. Finished files
 * leave the reader's state. On restore the reader checks that the byte
 * before the offset is still a line end, and fails when the file is now
 * shorter or differs there (a file may grow, not change).
 *
 * ## Malformed lines
 *
 * When the deserializer throws (or a line is not UTF-8), `onError: "fail"`
 * (the default) fails the reader with a {@linkcode DeserializationError}
 * naming the file and line; `onError: "dead-letter"` emits a
 * {@linkcode DeadLetter} to the {@linkcode DEAD_LETTER} side output instead
 * and goes on. Read dead letters with `stream.getSideOutput(DEAD_LETTER)`.
 *
 * ## Invariants
 *
 * - Each `pollNext` call reads at most one chunk (`chunkSize` bytes) and
 *   emits at most `batchSize` records (dead letters count); a call that
 *   returns `END_OF_INPUT` emits nothing.
 * - `snapshotState` must not be called while a `pollNext` promise is
 *   pending (the mailbox never does).
 *
 * Needs `--allow-read` for the files.
 *
 * @example
 * ```ts
 * import { FileSource, DEAD_LETTER } from "./file_source.ts";
 *
 * const readings = FileSource.forLines("examples/data/sensors.csv", {
 *   deserializer: (line) => {
 *     const [id, seconds, temperature] = line.split(",");
 *     if (temperature === undefined) throw new Error("expected 3 fields");
 *     return { id, ts: Number(seconds) * 1000, temperature: Number(temperature) };
 *   },
 *   onError: "dead-letter",
 * });
 * console.assert(readings.boundedness === "bounded" && DEAD_LETTER.id === "dead-letter");
 * ```
 *
 * @module
 */

import { isAbsolute, resolve } from "node:path";
import { OutputTag } from "../../runtime/api/output_tag.ts";
import { SuppressRestartsError } from "../../runtime/failure.ts";
import type {
  Boundedness,
  InputStatus,
  ReaderOutput,
  Source,
  SourceOutput,
  SourceReader,
  SourceReaderContext,
  SourceSplit,
  SplitEnumeratorContext,
} from "../../runtime/api/source.ts";

const DEFAULT_CHUNK_SIZE = 64 * 1024;
const DEFAULT_BATCH_SIZE = 1000;
/** How much of a malformed line an error message quotes, in characters. */
const MAX_QUOTED = 200;
const LF = 0x0a;
const CR = 0x0d;

/** One file of a {@linkcode FileSource} and the position in it. Plain data, MessagePack-encodable. */
export interface FileSplit extends SourceSplit {
  /** The path, as given to {@linkcode FileSource.forLines}. */
  readonly splitId: string;
  /** The file's path, as given. */
  readonly path: string;
  /** The byte offset of the next line to read. */
  readonly offset: number;
  /** The 1-based number of the line at `offset`. */
  readonly line: number;
}

/** A line that could not be turned into a record, sent to {@linkcode DEAD_LETTER}. */
export interface DeadLetter {
  /** The file's path. */
  source: string;
  /** The line's 1-based number. */
  line: number;
  /** The byte offset where the line starts. */
  offset: number;
  /** The line's text, without its line ending. */
  raw: string;
  /** The deserializer's error message. */
  error: string;
}

/** The side output of malformed lines under `onError: "dead-letter"` (id `"dead-letter"`). */
export const DEAD_LETTER: OutputTag<DeadLetter> = new OutputTag<DeadLetter>("dead-letter");

/** Where a malformed line was; see {@linkcode DeserializationError}. */
export interface DeserializationErrorOptions {
  /** The file's path. */
  readonly source: string;
  /** The line's 1-based number. */
  readonly line: number;
  /** The byte offset where the line starts. */
  readonly offset: number;
  /** The line's text. */
  readonly raw: string;
  /** What the deserializer threw. */
  readonly cause: unknown;
}

/**
 * A file of the source does not exist, is a directory, or may not be read
 * (`Deno.errors.NotFound`, `IsADirectory` or `PermissionDenied` when it is
 * opened, kept as `cause`). It fails the job without restarts (a
 * `SuppressRestartsError`): a restart would open the same path and fail the
 * same way, and with the default restart strategy the job would otherwise
 * restart about once a second forever. Other I/O errors stay ordinary
 * failures, which the restart strategy retries.
 *
 * The message reads, for example,
 * `Cannot read /nonexistent.csv in FileSource Source: readings: no such file (…)`.
 * A relative path is named with the absolute path it resolved to in the
 * process that opened it (on a cluster, the worker, whose working directory
 * may differ from the client's): `Cannot read data.csv (resolved against
 * the working directory /srv/weir of this process: /srv/weir/data.csv) …`.
 */
export class FileNotReadableError extends SuppressRestartsError {
  /** The file's path, as given. */
  readonly path: string;

  /**
   * Creates the error.
   * @param message names the path and the source.
   * @param options the path, and the error `Deno.open` threw.
   */
  constructor(message: string, options: { readonly path: string; readonly cause: unknown }) {
    super(message, { cause: options.cause });
    this.name = "FileNotReadableError";
    this.path = options.path;
  }
}

/**
 * A line could not be deserialized, with `onError: "fail"`. It fails the
 * job without restarts, whatever the restart strategy (it is a
 * `SuppressRestartsError`): the line stays malformed, so a restart would fail
 * again. Fix the input or use `onError: "dead-letter"`.
 *
 * The message reads, for example,
 * `Cannot parse line 3 of examples/data/bad.csv: expected 3 fields, got 2 ("sensor_1,35.8")`.
 */
export class DeserializationError extends SuppressRestartsError {
  /** The file's path. */
  readonly source: string;
  /** The line's 1-based number. */
  readonly line: number;
  /** The byte offset where the line starts. */
  readonly offset: number;
  /** The line's text. */
  readonly raw: string;

  /**
   * Creates the error for one malformed line.
   * @param options where the line was and what was thrown (kept as `cause`).
   */
  constructor(options: DeserializationErrorOptions) {
    const quoted = options.raw.length > MAX_QUOTED
      ? `${options.raw.slice(0, MAX_QUOTED)}…`
      : options.raw;
    super(
      `Cannot parse line ${options.line} of ${options.source}: ${messageOf(options.cause)} (${
        JSON.stringify(quoted)
      })`,
      { cause: options.cause },
    );
    this.name = "DeserializationError";
    this.source = options.source;
    this.line = options.line;
    this.offset = options.offset;
    this.raw = options.raw;
  }
}

/** `path`, and for a relative one the absolute path it resolves to here. */
function describePath(path: string): string {
  if (isAbsolute(path)) return path;
  let cwd: string;
  try {
    cwd = Deno.cwd();
  } catch {
    return `${path} (a relative path)`;
  }
  return `${path} (resolved against the working directory ${cwd} of this process: ` +
    `${resolve(cwd, path)})`;
}

/** Options of {@linkcode FileSource.forLines}. */
export interface FileLinesOptions<T> {
  /** Turns a line (without its line ending) into a record. Default: the line itself. */
  readonly deserializer?: (line: string) => T;
  /** What a malformed line does: fail the job (default) or go to {@linkcode DEAD_LETTER}. */
  readonly onError?: "fail" | "dead-letter";
  /** Only `"utf-8"` (the default). */
  readonly encoding?: "utf-8";
  /** Bytes read per `pollNext` call at most (default 65536). */
  readonly chunkSize?: number;
  /** Records per `pollNext` call at most (default 1000). */
  readonly batchSize?: number;
}

/**
 * A bounded source of the lines of one or more files, one split per file
 * (see the module docs). Exactly-once with checkpoints: positions are byte
 * offsets. Build it with {@linkcode FileSource.forLines}.
 */
export class FileSource<T> implements Source<T, FileSplit> {
  /** Always `"bounded"`. */
  readonly boundedness: Boundedness = "bounded";
  /** The files, in reading order. */
  readonly paths: readonly string[];
  /** Turns a line into a record. */
  readonly deserializer: (line: string) => T;
  /** What a malformed line does. */
  readonly onError: "fail" | "dead-letter";
  /** Bytes read per `pollNext` call at most. */
  readonly chunkSize: number;
  /** Records per `pollNext` call at most. */
  readonly batchSize: number;

  private constructor(paths: readonly string[], options: Required<FileLinesOptions<T>>) {
    this.paths = paths;
    this.deserializer = options.deserializer;
    this.onError = options.onError;
    this.chunkSize = options.chunkSize;
    this.batchSize = options.batchSize;
  }

  /**
   * A source of the lines of `paths`, each deserialized with
   * `options.deserializer` (strings when there is none).
   *
   * @example
   * ```ts
   * import { FileSource } from "./file_source.ts";
   * const lines = FileSource.forLines(["a.txt", "b.txt"]);
   * const lengths = FileSource.forLines("a.txt", { deserializer: (line) => line.length });
   * console.assert(lines.paths.length === 2 && lengths.paths[0] === "a.txt");
   * ```
   * @param paths one path or several (non-empty, no duplicates).
   * @param options see {@linkcode FileLinesOptions}.
   * @returns a bounded source with one split per path.
   * @throws {TypeError} on no paths, a duplicate or empty path, an unknown
   *   `onError` or an encoding other than UTF-8.
   * @throws {RangeError} when `chunkSize` or `batchSize` is not a positive integer.
   */
  static forLines<T>(
    paths: string | readonly string[],
    options: FileLinesOptions<T> & { readonly deserializer: (line: string) => T },
  ): FileSource<T>;
  /**
   * A source of the lines of `paths`, as strings (no deserializer).
   * @param paths one path or several (non-empty, no duplicates).
   * @param options see {@linkcode FileLinesOptions}.
   * @returns a bounded source with one split per path.
   * @throws {TypeError} on no paths, a duplicate or empty path, an unknown
   *   `onError` or an encoding other than UTF-8.
   * @throws {RangeError} when `chunkSize` or `batchSize` is not a positive integer.
   */
  static forLines(
    paths: string | readonly string[],
    options?: FileLinesOptions<string>,
  ): FileSource<string>;
  static forLines<T>(
    paths: string | readonly string[],
    options: FileLinesOptions<T> = {},
  ): FileSource<T> {
    const list = typeof paths === "string" ? [paths] : [...paths];
    if (list.length === 0) {
      throw new TypeError("Cannot create a FileSource without paths: current value is []");
    }
    const seen = new Set<string>();
    for (const path of list) {
      if (typeof path !== "string" || path.length === 0) {
        throw new TypeError(
          `Cannot create a FileSource as every path must be a non-empty string: current value is ${
            JSON.stringify(path)
          }`,
        );
      }
      if (seen.has(path)) {
        throw new TypeError(`Cannot create a FileSource as path ${path} is given twice`);
      }
      seen.add(path);
    }
    const encoding: string = options.encoding ?? "utf-8";
    if (encoding.toLowerCase() !== "utf-8") {
      throw new TypeError(
        `Cannot create a FileSource as only the "utf-8" encoding is supported: current value is ${
          JSON.stringify(encoding)
        }`,
      );
    }
    const onError: string = options.onError ?? "fail";
    if (onError !== "fail" && onError !== "dead-letter") {
      throw new TypeError(
        `Cannot create a FileSource as 'onError' must be "fail" or "dead-letter": current value is ${
          JSON.stringify(onError)
        }`,
      );
    }
    const chunkSize = positiveInteger("chunkSize", options.chunkSize ?? DEFAULT_CHUNK_SIZE);
    const batchSize = positiveInteger("batchSize", options.batchSize ?? DEFAULT_BATCH_SIZE);
    const deserializer = options.deserializer ?? ((line: string) => line as T);
    return new FileSource<T>(list, {
      deserializer,
      onError,
      encoding: "utf-8",
      chunkSize,
      batchSize,
    });
  }

  /** One split per path, at offset 0, line 1, in the order given (independent of parallelism). */
  enumerateSplits(_context: SplitEnumeratorContext): FileSplit[] {
    return this.paths.map((path) => ({ splitId: path, path, offset: 0, line: 1 }));
  }

  /** Creates the reader of one source subtask. */
  createReader(context: SourceReaderContext): SourceReader<T, FileSplit> {
    return new FileReader(this, context.operatorName);
  }
}

function positiveInteger(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) {
    throw new RangeError(
      `Cannot create a FileSource as '${name}' must be a positive integer: current value is ${value}`,
    );
  }
  return value;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

interface MutableSplit {
  readonly path: string;
  offset: number;
  line: number;
}

/** The file being read: bytes from `base` on are in `buffer`, consumed up to `pos`. */
interface OpenFile<T> {
  readonly split: MutableSplit;
  readonly file: Deno.FsFile;
  /** The split's output, created when the file is opened and released at its end. */
  readonly output: SourceOutput<T>;
  buffer: Uint8Array;
  pos: number;
  eof: boolean;
}

const strictDecoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const lossyDecoder = new TextDecoder("utf-8", { ignoreBOM: true });

class FileReader<T> implements SourceReader<T, FileSplit> {
  readonly #source: FileSource<T>;
  readonly #operatorName: string;
  readonly #readBuffer: Uint8Array;
  #queue: MutableSplit[] = [];
  #open: OpenFile<T> | undefined;

  constructor(source: FileSource<T>, operatorName: string) {
    this.#source = source;
    this.#operatorName = operatorName;
    this.#readBuffer = new Uint8Array(source.chunkSize);
  }

  addSplits(splits: FileSplit[]): void {
    for (const { splitId, path, offset, line } of splits) {
      if (
        typeof path !== "string" || !Number.isSafeInteger(offset) || offset < 0 ||
        !Number.isSafeInteger(line) || line < 1
      ) {
        throw new Error(
          `Cannot add split ${splitId} to FileSource ${this.#operatorName}: it is not a file split (path ${path}, offset ${offset}, line ${line})`,
        );
      }
      this.#queue.push({ path, offset, line });
    }
  }

  async pollNext(output: ReaderOutput<T>): Promise<InputStatus> {
    let emitted = 0;
    let readThisCall = false;
    while (emitted < this.#source.batchSize) {
      const current = this.#open ?? await this.#openNext(output);
      if (current === undefined) return emitted > 0 ? "MORE_AVAILABLE" : "END_OF_INPUT";
      const { buffer } = current;
      const newline = buffer.indexOf(LF, current.pos);
      if (newline >= 0) {
        const end = newline > current.pos && buffer[newline - 1] === CR ? newline - 1 : newline;
        if (this.#emitLine(current, buffer.subarray(current.pos, end), output)) emitted++;
        current.split.offset += newline + 1 - current.pos;
        current.split.line++;
        current.pos = newline + 1;
        continue;
      }
      if (current.eof) {
        if (current.pos < buffer.length) {
          // The last line, without a line ending (a CRLF file may lack only the LF).
          const end = buffer[buffer.length - 1] === CR ? buffer.length - 1 : buffer.length;
          if (this.#emitLine(current, buffer.subarray(current.pos, end), output)) emitted++;
          current.split.offset += buffer.length - current.pos;
          current.split.line++;
          current.pos = buffer.length;
        }
        this.#open = undefined;
        current.file.close();
        output.releaseOutputForSplit(current.split.path);
        continue;
      }
      if (readThisCall) break;
      readThisCall = true;
      await this.#readChunk(current);
    }
    return "MORE_AVAILABLE";
  }

  snapshotState(_checkpointId: number): FileSplit[] {
    const splits = this.#open === undefined ? this.#queue : [this.#open.split, ...this.#queue];
    return splits.map(({ path, offset, line }) => ({ splitId: path, path, offset, line }));
  }

  close(): void {
    this.#open?.file.close();
    this.#open = undefined;
  }

  /** Emits one line's record (through the file's split output) or dead letter; false for a skipped blank line. */
  #emitLine(current: OpenFile<T>, bytes: Uint8Array, output: ReaderOutput<T>): boolean {
    const { path, offset, line } = current.split;
    let text: string;
    let failure: { cause: unknown } | undefined;
    try {
      text = strictDecoder.decode(bytes);
    } catch (error) {
      text = lossyDecoder.decode(bytes);
      failure = { cause: new TypeError(`invalid UTF-8 (${messageOf(error)})`) };
    }
    if (offset === 0 && text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    if (text.trim() === "") return false;
    let record: T | undefined;
    if (failure === undefined) {
      try {
        record = this.#source.deserializer(text);
      } catch (cause) {
        failure = { cause };
      }
    }
    if (failure !== undefined) {
      if (this.#source.onError === "fail") {
        throw new DeserializationError({ source: path, line, offset, raw: text, ...failure });
      }
      output.output(DEAD_LETTER, {
        source: path,
        line,
        offset,
        raw: text,
        error: messageOf(failure.cause),
      });
      return true;
    }
    current.output.collect(record as T);
    return true;
  }

  async #openNext(output: ReaderOutput<T>): Promise<OpenFile<T> | undefined> {
    const split = this.#queue.shift();
    if (split === undefined) return undefined;
    const { path, offset } = split;
    let file: Deno.FsFile;
    try {
      file = await Deno.open(path, { read: true });
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) {
        throw new FileNotReadableError(
          `Cannot read ${describePath(path)} in FileSource ${this.#operatorName}: no such file ` +
            `(a restart would not find it either, so the job fails without restarts)`,
          { path, cause: error },
        );
      }
      if (
        error instanceof Deno.errors.PermissionDenied || error instanceof Deno.errors.IsADirectory
      ) {
        throw new FileNotReadableError(
          `Cannot read ${describePath(path)} in FileSource ${this.#operatorName}: ` +
            `${messageOf(error)} (a restart would fail the same way, so the job fails without ` +
            `restarts)`,
          { path, cause: error },
        );
      }
      throw new Error(
        `Cannot open ${path} in FileSource ${this.#operatorName}: ${messageOf(error)}`,
        {
          cause: error,
        },
      );
    }
    try {
      if (offset > 0) await this.#checkResumable(file, split);
      await file.seek(offset, Deno.SeekMode.Start);
    } catch (error) {
      file.close();
      throw error;
    }
    const current: OpenFile<T> = {
      split,
      file,
      output: output.createOutputForSplit(path),
      buffer: new Uint8Array(0),
      pos: 0,
      eof: false,
    };
    this.#open = current;
    return current;
  }

  /** Fails unless the byte before `offset` is the line end a checkpoint left there. */
  async #checkResumable(file: Deno.FsFile, split: MutableSplit): Promise<void> {
    const { path, offset, line } = split;
    const { size } = await file.stat();
    const before = new Uint8Array(1);
    let lineEnd = false;
    if (size >= offset) {
      await file.seek(offset - 1, Deno.SeekMode.Start);
      lineEnd = (await file.read(before)) === 1 && before[0] === LF;
    }
    if (!lineEnd) {
      throw new Error(
        `Cannot resume ${path} in FileSource ${this.#operatorName} at byte offset ${offset} (line ${line}): ${
          size < offset ? `the file now has only ${size} bytes` : "no line ends there"
        }; the file changed since the checkpoint`,
      );
    }
  }

  async #readChunk(current: OpenFile<T>): Promise<void> {
    let read: number | null;
    try {
      read = await current.file.read(this.#readBuffer);
    } catch (error) {
      throw new Error(
        `Cannot read ${current.split.path} in FileSource ${this.#operatorName}: ${
          messageOf(error)
        }`,
        { cause: error },
      );
    }
    if (read === null) {
      current.eof = true;
      return;
    }
    const rest = current.buffer.subarray(current.pos);
    const next = new Uint8Array(rest.length + read);
    next.set(rest, 0);
    next.set(this.#readBuffer.subarray(0, read), rest.length);
    current.buffer = next;
    current.pos = 0;
  }
}
