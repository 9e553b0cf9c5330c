// User settings, persisted in localStorage so a reload keeps them.
import { create } from 'zustand';
import { persist } from 'zustand/middleware';
import type { BackendPreference } from '../engine/backends';

interface SettingsState {
  backendPreference: BackendPreference;
  /** Teaching mode: explanation panels beside the live views, and the guided demo. */
  teaching: boolean;
  setBackendPreference(p: BackendPreference): void;
  setTeaching(on: boolean): void;
}

export const useSettings = create<SettingsState>()(
  persist(
    (set) => ({
      backendPreference: 'auto',
      teaching: false,
      setBackendPreference: (backendPreference) => set({ backendPreference }),
      setTeaching: (teaching) => set({ teaching }),
    }),
    // Version 2 adds `teaching`; a version-1 record keeps its backend and gets teaching off.
    { name: 'sparring.settings', version: 2, migrate: (old) => ({ teaching: false, ...(old as object) }) as SettingsState },
  ),
);
