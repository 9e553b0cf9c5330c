// Shows tfjs-wasm a logical core count of our choosing while it builds its backend: the threaded
// binary reads `navigator.hardwareConcurrency` once there and halves it (src/contract/wasmThreads.ts),
// so a 2-core machine got a pool of 1. An own property on this scope's navigator shadows the
// prototype's getter for that one await and is removed after, so nothing else in the worker sees it.

/** Runs `build` with `navigator.hardwareConcurrency` reading `cores`; the real getter is back after. */
export async function withCoresShown<T>(cores: number, build: () => Promise<T>): Promise<T> {
  const nav = globalThis.navigator as (Navigator & { hardwareConcurrency: number }) | undefined;
  if (!nav) return build();
  Object.defineProperty(nav, 'hardwareConcurrency', { configurable: true, get: () => cores });
  try {
    return await build();
  } finally {
    delete (nav as { hardwareConcurrency?: number }).hardwareConcurrency;
  }
}
