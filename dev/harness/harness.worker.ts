/// <reference lib="webworker" />
// The harness worker: the lab's own worker API plus the checks, benchmarks and A/B switches, for
// the browser tests and the benchmarks. Only the harness page (dev/harness/index.html) starts it.
import * as Comlink from 'comlink';
import { engineApi } from '../../src/worker/engineApi';
import type { HarnessApi } from './harnessApi';
import { harnessMethods } from './harnessMethods';

// The wasm thread benchmark's switch (dev/bench/wasmThreads.ts, page query ?cores=N): the worker
// reports N logical cores, before tfjs reads the count; from 4 the engine runs the threaded build
// on N / 2 threads (src/contract/wasmThreads.ts), more than the machine has if N is large.
const cores = Number(/\bcores=(\d+)/.exec(self.name)?.[1]);
if (cores > 0) Object.defineProperty(WorkerNavigator.prototype, 'hardwareConcurrency', { get: () => cores });

const api: HarnessApi = { ...engineApi, ...harnessMethods };

Comlink.expose(api);
