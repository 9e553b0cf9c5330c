// Engine state as the UI sees it: plain data mirrored from the worker.
import { create } from 'zustand';
import type { BackendPreference } from '../engine/backends';
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
}));
