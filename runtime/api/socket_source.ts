/**
 * Lines of text from a TCP socket (Flink's `socketTextStream` and its
 * `SocketTextStreamFunction`): the source of the seeds' `nc -lk 7777`
 * examples. A client: it connects to `host:port` and reads what the peer
 * writes, cut at a delimiter.
 *
 * ## Guarantee: at-most-once, whatever the checkpointing
 *
 * A socket cannot be replayed: what was read is gone from the peer. After
 * a failure the job restores its last checkpoint and the source reconnects,
 * so the lines read between that checkpoint and the failure are lost (their
 * effects were rolled back with the state, and nobody sends them again).
 * Checkpointing does not make this source better than at-most-once; use a
 * replayable source (JetStream, files) for exactly-once. Its checkpointed
 * split holds only how many lines it had emitted, for the logs.
 *
 * ## Reading
 *
 * - Bytes are decoded as UTF-8 (a character cut between two reads is kept
 *   until its end arrives) and cut at `delimiter` (default `"\n"`; any
 *   non-empty string). A line may span any number of reads.
 * - With the `"\n"` delimiter a line's trailing `"\r"` is dropped, so CRLF
 *   input gives the same lines (as Flink does).
 * - When a connection ends, the text after the last delimiter, if not
 *   empty, is emitted as a last line of that connection (Flink emits it
 *   too).
 * - Bytes that are not valid UTF-8 each become U+FFFD (the replacement
 *   character), as Java's decoder in Flink's source does; the line keeps
 *   its place and the rest of it.
 * - A line may be at most `maxLineLength` UTF-16 code units long (default
 *   {@linkcode SOCKET_SOURCE_MAX_LINE_LENGTH}): a peer that sends more
 *   without a delimiter fails the reader with a {@linkcode SocketSourceError}
 *   naming `host:port`, the line and the limit, instead of growing memory
 *   until the process dies (Flink's source has no such bound). Finding the
 *   delimiter costs time linear in the bytes read, however long a line is
 *   (the breaker measured the first version, which searched the whole
 *   pending line again on every read, at 4.4 s for one 32 MiB line).
 * - Reading pauses while {@linkcode SOCKET_SOURCE_QUEUE_LINES} lines wait
 *   to be emitted, so a slow job slows the peer through TCP instead of
 *   growing memory.
 *
 * ## Connecting, reconnecting and the end
 *
 * Flink's policy: `maxRetry` reconnection attempts (default 0; -1 retries
 * forever), `retryDelayMs` apart (default 500). Attempts are counted over the
 * whole run of a reader, as in Flink.
 *
 * - A connection that cannot be made (refused, unreachable) is retried while
 *   attempts remain; then the reader fails with a
 *   {@linkcode SocketSourceError} naming `host:port`, the attempts and the
 *   last cause. The job's restart strategy decides what follows.
 * - When the peer closes the connection, the reader reconnects while
 *   attempts remain; when none remain (always, with the default 0), the
 *   source ends: a job reading only sockets then finishes, like Flink's.
 * - A reset by the peer (TCP RST) between two lines ends the connection as a
 *   close does. A reset in the middle of a line fails the reader with a
 *   {@linkcode SocketSourceError} naming `host:port`, the line and how much
 *   of it was read, after the complete lines before it: the reset may have
 *   cut the line short, so it is not emitted as if it were whole (Flink's
 *   source fails on any reset).
 *
 * ## Boundedness: always `"continuous-unbounded"`
 *
 * Even with `maxRetry` 0, when the source ends as soon as the peer closes,
 * nothing bounds the input: the peer decides when (if ever) it closes, so
 * the job cannot count on its end for a final checkpoint. Flink treats
 * `socketTextStream` the same way (a legacy `SourceFunction`, whose
 * `LegacySourceTransformation` is `CONTINUOUS_UNBOUNDED`). This matters to
 * `execute()`'s delivery check (`delivery_check.ts`): an exactly-once sink
 * behind a socket source with checkpointing off is refused, since it would
 * commit only when the peer closes, and a failure before that would lose
 * every line read (the socket cannot replay them). The source still ends
 * when the peer closes and no retry is left; a job whose sources all end
 * still takes its final checkpoint then, as for any source.
 *
 * ## Parallelism
 *
 * A non-parallel source (Flink's `socketTextStream` is one too): one split,
 * `socket-<host>:<port>`; `enumerateSplits` refuses a parallelism above 1.
 *
 * @example
 * ```ts ignore
 * const env = StreamExecutionEnvironment.getExecutionEnvironment();
 * env.socketTextStream("localhost", 7777).print();
 * await env.execute("lines from nc -lk 7777");
 * ```
 *
 * @module
 */

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
} from "./source.ts";
import { type Clock, sleepUntil } from "../time/clock.ts";
import { checkCountingSplit } from "./counting_split.ts";
import { LineSplitter, LineTooLongError, SOCKET_SOURCE_MAX_LINE_LENGTH } from "./line_splitter.ts";

export { LineSplitter, LineTooLongError, SOCKET_SOURCE_MAX_LINE_LENGTH } from "./line_splitter.ts";
import { checkOptions as checkOptionKinds, type OptionsShape } from "./options_check.ts";

/** The known keys of {@linkcode SocketTextSourceOptions} and the kinds of their values. */
const SOCKET_OPTIONS: OptionsShape<SocketTextSourceOptions> = {
  delimiter: "string",
  maxRetry: "number",
  retryDelayMs: "number",
  maxLineLength: "number",
};

/** Lines the reader holds before it stops reading the socket (backpressure). */
export const SOCKET_SOURCE_QUEUE_LINES = 10_000;

/** Lines emitted per `pollNext` at most. */
const BATCH_SIZE = 1000;

/** Options of {@linkcode SocketTextSource} and `env.socketTextStream`. */
export interface SocketTextSourceOptions {
  /** Where one line ends: a non-empty string, default `"\n"` (CRLF handled, see the module docs). */
  readonly delimiter?: string;
  /**
   * Reconnection attempts after a failed connect or a closed connection:
   * an integer ≥ 0, or -1 for forever. Default 0 (Flink's default): the
   * source ends when the peer closes, and fails when it cannot connect.
   */
  readonly maxRetry?: number;
  /** Time between reconnection attempts, in ms (an integer ≥ 0). Default 500. */
  readonly retryDelayMs?: number;
  /**
   * The longest line, in UTF-16 code units (an integer ≥ 1), default
   * {@linkcode SOCKET_SOURCE_MAX_LINE_LENGTH}; a longer one fails the reader.
   */
  readonly maxLineLength?: number;
}

/** The one split of a socket source. Plain data, MessagePack-encodable. */
export interface SocketSplit extends SourceSplit {
  /** `socket-<host>:<port>`. */
  readonly splitId: string;
  /** Lines emitted so far by this split (informational: a socket cannot be replayed). */
  readonly linesEmitted: number;
}

/**
 * Checks a socket split read back from a checkpoint (it passed through
 * MessagePack, so it may be anything a corrupt or foreign checkpoint holds).
 *
 * @param raw the restored split.
 * @param where names the source, for the message.
 * @returns the split, as `{ splitId, linesEmitted }`.
 * @throws {SuppressRestartsError} naming the field that is wrong and its
 *   current value: a restart would read the same checkpoint again.
 */
export function checkSocketSplit(raw: unknown, where: string): SocketSplit {
  return checkCountingSplit(raw, where, {
    kind: "socket source split",
    prefix: "socket-",
    countField: "linesEmitted",
  });
}

/**
 * The socket source could not read `host:port`: it could not connect with
 * the attempts it had, or the connection failed while reading. A retry of
 * the job may succeed (the peer may come back), so this is a plain error:
 * the restart strategy applies.
 */
export class SocketSourceError extends Error {
  /**
   * Builds the error.
   * @param message names the source's address, the attempts made and the cause.
   * @param options the underlying network error as `cause`.
   */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "SocketSourceError";
  }
}

function checkOptions(options: SocketTextSourceOptions): Required<SocketTextSourceOptions> {
  checkOptionKinds("socketTextStream", options, SOCKET_OPTIONS);
  const delimiter = options.delimiter ?? "\n";
  const maxLineLength = options.maxLineLength ?? SOCKET_SOURCE_MAX_LINE_LENGTH;
  new LineSplitter(delimiter, maxLineLength); // validates both
  const maxRetry = options.maxRetry ?? 0;
  if (!(Number.isSafeInteger(maxRetry) && maxRetry >= -1)) {
    throw new RangeError(
      `socket source 'maxRetry' must be an integer >= 0, or -1 for forever: current value is ${maxRetry}`,
    );
  }
  const retryDelayMs = options.retryDelayMs ?? 500;
  if (!(Number.isSafeInteger(retryDelayMs) && retryDelayMs >= 0)) {
    throw new RangeError(
      `socket source 'retryDelayMs' must be an integer >= 0: current value is ${retryDelayMs}`,
    );
  }
  return { delimiter, maxRetry, retryDelayMs, maxLineLength };
}

/**
 * Lines of text from `host:port`, at-most-once (see the module docs).
 * `env.socketTextStream(host, port, options)` adds it with parallelism 1.
 */
export class SocketTextSource implements Source<string, SocketSplit> {
  /**
   * Always `"continuous-unbounded"`, whatever `maxRetry` (see "Boundedness"
   * in the module docs): the peer, not the job, decides when the input ends.
   */
  readonly boundedness: Boundedness = "continuous-unbounded";
  /** The host to connect to. */
  readonly host: string;
  /** The TCP port, 1–65535. */
  readonly port: number;
  /** The validated options. */
  readonly options: Readonly<Required<SocketTextSourceOptions>>;

  /**
   * Creates the source; nothing connects until a reader starts.
   * @param host the host name or address.
   * @param port the TCP port.
   * @param options see {@linkcode SocketTextSourceOptions}.
   * @throws {RangeError} for an empty host, a port outside 1–65535, an
   *   option out of range (naming it and its current value), or an unknown
   *   option (`checkOptions`).
   * @throws {TypeError} for an option of the wrong type (`maxRetry: "3"`).
   */
  constructor(host: string, port: number, options: SocketTextSourceOptions = {}) {
    if (typeof host !== "string" || host.length === 0) {
      throw new RangeError(
        `socketTextStream 'host' must be a non-empty string: current value is ${
          JSON.stringify(host)
        }`,
      );
    }
    if (!(Number.isInteger(port) && port >= 1 && port <= 65535)) {
      throw new RangeError(
        `socketTextStream 'port' must be an integer in 1..65535: current value is ${port}`,
      );
    }
    this.host = host;
    this.port = port;
    this.options = checkOptions(options);
  }

  /** `host:port`. */
  get address(): string {
    return `${this.host}:${this.port}`;
  }

  /**
   * The one split.
   * @throws {RangeError} when `parallelism` is not 1 (a non-parallel source).
   */
  enumerateSplits(context: SplitEnumeratorContext): SocketSplit[] {
    if (context.parallelism !== 1) {
      throw new RangeError(
        `socketTextStream(${this.address}) is a non-parallel source: its parallelism must be 1: current value is ${context.parallelism}`,
      );
    }
    return [{ splitId: `socket-${this.address}`, linesEmitted: 0 }];
  }

  /** Creates the reader of the source subtask. */
  createReader(context: SourceReaderContext): SourceReader<string, SocketSplit> {
    return new SocketReader(this, context);
  }
}

type ReadState =
  | { readonly kind: "reading" }
  | { readonly kind: "ended" }
  | { readonly kind: "failed"; readonly error: SocketSourceError };

class SocketReader implements SourceReader<string, SocketSplit> {
  readonly #source: SocketTextSource;
  readonly #clock: Clock;
  readonly #operatorName: string;
  readonly #lines: string[] = [];
  #head = 0;
  #split: SocketSplit | undefined;
  #output: SourceOutput<string> | undefined;
  #linesEmitted = 0;
  #state: ReadState = { kind: "reading" };
  #conn: Deno.Conn | undefined;
  #closed = false;
  #wakeReader: (() => void) | undefined;
  #wakePoller: (() => void) | undefined;
  #cancelSleep: (() => void) | undefined;
  #attempts = 0;

  constructor(source: SocketTextSource, context: SourceReaderContext) {
    this.#source = source;
    this.#clock = context.clock;
    this.#operatorName = context.operatorName;
  }

  addSplits(splits: SocketSplit[]): void {
    for (const raw of splits) {
      const split = checkSocketSplit(raw, `socket source ${this.#operatorName}`);
      if (this.#split !== undefined) {
        throw new Error(
          `Cannot add split ${split.splitId} to socket source ${this.#operatorName}: it already reads ${this.#split.splitId}`,
        );
      }
      this.#split = split;
      this.#linesEmitted = split.linesEmitted;
      this.#run().catch((error) => {
        this.#state = {
          kind: "failed",
          error: error instanceof SocketSourceError ? error : new SocketSourceError(
            `socket source ${this.#operatorName} (${this.#source.address}) failed: ${
              error instanceof Error ? error.message : String(error)
            }`,
            { cause: error },
          ),
        };
        this.#wake();
      });
    }
  }

  pollNext(output: ReaderOutput<string>): InputStatus {
    if (this.#split === undefined) return "END_OF_INPUT"; // no split: nothing to read
    const available = this.#lines.length - this.#head;
    if (available > 0) {
      const out = this.#output ??= output.createOutputForSplit(this.#split.splitId);
      const n = Math.min(available, BATCH_SIZE);
      for (let i = 0; i < n; i++) out.collect(this.#lines[this.#head++]!);
      this.#linesEmitted += n;
      if (this.#head > 4096 && this.#head * 2 > this.#lines.length) {
        this.#lines.splice(0, this.#head);
        this.#head = 0;
      }
      const wake = this.#wakeReader;
      this.#wakeReader = undefined;
      wake?.();
      return "MORE_AVAILABLE";
    }
    switch (this.#state.kind) {
      case "failed":
        throw this.#state.error;
      case "ended":
        if (this.#output !== undefined) output.releaseOutputForSplit(this.#split.splitId);
        this.#output = undefined;
        return "END_OF_INPUT";
      default:
        return "NOTHING_AVAILABLE";
    }
  }

  isAvailable(): Promise<void> {
    if (this.#lines.length > this.#head || this.#state.kind !== "reading" || this.#closed) {
      return Promise.resolve();
    }
    return new Promise((resolve) => this.#wakePoller = resolve);
  }

  snapshotState(_checkpointId: number): SocketSplit[] {
    if (this.#split === undefined) return [];
    return [{ splitId: this.#split.splitId, linesEmitted: this.#linesEmitted }];
  }

  close(): void {
    this.#closed = true;
    this.#cancelSleep?.();
    try {
      this.#conn?.close();
    } catch {
      // already closed by the peer or by the read loop
    }
    this.#conn = undefined;
    const wake = this.#wakeReader;
    this.#wakeReader = undefined;
    wake?.();
    this.#wake();
  }

  #wake(): void {
    const wake = this.#wakePoller;
    this.#wakePoller = undefined;
    wake?.();
  }

  /** Whether another reconnection attempt is allowed; counts it. */
  #mayRetry(): boolean {
    const { maxRetry } = this.#source.options;
    if (maxRetry !== -1 && this.#attempts >= maxRetry) return false;
    this.#attempts++;
    return true;
  }

  async #pause(): Promise<void> {
    const sleep = sleepUntil(this.#clock, this.#clock.now() + this.#source.options.retryDelayMs);
    this.#cancelSleep = sleep.cancel;
    await sleep.promise;
    this.#cancelSleep = undefined;
  }

  /** The read loop: connect, read until the peer closes, reconnect by the policy. */
  async #run(): Promise<void> {
    const { host, port, address } = this.#source;
    for (;;) {
      let conn: Deno.Conn;
      try {
        conn = await Deno.connect({ hostname: host, port, transport: "tcp" });
      } catch (error) {
        if (this.#closed) return;
        if (this.#mayRetry()) {
          await this.#pause();
          if (this.#closed) return;
          continue;
        }
        throw new SocketSourceError(
          `socket source ${this.#operatorName} cannot connect to ${address}, with ${this.#attempts} of maxRetry ${this.#source.options.maxRetry} reconnection attempts used: ${
            error instanceof Error ? error.message : String(error)
          }`,
          { cause: error },
        );
      }
      if (this.#closed) {
        conn.close();
        return;
      }
      this.#conn = conn;
      await this.#readConnection(conn);
      this.#conn = undefined;
      if (this.#closed) return;
      if (!this.#mayRetry()) {
        this.#state = { kind: "ended" };
        this.#wake();
        return;
      }
      await this.#pause();
      if (this.#closed) return;
    }
  }

  /** Reads one connection until the peer closes it; emits its last partial line. */
  async #readConnection(conn: Deno.Conn): Promise<void> {
    const decoder = new TextDecoder("utf-8");
    const { delimiter, maxLineLength } = this.#source.options;
    const splitter = new LineSplitter(delimiter, maxLineLength);
    let linesRead = 0;
    const split = (text: string): string[] => {
      try {
        const lines = splitter.push(text);
        linesRead += lines.length;
        return lines;
      } catch (error) {
        if (error instanceof LineTooLongError) {
          // The lines before the long one are good: they are emitted before the failure.
          this.#enqueue([...error.lines]);
          linesRead += error.lines.length;
        }
        throw new SocketSourceError(
          `socket source ${this.#operatorName} cannot read ${this.#source.address}: line ${
            linesRead + 1
          } of the connection: ${error instanceof Error ? error.message : String(error)}`,
          { cause: error },
        );
      }
    };
    const buffer = new Uint8Array(64 * 1024);
    let reset = false;
    try {
      for (;;) {
        while (this.#lines.length - this.#head >= SOCKET_SOURCE_QUEUE_LINES && !this.#closed) {
          await new Promise<void>((resolve) => this.#wakeReader = resolve);
        }
        if (this.#closed) return;
        let n: number | null;
        try {
          n = await conn.read(buffer);
        } catch (error) {
          if (this.#closed) return;
          // A reset by the peer ends the connection like a close would, except
          // for a line it cut (see below; a fix of the breaker's).
          if (error instanceof Deno.errors.ConnectionReset) {
            reset = true;
            break;
          }
          throw new SocketSourceError(
            `socket source ${this.#operatorName} failed reading ${this.#source.address}: ${
              error instanceof Error ? error.message : String(error)
            }`,
            { cause: error },
          );
        }
        if (n === null) break;
        this.#enqueue(split(decoder.decode(buffer.subarray(0, n), { stream: true })));
      }
      const tail = split(decoder.decode());
      const last = splitter.end();
      if (last !== undefined && reset) {
        // After a reset the text after the last delimiter may be a line cut
        // short: it is not emitted as a line, and the reader fails saying so.
        this.#enqueue(tail);
        throw new SocketSourceError(
          `socket source ${this.#operatorName} cannot read ${this.#source.address}: the peer reset the connection ` +
            `in line ${linesRead + 1} of the connection; the ${last.length} UTF-16 code unit(s) ` +
            `of it read so far are not emitted, since the reset may have cut the line short`,
        );
      }
      if (last !== undefined) tail.push(last);
      this.#enqueue(tail);
    } finally {
      try {
        conn.close();
      } catch {
        // closed already
      }
    }
  }

  #enqueue(lines: string[]): void {
    if (lines.length === 0) return;
    for (const line of lines) this.#lines.push(line);
    this.#wake();
  }
}
