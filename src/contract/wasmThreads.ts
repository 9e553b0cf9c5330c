// How many threads tfjs-wasm runs, and why: the Device dialog's line and the CLI's.
// The threaded SIMD binary needs SharedArrayBuffer, which a browser gives only to a cross-origin
// isolated page (COOP + COEP headers, from the server or the service worker: docs/guides/deploy.md).
// That binary then sizes its XNNPACK pool itself: min(asked, hardwareConcurrency / 2, 8), one thread
// per physical core on the assumption of two logical cores per physical one (tfjs 4.22,
// tfjs-backend-wasm/src/cc/backend.cc init_with_threads_count; it reads the count through
// emscripten_num_logical_cores, i.e. `navigator.hardwareConcurrency`, when the backend is built).
// Below MIN_CORES_FOR_THREADS the lab runs the single-threaded SIMD build instead: measured on a
// 2-core machine in Chromium (BENCHMARKS.md, "wasm threads"), 2 threads ran the guided demo's step
// 3.8x and a redteam step 2.9x slower than one; the sandbox models' ops are small, and the pool's
// barrier stalls whenever the page's main thread or another process takes a core. From 4 logical
// cores it leaves the count to tfjs (one thread per physical core, 8 at most); that range is not
// measured here (no machine with more cores and Chromium). tfjs-wasm's Node build never runs
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

/** The fewest logical cores on which the threaded build runs (see the head of this file). */
export const MIN_CORES_FOR_THREADS = 4;

/** Whether the lab runs tfjs-wasm's threaded SIMD build here (it needs an isolated page, and enough cores to gain). */
export function threadedBuildWanted(env: WasmThreadEnv): boolean {
  return !env.node && env.isolated && env.cores >= MIN_CORES_FOR_THREADS;
}

/** The thread count to ask tfjs-wasm for (setThreadsCount): one per physical core where the threaded build runs, else 1. */
export function wasmThreadRequest(env: WasmThreadEnv): number {
  return threadedBuildWanted(env) ? tfjsWasmThreadCap(env.cores) : 1;
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
  if (env.cores < MIN_CORES_FOR_THREADS)
    return say(
      `${env.cores} logical core${env.cores === 1 ? '' : 's'}: the single-threaded SIMD build, which ran 3-4x faster ` +
        `than 2 threads on a 2-core machine (threads from ${MIN_CORES_FOR_THREADS} cores)`,
    );
  if (!threaded) return say(`cross-origin isolated, but this browser's wasm lacks SIMD or shared memory`);
  return say(
    `cross-origin isolated, so the threaded SIMD build runs on ${threads} of the ${env.cores} logical cores ` +
      `(one per physical core, as tfjs-wasm sizes it${threads === 8 ? '; 8 at most' : ''})`,
  );
}
