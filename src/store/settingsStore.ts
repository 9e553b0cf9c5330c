// User settings, persisted in localStorage so a reload keeps them.
import { create } from 'zustand';
import { persist } from 'zustand/middleware';
import type { BackendPreference } from '../engine/backends';

interface SettingsState {
  backendPreference: BackendPreference;
  setBackendPreference(p: BackendPreference): void;
}

export const useSettings = create<SettingsState>()(
  persist(
    (set) => ({
      backendPreference: 'auto',
      setBackendPreference: (backendPreference) => set({ backendPreference }),
    }),
    { name: 'sparring.settings', version: 1 },
  ),
);
