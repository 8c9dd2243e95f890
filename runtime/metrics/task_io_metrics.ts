/**
 * A subtask's I/O metrics, sampled once a second (Flink's
 * `TaskIOMetricGroup`: `numRecordsIn`, `numRecordsOut`, their per-second
 * meters, `busyTimeMsPerSecond`, `idleTimeMsPerSecond`,
 * `backPressuredTimeMsPerSecond`, and the task's `currentInputWatermark` and
 * `currentOutputWatermark`).
 *
 * ## Design
 *
 * The record path pays nothing here: records are counted by the input gate
 * and the record writers, which count them anyway. The mailbox loop calls
 * {@linkcode TaskIOMetrics.startWait} and {@linkcode TaskIOMetrics.endWait}
 * around the two places it waits (no input: idle; no credit to emit:
 * back-pressured), which it does only when it has nothing to do. A timer
 * calls {@linkcode TaskIOMetrics.sample} once a second; the sample turns the
 * wait times into per-second times over the time since the previous sample,
 * and the record counters into rates over the last
 * {@linkcode METER_TIME_SPAN_MS} (Flink's `MeterView`, whose default time
 * span is 60 s: a rate that a bursty input, or a sample taken just before a
 * buffer arrives, would make jump between 0 and twice its value each second
 * reads steady). Unlike Flink's `MeterView`, which starts from a window of
 * zeros, a subtask younger than the span gets its rate over its lifetime, so
 * a new job's rates are not diluted for a minute.
 *
 * ## Invariants
 *
 * - `busyTimeMsPerSecond + idleTimeMsPerSecond + backPressuredTimeMsPerSecond`
 *   is 1000 (up to rounding) for every sample over a non-empty window, as in
 *   Flink: busy time is what is left of the window.
 * - A wait still open when a sample is taken counts up to the sample's time,
 *   and the rest of it in the next sample.
 * - Pure: every time is passed in (`nowMs` from a monotonic clock).
 *
 * @example
 * ```ts
 * import { TaskIOMetrics } from "./task_io_metrics.ts";
 * const io = new TaskIOMetrics(0);
 * io.startWait("idle", 200);
 * io.endWait(700);
 * const s = io.sample(1000, { numRecordsIn: 50, numRecordsOut: 40, epochMs: 1_700_000_000_000 });
 * console.assert(s.idleTimeMsPerSecond === 500 && s.busyTimeMsPerSecond === 500);
 * console.assert(s.numRecordsInPerSecond === 50);
 * ```
 *
 * @module
 */

/** How often a running subtask reports its metrics to the coordinator, in ms (Flink's per-second meters). */
export const METRICS_REPORT_INTERVAL_MS = 1000;

/**
 * The span the record rates (`numRecordsInPerSecond`, `numRecordsOutPerSecond`)
 * average over, in ms (Flink's `MeterView` default, 60 s).
 */
export const METER_TIME_SPAN_MS = 60_000;

/** What a subtask waits for when its mailbox loop has nothing to do. */
export type WaitKind = "idle" | "backPressured";

/**
 * One sample of a subtask's metrics (Flink's metric names). Counts are
 * totals since the subtask started; times per second cover the window since
 * the previous sample, record rates the meter's span. Watermarks are event-time ms, `null` before the first.
 */
export interface SubtaskMetricsSample {
  /** Records consumed from the input gate since start (`numRecordsIn`). */
  readonly numRecordsIn: number;
  /** Records written to network outputs since start (`numRecordsOut`). */
  readonly numRecordsOut: number;
  /** Records in per second over the last {@linkcode METER_TIME_SPAN_MS} (`numRecordsInPerSecond`). */
  readonly numRecordsInPerSecond: number;
  /** Records out per second over the last {@linkcode METER_TIME_SPAN_MS} (`numRecordsOutPerSecond`). */
  readonly numRecordsOutPerSecond: number;
  /** ms per second spent processing (`busyTimeMsPerSecond`, 0 to 1000). */
  readonly busyTimeMsPerSecond: number;
  /** ms per second spent waiting for input (`idleTimeMsPerSecond`, 0 to 1000). */
  readonly idleTimeMsPerSecond: number;
  /** ms per second spent waiting for credit to emit (`backPressuredTimeMsPerSecond`, 0 to 1000). */
  readonly backPressuredTimeMsPerSecond: number;
  /** The watermark the subtask's input gives its head operator (`currentInputWatermark`); `null` for none yet (and for sources). */
  readonly currentInputWatermark: number | null;
  /** The last watermark sent on its outputs (`currentOutputWatermark`); `null` for none yet (and for sinks). */
  readonly currentOutputWatermark: number | null;
  /** Wall-clock time of the sample, in ms since the epoch. */
  readonly sampledAt: number;
}

/** The counters {@linkcode TaskIOMetrics.sample} reads from the subtask. */
export interface TaskCounters {
  /** Records consumed so far. */
  readonly numRecordsIn: number;
  /** Records written to network outputs so far. */
  readonly numRecordsOut: number;
  /** The input watermark, `-Infinity`/`undefined` for none. */
  readonly inputWatermark?: number | undefined;
  /** The output watermark, `-Infinity`/`undefined` for none. */
  readonly outputWatermark?: number | undefined;
  /** Wall-clock time, in ms since the epoch. */
  readonly epochMs: number;
}

/** Accumulates wait times and turns counters into per-second samples (see the module docs). */
export class TaskIOMetrics {
  #idleMs = 0;
  #backPressuredMs = 0;
  #wait: { kind: WaitKind; since: number } | undefined;
  #windowStart: number;
  /** Counts at earlier samples (and at the start), oldest first, covering the meter's span. */
  readonly #meter: { readonly t: number; readonly in: number; readonly out: number }[];
  readonly #meterSpanMs: number;
  #windowIdle = 0;
  #windowBackPressured = 0;

  /**
   * Starts measuring.
   * @param nowMs the current monotonic time (`performance.now()`), in ms.
   * @param meterSpanMs the span record rates average over, in ms; default
   *   {@linkcode METER_TIME_SPAN_MS}.
   * @throws {RangeError} when `meterSpanMs` is not a positive number.
   */
  constructor(nowMs: number, meterSpanMs: number = METER_TIME_SPAN_MS) {
    if (!(meterSpanMs > 0) || !Number.isFinite(meterSpanMs)) {
      throw new RangeError(
        `TaskIOMetrics: meterSpanMs must be a positive number of ms: current value is ${meterSpanMs}`,
      );
    }
    this.#windowStart = nowMs;
    this.#meterSpanMs = meterSpanMs;
    this.#meter = [{ t: nowMs, in: 0, out: 0 }];
  }

  /** Total back-pressured time since start, in ms (open wait included up to its last `endWait`). */
  get backPressuredMs(): number {
    return this.#backPressuredMs;
  }

  /** Total idle time since start, in ms. */
  get idleMs(): number {
    return this.#idleMs;
  }

  /**
   * The mailbox loop starts waiting. A wait already open is ended first.
   * @param kind idle (no input) or back-pressured (no credit).
   * @param nowMs monotonic time, in ms.
   */
  startWait(kind: WaitKind, nowMs: number): void {
    if (this.#wait !== undefined) this.endWait(nowMs);
    this.#wait = { kind, since: nowMs };
  }

  /**
   * The wait started by `startWait` ended; without one, nothing happens.
   * @param nowMs monotonic time, in ms.
   */
  endWait(nowMs: number): void {
    const w = this.#wait;
    if (w === undefined) return;
    this.#wait = undefined;
    this.#add(w.kind, Math.max(0, nowMs - w.since));
  }

  /**
   * Closes the window since the previous sample (or the start) and returns
   * its times per second, with the record rates over the meter's span. An
   * open wait is split at `nowMs`.
   *
   * @param nowMs monotonic time, in ms.
   * @param counters the subtask's record counts and watermarks now.
   * @returns the sample.
   */
  sample(nowMs: number, counters: TaskCounters): SubtaskMetricsSample {
    const open = this.#wait;
    if (open !== undefined) {
      this.#add(open.kind, Math.max(0, nowMs - open.since));
      open.since = nowMs;
    }
    const windowMs = nowMs - this.#windowStart;
    const perSecond = (n: number) => windowMs > 0 ? (1000 * n) / windowMs : 0;
    const meter = this.#meter;
    // The oldest point kept is the latest at or before the span's start.
    while (meter.length > 1 && meter[1]!.t <= nowMs - this.#meterSpanMs) meter.shift();
    const from = meter[0]!;
    const meterMs = nowMs - from.t;
    const rate = (n: number) => meterMs > 0 ? (1000 * n) / meterMs : 0;
    const idle = Math.min(1000, perSecond(this.#windowIdle));
    const backPressured = Math.min(1000 - idle, perSecond(this.#windowBackPressured));
    const sample: SubtaskMetricsSample = {
      numRecordsIn: counters.numRecordsIn,
      numRecordsOut: counters.numRecordsOut,
      numRecordsInPerSecond: rate(counters.numRecordsIn - from.in),
      numRecordsOutPerSecond: rate(counters.numRecordsOut - from.out),
      busyTimeMsPerSecond: windowMs > 0 ? Math.max(0, 1000 - idle - backPressured) : 0,
      idleTimeMsPerSecond: idle,
      backPressuredTimeMsPerSecond: backPressured,
      currentInputWatermark: finiteOrNull(counters.inputWatermark),
      currentOutputWatermark: finiteOrNull(counters.outputWatermark),
      sampledAt: counters.epochMs,
    };
    this.#windowStart = nowMs;
    meter.push({ t: nowMs, in: counters.numRecordsIn, out: counters.numRecordsOut });
    this.#windowIdle = 0;
    this.#windowBackPressured = 0;
    return sample;
  }

  #add(kind: WaitKind, ms: number): void {
    if (kind === "idle") {
      this.#idleMs += ms;
      this.#windowIdle += ms;
    } else {
      this.#backPressuredMs += ms;
      this.#windowBackPressured += ms;
    }
  }
}

function finiteOrNull(wm: number | undefined): number | null {
  return wm !== undefined && Number.isFinite(wm) ? wm : null;
}
