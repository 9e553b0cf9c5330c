// UI-side handle on the engine worker.
import * as Comlink from 'comlink';
import type { EngineApi } from '../contract/workerApi';

export interface EngineClient {
  api: Comlink.Remote<EngineApi>;
  terminate(): void;
}

/** Starts the worker script behind the client. */
export type WorkerFactory = () => Worker;

const labWorker: WorkerFactory = () => new Worker(new URL('./engine.worker.ts', import.meta.url), { type: 'module', name: 'sparring-engine' });

let createWorker: WorkerFactory = labWorker;
let onStarted: ((client: EngineClient) => void) | null = null;

/**
 * Run the lab on another worker that serves EngineApi (the test harness page's, which adds its
 * checks), and hear of each client started. The lab itself never calls this.
 */
export function chooseEngineWorker(create: WorkerFactory, started?: (client: EngineClient) => void): void {
  createWorker = create;
  onStarted = started ?? null;
}

export function startEngineWorker(): EngineClient {
  const worker = createWorker();
  const api = Comlink.wrap<EngineApi>(worker);
  const client: EngineClient = {
    api,
    terminate: () => {
      api[Comlink.releaseProxy]();
      worker.terminate();
    },
  };
  onStarted?.(client);
  return client;
}
