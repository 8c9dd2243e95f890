/**
 * A checkpoint upload thread for tests: the real one
 * (`serveUploads`), except that a write whose blob name starts with `crash`
 * throws in the thread (an uncaught error, as a bug or an out-of-memory
 * would end it).
 *
 * @module
 */

import { serveUploads, type UploadRequest, type UploadScope } from "../checkpoint_upload_thread.ts";

const scope = globalThis as unknown as UploadScope;
serveUploads(scope);
const real = scope.onmessage!;
scope.onmessage = (e: MessageEvent<UploadRequest>) => {
  if (e.data.t === "write" && e.data.name.startsWith("crash")) {
    throw new Error(`injected crash writing ${e.data.name}`);
  }
  real(e);
};
