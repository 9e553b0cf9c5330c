// How many threads tfjs-wasm runs, and why: the Device dialog's line and the CLI's.
// The threaded SIMD binary needs SharedArrayBuffer, which a browser gives only to a cross-origin
// isolated page (COOP + COEP headers, from the server or the service worker: docs/guides/deploy.md).
// That binary then sizes its XNNPACK pool itself: min(asked, hardwareConcurrency / 2, 8), one thread
// per physical core on the assumption of two logical cores per physical one (tfjs 4.22,
// tfjs-backend-wasm/src/cc/backend.cc init_with_threads_count). tfjs-wasm's Node build never runs
// threaded (WASM_HAS_MULTITHREAD_SUPPORT is false in Node, tensorflow/tfjs#3830).

export interface WasmThreads {
  /** Threads the wasm backend runs (1: the single-threaded SIMD or plain binary, or a pool of one). */
  threads: number;
  /** Whether the threaded SIMD binary runs. */
  threaded: boolean;
  /** One clause: why that many. */
  why: string;
}

export interface WasmThreadEnv {
  node: boolean;
  /** `crossOriginIsolated` of the page or worker. */
  isolated: boolean;
  /** `navigator.hardwareConcurrency` (logical cores). */
  cores: number;
}

/** The most threads the threaded binary starts with `cores` logical cores (its own cap). */
export function tfjsWasmThreadCap(cores: number): number {
  return Math.min(8, Math.max(1, Math.floor(cores / 2)));
}

/** The thread count to ask tfjs-wasm for (setThreadsCount): every logical core where threads can run (tfjs caps it). */
export function wasmThreadRequest(env: WasmThreadEnv): number {
  return env.node || !env.isolated ? 1 : Math.max(1, env.cores);
}

/** What the wasm backend reports (`threads` from getThreadsCount, `threaded`: the binary it loaded) explained for `env`. */
export function describeWasmThreads(env: WasmThreadEnv, threads: number, threaded: boolean): WasmThreads {
  const n = `${threads} thread${threads === 1 ? '' : 's'}`;
  const say = (why: string): WasmThreads => ({ threads, threaded, why: `${n}: ${why}` });
  if (env.node) return say(`tfjs-wasm's Node build is single-threaded (tensorflow/tfjs#3830)`);
  if (!env.isolated)
    return say(
      'the page is not cross-origin isolated (no SharedArrayBuffer), so wasm runs its single-threaded build; ' +
        'serve it with COOP/COEP headers or through its service worker (docs/guides/deploy.md)',
    );
  if (!threaded) return say(`cross-origin isolated, but this browser's wasm lacks SIMD or shared memory`);
  return say(
    `cross-origin isolated, so the threaded SIMD build runs, one thread per two of the ${env.cores} logical ` +
      'cores (tfjs-wasm assumes two per physical core; at most 8)',
  );
}
