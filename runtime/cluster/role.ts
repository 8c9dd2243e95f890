/**
 * Which role this thread plays for a job module, decided before the module's
 * own code runs:
 *
 * - **slot**: a worker process started this thread (a Web Worker) to run a
 *   job's subtasks. Its name is `weir-slot:` followed by the JSON of a
 *   {@linkcode SlotLaunch}. Importing this module (which every job does,
 *   through `mod.ts`) replaces `Deno.args` with the job's own arguments, so
 *   the job module parses the same arguments as on the client and builds the
 *   same graph; `execute()` then hands the graph to the slot instead of
 *   running or submitting it. It also replaces `Deno.exit`, which would end
 *   the thread unnoticed, with a reported failure of the slot.
 * - **client**: `--nats URL` is among the arguments (or `WEIR_NATS_URL` is
 *   set): `execute()` submits the job to the cluster and waits for its end.
 * - **local**: otherwise; `execute()` runs the job in this process.
 *
 * Outside a slot thread, importing this module also takes Weir's own
 * `--ui` argument (serve the local web dashboard, `local_dashboard.ts`) out
 * of `Deno.args`, so a job module that refuses unknown arguments
 * (`parseArgs` of `node:util`, strict by default) still runs with it;
 * {@linkcode uiFlagGiven} tells whether it was there.
 *
 * Code a job module runs before `execute()` runs in every role, so on every
 * slot thread too: guard side effects (creating streams, writing input) with
 * `executionRole() !== "slot"`.
 *
 * @module
 */

import type { ExecutionRole } from "../api/executor.ts";

/** What a worker process tells a slot thread it starts (see the module docs). */
export interface SlotLaunch {
  /** The job. */
  readonly jobId: string;
  /** The slot (also the worker subject's last token). */
  readonly slotId: string;
  /** The job module's arguments. */
  readonly args: readonly string[];
  /** The fingerprint of the graph the client submitted. */
  readonly fingerprint: string;
  /** The Object Store bucket of checkpoint storage. */
  readonly checkpointBucket: string;
  /** The job's default parallelism from `weir run -p N`, if it had one. */
  readonly defaultParallelism?: number | undefined;
  /**
   * Local recovery on: the worker's id and the root directory of its local
   * state copies (`../task/local_state_store.ts`). Absent: off.
   */
  readonly localRecovery?: { readonly workerId: string; readonly directory: string };
  /** How to reach NATS (the worker process's own connection options). */
  readonly nats: {
    readonly servers: string;
    readonly user?: string;
    readonly password?: string;
    readonly token?: string;
    readonly tls?: {
      readonly caFile?: string;
      readonly certFile?: string;
      readonly keyFile?: string;
    };
  };
}

/** The prefix of a slot thread's name. */
export const SLOT_NAME_PREFIX = "weir-slot:";

export type { ExecutionRole };

const launch: SlotLaunch | undefined = readLaunch();
if (launch !== undefined) {
  Object.defineProperty(Deno, "args", { value: [...launch.args], configurable: true });
  // `Deno.exit` would end the slot thread silently (a Web Worker's exit fires
  // no event in its parent): report it as a failure instead, then close.
  Object.defineProperty(Deno, "exit", {
    configurable: true,
    value: (code?: number): never => {
      const scope = globalThis as unknown as { postMessage(m: unknown): void; close(): void };
      scope.postMessage({
        t: "error",
        message: `the job's code called Deno.exit(${code ?? ""}) on slot thread ${launch.slotId}`,
        suppressRestarts: false,
        byJobCode: true,
      });
      scope.close();
      throw new Error(`Deno.exit(${code ?? ""}) on a slot thread`);
    },
  });
}

/**
 * The argument that asks a local run for its web dashboard
 * (`local_dashboard.ts`); taken out of `Deno.args` (see the module docs).
 */
export const UI_FLAG = "--ui";

const uiFlag = launch === undefined && Deno.args.includes(UI_FLAG);
if (uiFlag) {
  Object.defineProperty(Deno, "args", {
    value: Deno.args.filter((a) => a !== UI_FLAG),
    configurable: true,
  });
}

/** Whether this process was started with `--ui` (since taken out of `Deno.args`). */
export function uiFlagGiven(): boolean {
  return uiFlag;
}

function readLaunch(): SlotLaunch | undefined {
  const name = (globalThis as { name?: unknown }).name;
  if (typeof name !== "string" || !name.startsWith(SLOT_NAME_PREFIX)) return undefined;
  return JSON.parse(name.slice(SLOT_NAME_PREFIX.length)) as SlotLaunch;
}

/** The launch parameters when this thread is a slot thread, else `undefined`. */
export function slotLaunch(): SlotLaunch | undefined {
  return launch;
}

/** Whether `args` or the environment ask for cluster mode (`--nats`, `WEIR_NATS_URL`). */
export function wantsCluster(args: readonly string[] = Deno.args): boolean {
  if (args.some((a) => a === "--nats" || a.startsWith("--nats="))) return true;
  try {
    return (Deno.env.get("WEIR_NATS_URL") ?? "") !== "";
  } catch {
    return false; // no --allow-env: the variable cannot be read
  }
}

/**
 * The role `execute()` will take in this thread: `"slot"` on a worker's slot
 * thread, `"client"` when cluster mode is asked for, else `"local"`.
 */
export function executionRole(): ExecutionRole {
  return launch !== undefined ? "slot" : wantsCluster() ? "client" : "local";
}
