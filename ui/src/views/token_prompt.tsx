/// <reference lib="dom" />
/** @jsx h */
/**
 * The bearer token prompt, shown when the REST API answers 401 (a
 * coordinator started with `--rest-token`). The token is kept in the tab's
 * `sessionStorage` and sent as `Authorization: Bearer <token>`.
 *
 * @module
 */

import { h, useEffect, useRef, useState } from "../deps.ts";
import type { VNode } from "../deps.ts";

/** Props of {@linkcode TokenPrompt}. */
export interface TokenPromptProps {
  /** Whether a token was sent and refused (a wrong token rather than none). */
  readonly hadToken: boolean;
  /** Called with the token entered. */
  readonly onSubmit: (token: string) => void;
}

/** A form asking for the REST token. */
export function TokenPrompt(props: TokenPromptProps): VNode {
  const [token, setToken] = useState("");
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => input.current?.focus(), []);
  return (
    <div class="modal-backdrop">
      <form
        class="modal"
        data-testid="token-form"
        onSubmit={(e) => {
          e.preventDefault();
          // The field's own value: an autofilled token fires no input event.
          const entered = (input.current?.value ?? token).trim();
          if (entered !== "") props.onSubmit(entered);
        }}
      >
        <h2>REST token required</h2>
        <p>
          {props.hadToken
            ? "The coordinator refused the token. Enter the token it was started with (--rest-token)."
            : "This coordinator requires a bearer token (--rest-token). It is kept for this tab only."}
        </p>
        <input
          type="password"
          class="input"
          data-testid="token-input"
          autoComplete="off"
          ref={input}
          placeholder="token"
          value={token}
          onInput={(e) => setToken((e.target as HTMLInputElement).value)}
        />
        <div class="modal-buttons">
          <button type="submit" class="btn btn-primary" data-testid="token-submit">
            Use token
          </button>
        </div>
      </form>
    </div>
  );
}
