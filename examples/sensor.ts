/**
 * The sensor readings of the seed examples: CSV lines
 * `id,epochSeconds,temperature`, parsed strictly, and a file source over
 * them that either fails the job on a malformed line (naming the file and
 * line) or, with `deadLetter`, sends the line to the `DEAD_LETTER` side
 * output. Shared by the examples; not part of Weir's API.
 *
 * With `--socket host:port` (seeds 1–3) the readings come from a TCP socket
 * instead, as the seeds' `nc -lk 7777` does: `env.socketTextStream`, whose
 * lines {@linkcode ParseSocketReadings} parses the same way (blank lines
 * skipped; a malformed line fails the job without restarts, naming the
 * socket and line number, or goes to `DEAD_LETTER` with offset -1, since a socket has no offsets).
 * The socket source is at-most-once and ends when the peer closes.
 *
 * @module
 */

import {
  type Collector,
  DEAD_LETTER,
  FileSource,
  type ProcessContext,
  type ProcessFunction,
  type SingleOutputStreamOperator,
  type StreamExecutionEnvironment,
  SuppressRestartsError,
  WatermarkStrategy,
} from "../mod.ts";

/** One reading. */
export interface SensorReading {
  /** Sensor id, e.g. `sensor_1`. */
  readonly id: string;
  /** Event time, in seconds since the epoch. */
  readonly timestamp: number;
  /** Temperature, in degrees. */
  readonly temperature: number;
}

/**
 * Parses `id,epochSeconds,temperature`.
 * @throws {Error} naming what is wrong: the field count, an empty id, a bad number.
 */
export function parseSensorReading(line: string): SensorReading {
  const fields = line.split(",").map((f) => f.trim());
  if (fields.length !== 3) {
    throw new Error(`expected 3 fields (id,epochSeconds,temperature), got ${fields.length}`);
  }
  const [id, seconds, temperature] = fields as [string, string, string];
  if (id === "") throw new Error("the sensor id is empty");
  const timestamp = Number(seconds);
  if (seconds === "" || !Number.isInteger(timestamp)) {
    throw new Error(`epochSeconds must be an integer, got "${seconds}"`);
  }
  const value = Number(temperature);
  if (temperature === "" || !Number.isFinite(value)) {
    throw new Error(`temperature must be a number, got "${temperature}"`);
  }
  return { id, timestamp, temperature: value };
}

/** A bounded source of the readings in `path`. */
export function sensorFile(path: string, deadLetter: boolean): FileSource<SensorReading> {
  return FileSource.forLines(path, {
    deserializer: parseSensorReading,
    onError: deadLetter ? "dead-letter" : "fail",
  });
}

/**
 * Parses `--socket host:port` (an IPv6 host in brackets: `[::1]:7777`).
 * @throws {RangeError} naming the flag and its value when it is not `host:port`
 *   with a port in 1..65535.
 */
export function parseSocketAddress(value: string): { host: string; port: number } {
  const colon = value.lastIndexOf(":");
  const host = colon > 0 ? value.slice(0, colon).replace(/^\[(.*)\]$/, "$1") : "";
  const port = Number(value.slice(colon + 1));
  if (colon <= 0 || host === "" || !Number.isInteger(port) || port < 1 || port > 65535) {
    throw new RangeError(
      `--socket must be host:port with a port in 1..65535: current value is ${
        JSON.stringify(value)
      }`,
    );
  }
  return { host, port };
}

/**
 * Parses socket lines into readings: blank lines are skipped, a malformed
 * line fails the job without restarts (a `SuppressRestartsError` naming the socket and the line's number since the
 * start of this attempt) or, with `deadLetter`, goes to `DEAD_LETTER`.
 */
export class ParseSocketReadings implements ProcessFunction<string, SensorReading> {
  /** `host:port`, for messages. */
  readonly address: string;
  /** Send malformed lines to `DEAD_LETTER` instead of failing. */
  readonly deadLetter: boolean;
  private line = 0;
  constructor(address: string, deadLetter: boolean) {
    this.address = address;
    this.deadLetter = deadLetter;
  }
  processElement(raw: string, ctx: ProcessContext, out: Collector<SensorReading>): void {
    this.line++;
    if (raw.trim() === "") return;
    let reading: SensorReading;
    try {
      reading = parseSensorReading(raw);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      if (!this.deadLetter) {
        // Like the file source's DeserializationError: a restart would not
        // make the line well-formed, so the job fails once.
        throw new SuppressRestartsError(
          `socket ${this.address}, line ${this.line}: ${message}: ${JSON.stringify(raw)}`,
        );
      }
      const source = `socket ${this.address}`;
      ctx.output(DEAD_LETTER, { source, line: this.line, offset: -1, raw, error: message });
      return;
    }
    out.collect(reading);
  }
}

/** Where the seed examples read their readings. */
export interface SensorInput {
  /** The CSV file (used unless `socket` is given). */
  readonly path: string;
  /** `host:port` to read lines from instead of the file. */
  readonly socket?: string | undefined;
  /** Malformed lines go to `DEAD_LETTER` instead of failing the job. */
  readonly deadLetter: boolean;
}

/**
 * The readings of a seed example, from the file or, with `socket`, from a
 * TCP socket; the stream carries the `DEAD_LETTER` side output either way.
 * @throws {RangeError} when `socket` is not `host:port`.
 */
export function readSensors(
  env: StreamExecutionEnvironment,
  input: SensorInput,
): SingleOutputStreamOperator<SensorReading> {
  if (input.socket === undefined) {
    return env.fromSource(
      sensorFile(input.path, input.deadLetter),
      WatermarkStrategy.noWatermarks(),
      "sensors",
    ).uid("sensor-source");
  }
  const { host, port } = parseSocketAddress(input.socket);
  return env.socketTextStream(host, port).uid("socket-source")
    .process(new ParseSocketReadings(input.socket, input.deadLetter)).uid("sensor-parse")
    .name("ParseSensorReadings");
}
