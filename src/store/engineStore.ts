// Engine state as the UI sees it: plain data mirrored from the worker, and the one handle on the
// worker that every UI command goes through (nothing is put on `window`).
import { create } from 'zustand';
import type { BackendPreference } from '../contract/backends';
import { startEngineWorker, type EngineClient } from '../worker/client';
import type { EngineStatus } from '../contract/workerApi';

export type EnginePhase = 'starting' | 'ready' | 'error';

interface EngineState {
  phase: EnginePhase;
  status: EngineStatus | null;
  error: string | null;
  /** A non-fatal message, e.g. an invalid ?backend= value that was ignored. */
  notice: string | null;
  /** Where the active backend preference came from. */
  preferenceSource: 'url' | 'setting';
  preference: BackendPreference;
  setStarting(preference: BackendPreference, source: 'url' | 'setting'): void;
  setReady(status: EngineStatus): void;
  setError(message: string): void;
  setNotice(message: string | null): void;
  /** The running worker; null until the first start. */
  client: EngineClient | null;
  /** Starts a worker: the lab's engine worker; a test page may start its harness worker instead. */
  startWorker: () => EngineClient;
  setClient(client: EngineClient | null): void;
}

export const useEngine = create<EngineState>()((set) => ({
  phase: 'starting',
  status: null,
  error: null,
  notice: null,
  preferenceSource: 'setting',
  preference: 'auto',
  setStarting: (preference, preferenceSource) => set({ phase: 'starting', preference, preferenceSource, error: null }),
  setReady: (status) => set({ phase: 'ready', status, error: null }),
  setError: (error) => set({ phase: 'error', error }),
  setNotice: (notice) => set({ notice }),
  client: null,
  startWorker: startEngineWorker,
  setClient: (client) => set({ client }),
}));

/** The engine worker's API, for commands; one clear error when it is not up. */
export function engine(): EngineClient['api'] {
  const client = useEngine.getState().client;
  if (!client) throw new Error('the engine worker is not running');
  return client.api;
}

/** The engine worker's API, or null when it is not up (for reads that can wait). */
export function engineOrNull(): EngineClient['api'] | null {
  return useEngine.getState().client?.api ?? null;
}
