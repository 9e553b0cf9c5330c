// The harness page: the lab, run on the harness worker (the product API plus the checks and
// benchmarks), with that worker's client on window.sparring and the run-store handle on
// window.sparringRuns for the browser tests and the benchmarks (e2e/window.d.ts types them).
// The lab's own page never loads this and puts nothing on window.
import * as Comlink from 'comlink';
import type { EngineApi } from '../../src/contract/workerApi';
import { useEngine } from '../../src/store/engineStore';
import type { EngineClient } from '../../src/worker/client';
import { installRunHandle } from './runHandle';

/** The engine store starts this worker instead of the lab's; the UI sees only EngineApi. */
function startHarnessWorker(): EngineClient {
  // ?cores=N (benchmarks only): the worker reports N logical cores, see harness.worker.ts.
  const cores = new URLSearchParams(window.location.search).get('cores');
  const worker = new Worker(new URL('./harness.worker.ts', import.meta.url), {
    type: 'module',
    name: cores ? `sparring-harness cores=${cores}` : 'sparring-harness',
  });
  const api = Comlink.wrap<EngineApi>(worker);
  return {
    api,
    terminate: () => {
      api[Comlink.releaseProxy]();
      worker.terminate();
    },
  };
}

useEngine.setState({ startWorker: startHarnessWorker });
useEngine.subscribe((s) => {
  window.sparring = s.client ? { engine: s.client.api } : undefined;
});
installRunHandle();

await import('../../src/ui/main');
