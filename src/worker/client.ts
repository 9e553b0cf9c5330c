// UI-side handle on the engine worker.
import * as Comlink from 'comlink';
import type { EngineApi } from '../contract/workerApi';

export interface EngineClient {
  api: Comlink.Remote<EngineApi>;
  terminate(): void;
}

export function startEngineWorker(): EngineClient {
  const worker = new Worker(new URL('./engine.worker.ts', import.meta.url), {
    type: 'module',
    name: 'sparring-engine',
  });
  const api = Comlink.wrap<EngineApi>(worker);
  let terminated = false;
  return {
    api,
    // Idempotent: the watchdog terminates a hung worker before connectEngine replaces it, and a
    // released Comlink proxy throws when released again.
    terminate: () => {
      if (terminated) return;
      terminated = true;
      api[Comlink.releaseProxy]();
      worker.terminate();
    },
  };
}
