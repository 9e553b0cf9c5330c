// How many threads tfjs-wasm runs, and why: the Device dialog's line and the CLI's.
// The threaded SIMD binary needs SharedArrayBuffer, which a browser gives only to a cross-origin
// isolated page (COOP + COEP headers, from the server or the service worker: docs/guides/deploy.md).
// That binary then sizes its XNNPACK pool itself: min(asked, hardwareConcurrency / 2, 8), one thread
// per physical core on the assumption of two logical cores per physical one (tfjs 4.22,
// tfjs-backend-wasm/src/cc/backend.cc init_with_threads_count; it reads the count through
// emscripten_num_logical_cores, i.e. `navigator.hardwareConcurrency`, when the backend is built).
// The lab wants every logical core (a 2-core laptop got 1 thread, an 8-core one 4), so the engine
// shows tfjs twice the real count while the backend is built (src/engine/wasmCores.ts): its halving
// then gives the real count, up to its cap of 8. tfjs-wasm's Node build never runs threaded
// (WASM_HAS_MULTITHREAD_SUPPORT is false in Node, tensorflow/tfjs#3830).

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

/** The logical cores to show tfjs-wasm while it sizes its pool, so its halving gives `cores` (2 → 4 → 2 threads; 12 → 24 → 8, its cap). */
export function coresToPresent(cores: number): number {
  return 2 * Math.min(8, Math.max(1, Math.floor(cores)));
}

/** The threads the threaded binary runs here with the lab's presented count: every logical core, 1 to 8. */
export function wasmThreadsExpected(cores: number): number {
  return tfjsWasmThreadCap(coresToPresent(cores));
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
  const on =
    threads >= env.cores
      ? `on every logical core (${env.cores})`
      : `on ${threads} of the ${env.cores} logical cores${threads === 8 ? ' (tfjs-wasm runs at most 8)' : ''}`;
  return say(`cross-origin isolated, so the threaded SIMD build runs ${on}`);
}
