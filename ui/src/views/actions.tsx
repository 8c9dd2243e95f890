/// <reference lib="dom" />
/** @jsx h */
/**
 * The job page's actions (Flink's web UI: Cancel Job, Trigger Savepoint,
 * Stop with Savepoint). Each asks for confirmation in a dialog, then sends
 * `PATCH /jobs/:jobid?mode=cancel`, `POST /jobs/:jobid/savepoints` or
 * `POST /jobs/:jobid/stop`, and shows its progress: a savepoint or stop
 * polls `GET /jobs/:jobid/savepoints/:triggerid` every second until it
 * completes; a cancel follows the job's state.
 *
 * @module
 */

import { h, useEffect, useState } from "../deps.ts";
import type { VNode } from "../deps.ts";
import { request } from "../api.ts";
import { SHAPES } from "../model/answer_shape.ts";
import { describeError } from "../model/api_error.ts";
import type { SavepointStatus, TriggerResponse } from "../model/api_types.ts";
import {
  type ActionPhase,
  cancelPhase,
  confirmQuestion,
  failedPhase,
  type JobAction,
  savepointPhase,
  startedPhase,
} from "../model/operation.ts";
import { POLL_MS } from "./hooks.ts";

/** Props of {@linkcode JobActions}. */
export interface JobActionsProps {
  /** The job's id. */
  readonly jobId: string;
  /** The job's name, for the confirmation question. */
  readonly jobName: string;
  /** The job's current state (from the page's poll), to follow a cancel. */
  readonly state: string;
}

/** The action buttons, the confirmation dialog and the progress line. */
export function JobActions(props: JobActionsProps): VNode {
  const [asking, setAsking] = useState<JobAction | null>(null);
  const [current, setCurrent] = useState<
    { action: JobAction; phase: ActionPhase; trigger?: string } | null
  >(null);
  const running = props.state === "RUNNING";
  const busy = current !== null && current.phase.kind === "running";
  const base = `/jobs/${encodeURIComponent(props.jobId)}`;

  // Follow a cancel through the job's state.
  useEffect(() => {
    if (current?.action === "cancel" && current.phase.kind === "running") {
      const phase = cancelPhase(props.state);
      if (phase.kind !== "running") setCurrent({ ...current, phase });
    }
  }, [props.state, current]);

  // Poll a savepoint or stop operation until it completes.
  useEffect(() => {
    if (current === null || current.action === "cancel" || current.trigger === undefined) return;
    if (current.phase.kind !== "running") return;
    const action = current.action;
    const trigger = current.trigger;
    let stopped = false;
    const t = setTimeout(async () => {
      try {
        const s = await request<SavepointStatus>(`${base}/savepoints/${trigger}`, {
          expect: SHAPES.savepoint,
        });
        if (!stopped) setCurrent({ action, trigger, phase: savepointPhase(action, s) });
      } catch (e) {
        if (!stopped) setCurrent({ action, trigger, phase: failedPhase(describeError(e)) });
      }
    }, POLL_MS);
    return () => {
      stopped = true;
      clearTimeout(t);
    };
  }, [current]);

  async function run(action: JobAction): Promise<void> {
    setAsking(null);
    setCurrent({ action, phase: startedPhase(action) });
    try {
      if (action === "cancel") {
        await request(`${base}?mode=cancel`, { method: "PATCH" });
      } else {
        const path = action === "savepoint" ? `${base}/savepoints` : `${base}/stop`;
        const r = await request<TriggerResponse>(path, {
          method: "POST",
          body: {},
          expect: SHAPES.trigger,
        });
        setCurrent({ action, phase: startedPhase(action), trigger: r["request-id"] });
      }
    } catch (e) {
      setCurrent({ action, phase: failedPhase(describeError(e)) });
    }
  }

  return (
    <div class="actions">
      <button
        type="button"
        class="btn"
        data-testid="action-savepoint"
        disabled={!running || busy}
        onClick={() => setAsking("savepoint")}
      >
        Trigger savepoint
      </button>
      <button
        type="button"
        class="btn"
        data-testid="action-stop"
        disabled={!running || busy}
        onClick={() => setAsking("stop")}
      >
        Stop with savepoint
      </button>
      <button
        type="button"
        class="btn btn-danger"
        data-testid="action-cancel"
        disabled={!running || busy}
        onClick={() => setAsking("cancel")}
      >
        Cancel job
      </button>
      {current !== null && (
        <span class={`progress progress-${current.phase.kind}`} data-testid="action-progress">
          {current.phase.text}
        </span>
      )}
      {asking !== null && (
        <ConfirmDialog
          question={confirmQuestion(asking, props.jobName)}
          okLabel={asking === "cancel" ? "Cancel job" : asking === "stop" ? "Stop job" : "Trigger"}
          onOk={() => run(asking)}
          onCancel={() => setAsking(null)}
        />
      )}
    </div>
  );
}

/** A modal asking to confirm an action. Escape or the backdrop cancels. */
export function ConfirmDialog(props: {
  readonly question: string;
  readonly okLabel: string;
  readonly onOk: () => void;
  readonly onCancel: () => void;
}): VNode {
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key === "Escape") props.onCancel();
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, [props.onCancel]);
  return (
    <div class="modal-backdrop" onClick={props.onCancel}>
      <div
        class="modal"
        role="dialog"
        aria-modal="true"
        data-testid="confirm-dialog"
        onClick={(e) => e.stopPropagation()}
      >
        <p>{props.question}</p>
        <div class="modal-buttons">
          <button type="button" class="btn" data-testid="confirm-cancel" onClick={props.onCancel}>
            Back
          </button>
          <button
            type="button"
            class="btn btn-primary"
            data-testid="confirm-ok"
            onClick={props.onOk}
          >
            {props.okLabel}
          </button>
        </div>
      </div>
    </div>
  );
}
