/**
 * The pure half of `weir stream add | ls | info`: command-line flags to a
 * JetStream stream configuration, the differences between a wanted and an
 * existing configuration, and the text `ls` and `info` print. Performs no
 * I/O; `stream.ts` talks to NATS with what these functions decide.
 *
 * ## Flags of `weir stream add`
 *
 * | flag | JetStream field | default (the server's) |
 * | --- | --- | --- |
 * | `--subjects a.b,c.>` (required) | `subjects` | — |
 * | `--retention limits\|workqueue\|interest` | `retention` | `limits` |
 * | `--storage file\|memory` | `storage` | `file` |
 * | `--max-age DURATION` (`30s`, `15m`, `12h`, `7d`; a unit is required) | `max_age` (ns) | unlimited |
 * | `--max-bytes N` (`1048576`, `512mb`, `1gb`; 1 kb = 1024 bytes) | `max_bytes` | unlimited |
 * | `--max-msgs N` | `max_msgs` | unlimited |
 * | `--replicas N` (1–5) | `num_replicas` | 1 |
 * | `--discard old\|new` | `discard` | `old` |
 *
 * Durations are read by the `ms` package and sizes by the `bytes` package.
 * A bad value throws a `UsageError` (`_args.ts`) naming the flag and the
 * value; `weir` turns it into exit code 2.
 *
 * ## Invariants
 *
 * - {@linkcode streamConfigFromFlags} always sets every field of the table,
 *   so {@linkcode configDifferences} can compare it field by field with what
 *   the server stored.
 * - Subjects keep the order given; they compare as sets.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { streamConfigFromFlags } from "./_stream_config.ts";
 *
 * const config = streamConfigFromFlags("orders", { subjects: "orders.>", "max-age": "1h" });
 * assert.deepEqual(config.subjects, ["orders.>"]);
 * assert.equal(config.max_age, 3_600_000_000_000); // nanoseconds
 * assert.equal(config.retention, "limits");
 * ```
 *
 * @module
 */

// @ts-types="npm:@types/ms@2.1.0"
import ms from "npm:ms@2.1.3";
// @ts-types="npm:@types/bytes@3.1.6"
import bytes from "npm:bytes@3.1.2";
import { type jetstreamApi, millis, nanos } from "../runtime/actor/nats_deps.ts";
import { positiveInt, UsageError } from "./_args.ts";

/** Retention policies of `--retention` (JetStream's `RetentionPolicy`). */
export const RETENTIONS: readonly jetstreamApi.RetentionPolicy[] = [
  "limits",
  "workqueue",
  "interest",
];
/** Storage types of `--storage` (JetStream's `StorageType`). */
export const STORAGES: readonly jetstreamApi.StorageType[] = ["file", "memory"];
/** Discard policies of `--discard` (JetStream's `DiscardPolicy`). */
export const DISCARDS: readonly jetstreamApi.DiscardPolicy[] = ["old", "new"];

/** The flags of `weir stream add`, as given (strings, unparsed). */
export interface StreamAddFlags {
  /** `--subjects`: comma-separated subjects, wildcards allowed. */
  readonly subjects?: string | undefined;
  /** `--retention`. */
  readonly retention?: string | undefined;
  /** `--storage`. */
  readonly storage?: string | undefined;
  /** `--max-age`: a duration with a unit. */
  readonly "max-age"?: string | undefined;
  /** `--max-bytes`: a size. */
  readonly "max-bytes"?: string | undefined;
  /** `--max-msgs`: a count. */
  readonly "max-msgs"?: string | undefined;
  /** `--replicas`. */
  readonly replicas?: string | undefined;
  /** `--discard`. */
  readonly discard?: string | undefined;
}

/**
 * The configuration `weir stream add` asks for: JetStream's `StreamConfig`
 * fields, every one set (see the module docs' table).
 */
export interface StreamAddConfig {
  /** The stream's name. */
  readonly name: string;
  /** Subjects the stream stores. */
  readonly subjects: string[];
  /** Retention policy. */
  readonly retention: jetstreamApi.RetentionPolicy;
  /** Storage type. */
  readonly storage: jetstreamApi.StorageType;
  /** Maximum age of a message, in nanoseconds; 0 is unlimited. */
  readonly max_age: number;
  /** Maximum size of the stream, in bytes; -1 is unlimited. */
  readonly max_bytes: number;
  /** Maximum number of messages; -1 is unlimited. */
  readonly max_msgs: number;
  /** Replicas of each message (1–5). */
  readonly num_replicas: number;
  /** What happens at a limit: drop the oldest messages, or refuse new ones. */
  readonly discard: jetstreamApi.DiscardPolicy;
}

/**
 * Checks a stream name as the NATS client and CLI do: not empty, and none
 * of `.`, `*`, `>`, `/`, `\` or whitespace (a name is a token of the
 * JetStream API's subjects and a directory on the server).
 * @param name the name given.
 * @returns `name`.
 * @throws {UsageError} naming the name and the character.
 */
export function checkStreamName(name: string): string {
  if (name === "") throw new UsageError("The stream name is empty");
  const bad = /[.*>/\\\s]/.exec(name);
  if (bad !== null) {
    throw new UsageError(
      `Invalid stream name ${JSON.stringify(name)}: it must not contain ${
        JSON.stringify(bad[0])
      } (names may not contain '.', '*', '>', '/', '\\' or whitespace)`,
    );
  }
  return name;
}

/**
 * Checks one subject: non-empty tokens separated by `.`, where a token is
 * `*`, `>` (last only) or has no `*`, `>` or whitespace.
 * @param subject the subject.
 * @param where what to call it in an error, e.g. `--subjects entry 2 ("a..b")`.
 * @returns `subject`.
 * @throws {UsageError} naming `where` and what is wrong.
 */
export function checkSubject(subject: string, where: string): string {
  if (subject === "") throw new UsageError(`${where} is empty`);
  const tokens = subject.split(".");
  tokens.forEach((token, t) => {
    if (token === "") throw new UsageError(`${where} has an empty token`);
    if (/\s/.test(token)) throw new UsageError(`${where} contains whitespace`);
    if (token === ">" && t !== tokens.length - 1) {
      throw new UsageError(`${where} has '>' before its last token`);
    }
    if (token !== "*" && token !== ">" && /[*>]/.test(token)) {
      throw new UsageError(
        `${where} has the token ${JSON.stringify(token)}: '*' and '>' must be whole tokens`,
      );
    }
  });
  return subject;
}

/**
 * Splits and checks `--subjects`: comma-separated subjects, each as
 * {@linkcode checkSubject} wants, none twice.
 * @param value the flag's value.
 * @returns the subjects, trimmed, in order.
 * @throws {UsageError} naming the entry and what is wrong with it.
 */
export function parseSubjects(value: string): string[] {
  const subjects = value.split(",").map((s) => s.trim());
  subjects.forEach((subject, i) =>
    checkSubject(subject, `--subjects entry ${i + 1} (${JSON.stringify(subject)})`)
  );
  const seen = new Set<string>();
  for (const subject of subjects) {
    if (seen.has(subject)) {
      throw new UsageError(`--subjects names ${JSON.stringify(subject)} twice`);
    }
    seen.add(subject);
  }
  return subjects;
}

function oneOf<T extends string>(
  value: string | undefined,
  flag: string,
  allowed: readonly T[],
  fallback: T,
): T {
  if (value === undefined) return fallback;
  if ((allowed as readonly string[]).includes(value)) return value as T;
  throw new UsageError(
    `${flag} must be one of ${allowed.join(", ")}: current value is ${JSON.stringify(value)}`,
  );
}

/**
 * Reads a duration with a unit (`ms`, `s`, `m`, `h`, `d`, `w`, `y`, or
 * their long forms such as `2 days`; the `ms` package's grammar).
 * @param value the flag's value.
 * @param flag the flag's name, for the error.
 * @returns the duration in ms (0 or more).
 * @throws {UsageError} for a bare number (which unit was meant is
 *   unclear), an unreadable or a negative duration.
 */
export function parseDurationMs(value: string, flag: string): number {
  if (/^\s*[\d.]+\s*$/.test(value)) {
    throw new UsageError(
      `${flag} needs a unit: current value is ${
        JSON.stringify(value)
      } (e.g. ${value.trim()}s, ${value.trim()}m, ${value.trim()}h or ${value.trim()}d)`,
    );
  }
  const parsed = ms(value as ms.StringValue) as number | undefined;
  if (parsed === undefined || !Number.isFinite(parsed)) {
    throw new UsageError(
      `${flag} must be a duration such as 90s, 15m, 12h or 7d: current value is ${
        JSON.stringify(value)
      }`,
    );
  }
  if (parsed < 0) {
    throw new UsageError(`${flag} must not be negative: current value is ${JSON.stringify(value)}`);
  }
  return parsed;
}

/**
 * Reads a size: a number of bytes, or one with a unit (`kb`, `mb`, `gb`,
 * `tb`, powers of 1024, case-insensitive; the `bytes` package's grammar).
 * @param value the flag's value.
 * @param flag the flag's name, for the error.
 * @returns the size in bytes, at least 1.
 * @throws {UsageError} for an unreadable size or one below 1 byte.
 */
export function parseSize(value: string, flag: string): number {
  const parsed = bytes.parse(value);
  if (parsed === null || !Number.isFinite(parsed) || !/^\s*[\d.]+\s*[a-z]*\s*$/i.test(value)) {
    throw new UsageError(
      `${flag} must be a size such as 1048576, 512mb or 1gb: current value is ${
        JSON.stringify(value)
      }`,
    );
  }
  if (parsed < 1) {
    throw new UsageError(
      `${flag} must be at least 1 byte: current value is ${JSON.stringify(value)}`,
    );
  }
  return parsed;
}

/**
 * The configuration of `weir stream add NAME` with these flags (defaults as
 * the server's; see the module docs' table).
 * @param name the stream's name.
 * @param flags the flags as given.
 * @returns every field of {@linkcode StreamAddConfig}.
 * @throws {UsageError} naming the flag and value that are wrong, or
 *   when `--subjects` is missing.
 */
export function streamConfigFromFlags(name: string, flags: StreamAddFlags): StreamAddConfig {
  checkStreamName(name);
  if (flags.subjects === undefined) {
    throw new UsageError(
      `stream add ${name} needs --subjects: the subjects it stores, comma-separated (e.g. --subjects '${name}.>')`,
    );
  }
  const maxAge = flags["max-age"];
  const maxBytes = flags["max-bytes"];
  const maxMsgs = flags["max-msgs"];
  return {
    name,
    subjects: parseSubjects(flags.subjects),
    retention: oneOf(flags.retention, "--retention", RETENTIONS, "limits"),
    storage: oneOf(flags.storage, "--storage", STORAGES, "file"),
    max_age: maxAge === undefined ? 0 : Math.round(nanos(parseDurationMs(maxAge, "--max-age"))),
    max_bytes: maxBytes === undefined ? -1 : parseSize(maxBytes, "--max-bytes"),
    max_msgs: maxMsgs === undefined ? -1 : positiveInt(maxMsgs, "--max-msgs"),
    num_replicas: replicas(flags.replicas),
    discard: oneOf(flags.discard, "--discard", DISCARDS, "old"),
  };
}

/** `--replicas`: 1 to 5 (JetStream's limit), default 1. */
function replicas(value: string | undefined): number {
  const n = positiveInt(value, "--replicas", 1);
  if (n > 5) {
    throw new UsageError(
      `--replicas must be 1 to 5 (JetStream's limit): current value is ${JSON.stringify(value)}`,
    );
  }
  return n;
}

/**
 * How an existing stream's configuration differs from the one asked for,
 * on the fields `weir stream add` sets.
 * @param wanted what `stream add` asks for.
 * @param existing the stream's configuration on the server.
 * @returns one line per differing field (`"retention: workqueue asked, limits in the stream"`); empty when they agree.
 */
export function configDifferences(
  wanted: StreamAddConfig,
  existing: Partial<jetstreamApi.StreamConfig>,
): string[] {
  const differences: string[] = [];
  const sameSubjects = [...wanted.subjects].sort().join(",") ===
    [...(existing.subjects ?? [])].sort().join(",");
  if (!sameSubjects) {
    differences.push(
      `subjects: ${wanted.subjects.join(",")} asked, ${
        (existing.subjects ?? []).join(",")
      } in the stream`,
    );
  }
  const fields: readonly [keyof StreamAddConfig, (v: number | string) => string][] = [
    ["retention", String],
    ["storage", String],
    ["max_age", (v) => formatMaxAge(Number(v))],
    ["max_bytes", (v) => formatLimit(Number(v), formatBytes)],
    ["max_msgs", (v) => formatLimit(Number(v), String)],
    ["num_replicas", String],
    ["discard", String],
  ];
  for (const [field, show] of fields) {
    const have = existing[field as keyof jetstreamApi.StreamConfig] as number | string | undefined;
    const want = wanted[field] as number | string;
    if (have !== want) {
      differences.push(
        `${field}: ${show(want)} asked, ${have === undefined ? "unset" : show(have)} in the stream`,
      );
    }
  }
  return differences;
}

/** A size for people: `512 B`, `1.5 MB` (powers of 1024). */
export function formatBytes(n: number): string {
  return bytes.format(n, { unitSeparator: " " }) ?? String(n);
}

/** A limit (`-1` or `0` is unlimited) for people. */
function formatLimit(n: number, show: (n: number) => string): string {
  return n <= 0 ? "unlimited" : show(n);
}

/** A `max_age` in nanoseconds for people: `unlimited`, `1h`, `90s`. */
export function formatMaxAge(nanoseconds: number): string {
  return nanoseconds <= 0 ? "unlimited" : ms(millis(nanoseconds));
}

/**
 * The lines of `weir stream info NAME`.
 * @param info the server's stream info.
 * @returns lines without line endings: name, configuration, then state.
 */
export function formatStreamInfo(info: jetstreamApi.StreamInfo): string[] {
  const c = info.config;
  const s = info.state;
  const time = (ts: string) => ts && !ts.startsWith("0001-") ? ` (${ts})` : "";
  const rows: [string, string][] = [
    ["subjects", (c.subjects ?? []).join(", ") || "(none)"],
    ["retention", c.retention],
    ["storage", c.storage],
    ["replicas", String(c.num_replicas)],
    ["discard", c.discard],
    ["max age", formatMaxAge(c.max_age)],
    ["max bytes", formatLimit(c.max_bytes, formatBytes)],
    ["max messages", formatLimit(c.max_msgs, String)],
    ["created", info.created],
    ["messages", String(s.messages)],
    ["bytes", `${s.bytes} (${formatBytes(s.bytes)})`],
    ["first sequence", `${s.first_seq}${s.messages > 0 ? time(s.first_ts) : ""}`],
    ["last sequence", `${s.last_seq}${s.messages > 0 ? time(s.last_ts) : ""}`],
    ["subjects stored", String(s.num_subjects ?? "?")],
    ["consumers", String(s.consumer_count)],
  ];
  const width = Math.max(...rows.map(([k]) => k.length)) + 1;
  return [`stream ${c.name}`, ...rows.map(([k, v]) => `  ${`${k}:`.padEnd(width)} ${v}`)];
}

/**
 * The lines of `weir stream ls`: a tab-separated header and one row per
 * stream, sorted by name, or one line saying there are none.
 * @param infos the server's stream infos.
 * @returns lines without line endings.
 */
export function formatStreamList(infos: readonly jetstreamApi.StreamInfo[]): string[] {
  if (infos.length === 0) return ["no streams"];
  const sorted = [...infos].sort((a, b) => a.config.name < b.config.name ? -1 : 1);
  return [
    "STREAM\tSUBJECTS\tMESSAGES\tBYTES\tFIRST SEQ\tLAST SEQ",
    ...sorted.map((i) =>
      [
        i.config.name,
        (i.config.subjects ?? []).join(","),
        i.state.messages,
        i.state.bytes,
        i.state.first_seq,
        i.state.last_seq,
      ].join("\t")
    ),
  ];
}
