/**
 * Helpers of the heap keyed state backend's tests
 * (`heap_keyed_backend_test.ts`, `heap_keyed_backend_ttl_test.ts`): a
 * backend over all 128 key groups.
 *
 * @module
 */

import { HeapKeyedStateBackend, type HeapKeyedStateBackendOptions } from "./heap_keyed_backend.ts";
import { KeyGroupRange } from "./key_group.ts";

/** Every key group of max parallelism 128. */
export const ALL = new KeyGroupRange(0, 127);

/** A heap backend over {@linkcode ALL} (max parallelism 128), with `options` on top. */
export function backend(
  options: Partial<HeapKeyedStateBackendOptions> = {},
): HeapKeyedStateBackend {
  return new HeapKeyedStateBackend({ keyGroupRange: ALL, maxParallelism: 128, ...options });
}
