/// <reference lib="dom" />
/** @jsx h */
/**
 * Small pieces shared by the pages: the error banner, status badges,
 * key/value tables and the empty-state line.
 *
 * @module
 */

import { Fragment, h, useContext } from "../deps.ts";
import type { ComponentChildren, VNode } from "../deps.ts";
import { ApiError, describeError } from "../model/api_error.ts";
import { ConnectionContext } from "./connection.ts";

/**
 * A red banner with the error's message (`{"errors": [...]}` of the API), or
 * nothing. No banner for a 401 (the token prompt answers it) nor for no
 * answer while the app already says the API is unreachable.
 */
export function ErrorBanner(props: { readonly error: unknown }): VNode | null {
  const connection = useContext(ConnectionContext);
  if (props.error === undefined || props.error === null) return null;
  if (props.error instanceof ApiError && props.error.status === 401) return null;
  if (
    props.error instanceof ApiError && props.error.status === 0 &&
    connection.unreachableSince !== undefined
  ) return null;
  return (
    <div class="banner banner-error" role="alert" data-testid="error-banner">
      {describeError(props.error)}
    </div>
  );
}

/**
 * A job or subtask state as a coloured badge (`data-testid="job-status"`
 * when `testId` says so). While the API is unreachable a job's state
 * (`testId` "job-status") is greyed and followed by a grey "unreachable"
 * badge (`data-testid="stale-badge"`); its text stays the state.
 */
export function StatusBadge(
  props: { readonly status: string; readonly testId?: string },
): VNode {
  const connection = useContext(ConnectionContext);
  const stale = props.testId === "job-status" && connection.unreachableSince !== undefined;
  const badge = (
    <span
      class={`badge status-${props.status.toLowerCase()}${stale ? " stale" : ""}`}
      data-testid={props.testId}
      title={stale ? "last known state: the coordinator stopped answering" : undefined}
    >
      {props.status}
    </span>
  );
  if (!stale) return badge;
  return (
    <Fragment>
      {badge}{" "}
      <span class="badge status-unreachable" data-testid="stale-badge">
        unreachable (last known)
      </span>
    </Fragment>
  );
}

/** A two-column table of labelled values. */
export function KeyValues(props: {
  readonly rows: readonly (readonly [string, ComponentChildren])[];
  readonly testId?: string;
}): VNode {
  return (
    <table class="kv" data-testid={props.testId}>
      <tbody>
        {props.rows.map(([k, v]) => (
          <tr key={k}>
            <th>{k}</th>
            <td>{v}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** A muted line saying there is nothing to show. */
export function Empty(props: { readonly children: ComponentChildren }): VNode {
  return <div class="empty">{props.children}</div>;
}

/** A titled panel. */
export function Panel(props: {
  readonly title: ComponentChildren;
  readonly children: ComponentChildren;
  readonly actions?: ComponentChildren;
  readonly testId?: string;
}): VNode {
  return (
    <section class="panel" data-testid={props.testId}>
      <header class="panel-head">
        <h2>{props.title}</h2>
        {props.actions}
      </header>
      <div class="panel-body">{props.children}</div>
    </section>
  );
}
