/**
 * The file sink's part file names, its committable and its writer state,
 * with their validation when read back from a checkpoint.
 *
 * ## Part file names (in the bucket's directory)
 *
 * | state | name |
 * |---|---|
 * | in-progress | `.<prefix>-<subtask>-<counter><suffix>.inprogress.<random>` |
 * | pending | `.<prefix>-<subtask>-<counter><suffix>.pending` |
 * | finished | `<prefix>-<subtask>-<counter><suffix>` |
 *
 * `<prefix>` is `part-<uid>` by default, `<suffix>` `.<extension of the
 * format>`; `<random>` is 8 hex digits. Readers that skip hidden files
 * (`.`-names, as Hadoop-style readers do) see finished files only.
 *
 * ## Committable (checkpointed, MessagePack)
 *
 * | field | type | meaning |
 * |---|---|---|
 * | `pendingPath` | string | the pending file, relative to the output directory |
 * | `finalPath` | string | its finished name, in the same directory |
 * | `sizeBytes` | integer ≥ 0 | its size, checked before and after the rename |
 *
 * Paths use `/`; the directory part is a bucket id (see
 * `bucket_assigner.ts`), the pending name is `.` + the final name +
 * `.pending`.
 *
 * ## Writer state (checkpointed, one item per subtask)
 *
 * | field | type | meaning |
 * |---|---|---|
 * | `subtask` | integer ≥ 0 | the subtask that wrote it |
 * | `nextCounter` | integer ≥ 0 | the counter its next part file gets |
 *
 * No other field is allowed in either.
 *
 * @module
 */

import { SinkStateError } from "../../runtime/api/sink_v2.ts";
import { bucketIdProblem } from "./bucket_assigner.ts";

/** A pending part file to make finished (the file sink's committable). */
export interface FileSinkCommittable {
  /** The pending file, relative to the output directory (`/`-separated). */
  readonly pendingPath: string;
  /** The finished file it becomes, in the same directory. */
  readonly finalPath: string;
  /** Its size in bytes. */
  readonly sizeBytes: number;
}

/** A subtask's part file counter (the file sink's writer state). */
export interface FileSinkWriterState {
  /** The subtask whose counter this is. */
  readonly subtask: number;
  /** The counter of its next part file. */
  readonly nextCounter: number;
}

/** How a sink subtask's part files are named: `<prefix>-<subtask>-<counter><suffix>`. */
export interface PartFileNaming {
  /** E.g. `part-<uid>`; no `/`, not starting with `.`. */
  readonly prefix: string;
  /** E.g. `.csv`; may be empty. */
  readonly suffix: string;
}

/** What kind of part file a name is, and whose. */
export interface ParsedPartFileName {
  /** `finished`, `pending` or `in-progress`. */
  readonly kind: "finished" | "pending" | "in-progress";
  /** The subtask that wrote it. */
  readonly subtask: number;
  /** Its counter. */
  readonly counter: number;
  /** The finished name it has or will have. */
  readonly finalName: string;
}

/** The finished name of a part file. */
export function finalPartName(naming: PartFileNaming, subtask: number, counter: number): string {
  return `${naming.prefix}-${subtask}-${counter}${naming.suffix}`;
}

/** The pending name of the part file whose finished name is `finalName`. */
export function pendingPartName(finalName: string): string {
  return `.${finalName}.pending`;
}

/** The in-progress name of the part file whose finished name is `finalName`. */
export function inProgressPartName(finalName: string, random: string): string {
  return `.${finalName}.inprogress.${random}`;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * Recognises the part file names of one naming.
 * @returns a function giving what a name is, or `undefined` for a name that
 *   is not one of this naming's part files.
 */
export function partFileNameParser(
  naming: PartFileNaming,
): (name: string) => ParsedPartFileName | undefined {
  const core = `${escapeRegExp(naming.prefix)}-(0|[1-9]\\d{0,8})-(0|[1-9]\\d{0,14})${
    escapeRegExp(naming.suffix)
  }`;
  const pattern = new RegExp(
    `^(?:(${core})|\\.(${core})(?:(\\.pending)|\\.inprogress\\.[0-9a-f]{8}))$`,
  );
  return (name) => {
    const m = pattern.exec(name);
    if (m === null) return undefined;
    if (m[1] !== undefined) {
      return { kind: "finished", subtask: Number(m[2]), counter: Number(m[3]), finalName: m[1] };
    }
    return {
      kind: m[7] !== undefined ? "pending" : "in-progress",
      subtask: Number(m[5]),
      counter: Number(m[6]),
      finalName: m[4]!,
    };
  };
}

const COMMITTABLE = "file sink committable";
const WRITER_STATE = "file sink writer state";

function show(value: unknown): string {
  if (typeof value === "string") {
    return JSON.stringify(value.length > 80 ? value.slice(0, 80) + "…" : value);
  }
  if (typeof value === "bigint") return `${value}n`;
  if (Array.isArray(value)) return `an array of ${value.length}`;
  if (value === null) return "null";
  if (typeof value === "object") return "an object";
  return String(value);
}

function plainObject(
  what: string,
  raw: unknown,
  fields: readonly string[],
): Record<string, unknown> {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new SinkStateError(what, `it must be an object: current value is ${show(raw)}`);
  }
  const record = raw as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (!fields.includes(key)) {
      throw new SinkStateError(what, `unknown field '${key}' (expected ${fields.join(", ")})`);
    }
  }
  return record;
}

function nonNegativeInteger(what: string, record: Record<string, unknown>, field: string): number {
  const value = record[field];
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
    throw new SinkStateError(
      what,
      `field '${field}' must be an integer >= 0: current value is ${show(value)}`,
    );
  }
  return value;
}

function splitPath(path: string): [dir: string, name: string] {
  const slash = path.lastIndexOf("/");
  return slash < 0 ? ["", path] : [path.slice(0, slash), path.slice(slash + 1)];
}

/**
 * Validates a file sink committable read back from a checkpoint.
 * @returns the committable.
 * @throws {SinkStateError} naming the field that is wrong, with its value.
 */
export function checkFileSinkCommittable(raw: unknown): FileSinkCommittable {
  const record = plainObject(COMMITTABLE, raw, ["pendingPath", "finalPath", "sizeBytes"]);
  const { pendingPath, finalPath } = record;
  for (const [field, value] of [["pendingPath", pendingPath], ["finalPath", finalPath]] as const) {
    if (typeof value !== "string" || value.length === 0) {
      throw new SinkStateError(
        COMMITTABLE,
        `field '${field}' must be a non-empty string: current value is ${show(value)}`,
      );
    }
  }
  const [dir, finalName] = splitPath(finalPath as string);
  const problem = bucketIdProblem(dir);
  if (problem !== undefined) {
    throw new SinkStateError(
      COMMITTABLE,
      `the directory of field 'finalPath' must be a bucket id (${problem})`,
    );
  }
  if (finalName === "" || finalName.startsWith(".") || finalName.length > 240) {
    throw new SinkStateError(
      COMMITTABLE,
      `the file name of field 'finalPath' must be 1 to 240 characters not starting with '.': current value is ${
        show(finalPath)
      }`,
    );
  }
  const expected = (dir === "" ? "" : dir + "/") + pendingPartName(finalName);
  if (pendingPath !== expected) {
    throw new SinkStateError(
      COMMITTABLE,
      `field 'pendingPath' must be ${show(expected)} for finalPath ${
        show(finalPath)
      }: current value is ${show(pendingPath)}`,
    );
  }
  const sizeBytes = nonNegativeInteger(COMMITTABLE, record, "sizeBytes");
  return { pendingPath: pendingPath as string, finalPath: finalPath as string, sizeBytes };
}

/**
 * Validates a file sink writer state read back from a checkpoint.
 * @returns the state.
 * @throws {SinkStateError} naming the field that is wrong, with its value.
 */
export function checkFileSinkWriterState(raw: unknown): FileSinkWriterState {
  const record = plainObject(WRITER_STATE, raw, ["subtask", "nextCounter"]);
  return {
    subtask: nonNegativeInteger(WRITER_STATE, record, "subtask"),
    nextCounter: nonNegativeInteger(WRITER_STATE, record, "nextCounter"),
  };
}
