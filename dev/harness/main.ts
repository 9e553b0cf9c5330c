// The harness page: the lab, run on the harness worker (the product API plus the checks and
// benchmarks), with that worker's client on window.sparring for the browser tests and the
// benchmarks. The lab's own page never loads this.
import type * as Comlink from 'comlink';
import type { EngineApi } from '../../src/contract/workerApi';
import { chooseEngineWorker } from '../../src/worker/client';

declare global {
  interface Window {
    /** The harness worker's client; tests reach its checks through a HarnessEngine cast (harnessApi.ts). */
    sparring?: { engine: Comlink.Remote<EngineApi> };
  }
}

chooseEngineWorker(
  () => new Worker(new URL('./harness.worker.ts', import.meta.url), { type: 'module', name: 'sparring-harness' }),
  (client) => {
    window.sparring = { engine: client.api };
  },
);

await import('../../src/ui/main');
