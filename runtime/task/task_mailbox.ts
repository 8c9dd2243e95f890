/**
 * A subtask's mailbox (Flink's `TaskMailbox` with the receiving side of its
 * network stack): everything that arrives on the subtask's subject, fenced
 * by attempt and routed, and the processing-time wake-ups.
 *
 * - **Data** (`buf`, `evt`) goes to the input gate, which checks sequence
 *   numbers; a gap, duplicate or reorder fails the subtask.
 * - **Credits** go to the record writer of their edge.
 * - **Control mail** (start, trigger, complete, abort, stop-source, finish,
 *   cancel) and **timer** mail queue here, in arrival order, for the
 *   mailbox loop to handle before its default action.
 * - A message of another job or attempt is dropped and counted
 *   ({@linkcode TaskMailbox.fencedMessages}): a zombie of an older attempt
 *   can neither deliver data nor control this subtask.
 *
 * Every arrival wakes the loop through one {@linkcode Signal}.
 *
 * @module
 */

import type { TransportMessage } from "../actor/types.ts";
import { Signal } from "../actor/async.ts";
import type { Clock } from "../time/clock.ts";
import { decodeInbound, type InboundMessage } from "./network_input.ts";
import type { InputGate } from "./input_gate.ts";
import type { RecordWriter } from "./record_writer.ts";
import type { TaskControlMessage } from "./messages.ts";

/** What the mailbox loop handles before its default action: control messages and timer wake-ups. */
export type Mail = TaskControlMessage | { readonly t: "timer" };

/** Options of {@linkcode TaskMailbox}. */
export interface TaskMailboxOptions {
  /** The job whose messages are taken. */
  readonly jobId: string;
  /** The attempt whose messages are taken. */
  readonly attempt: number;
  /** Where data and events go. */
  readonly gate: InputGate;
  /** The record writers, by edge index (credits go to them). */
  readonly writers: () => ReadonlyMap<number, RecordWriter>;
  /** Processing time, for wake-ups. */
  readonly clock: Clock;
  /** Fails the subtask (undecodable message, sequence error, refused buffer). */
  readonly fail: (error: unknown) => void;
}

/** One subtask's mailbox (see the module docs). */
export class TaskMailbox {
  readonly #o: TaskMailboxOptions;
  readonly #mails: Mail[] = [];
  /** Wakes the mailbox loop. */
  readonly signal: Signal = new Signal();
  #wakeAt: number | undefined;
  #cancelWake: (() => void) | undefined;
  #closed = false;
  /** Messages of other jobs or attempts dropped by fencing. */
  fencedMessages = 0;

  /** Makes an empty mailbox. */
  constructor(options: TaskMailboxOptions) {
    this.#o = options;
  }

  /** Takes one message of the subtask's subject (the transport's handler). */
  receive(m: TransportMessage): void {
    if (this.#closed) return;
    const o = this.#o;
    let msg: InboundMessage;
    try {
      msg = decodeInbound(m);
    } catch (error) {
      o.fail(error);
      return;
    }
    if (msg.job !== o.jobId || msg.att !== o.attempt) {
      this.fencedMessages++;
      return;
    }
    switch (msg.t) {
      case "buf":
      case "evt":
        if (!o.gate.receive(msg)) o.fail(o.gate.error);
        break;
      case "credit":
        try {
          o.writers().get(msg.edge)?.addCredit(msg.dst, msg.n);
        } catch (error) {
          o.fail(error); // e.g. the transport refused a buffer: fail here, never skip it
        }
        break;
      default:
        this.#mails.push(msg);
    }
    this.signal.notify();
  }

  /** Queues `mail` and wakes the loop. */
  put(mail: Mail): void {
    this.#mails.push(mail);
    this.signal.notify();
  }

  /** The oldest queued mail, or `undefined`. */
  take(): Mail | undefined {
    return this.#mails.shift();
  }

  /**
   * Queues a `timer` mail at or after `timeMs` (clock time, ms); an earlier
   * pending wake-up covers a later request.
   */
  requestWakeup(timeMs: number): void {
    if (this.#closed || (this.#wakeAt !== undefined && this.#wakeAt <= timeMs)) return;
    this.#cancelWake?.();
    this.#wakeAt = timeMs;
    this.#cancelWake = this.#o.clock.schedule(timeMs, () => {
      this.#wakeAt = undefined;
      this.#cancelWake = undefined;
      this.put({ t: "timer" });
    });
  }

  /** Takes nothing more and cancels the pending wake-up. Idempotent. */
  close(): void {
    this.#closed = true;
    this.#cancelWake?.();
    this.#cancelWake = undefined;
  }
}
