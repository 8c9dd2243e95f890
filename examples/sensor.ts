/**
 * The sensor readings of the seed examples: CSV lines
 * `id,epochSeconds,temperature`, parsed strictly, and a file source over
 * them that either fails the job on a malformed line (naming the file and
 * line) or, with `deadLetter`, sends the line to the `DEAD_LETTER` side
 * output. Shared by the examples; not part of Weir's API.
 *
 * @module
 */

import { FileSource } from "../mod.ts";

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
