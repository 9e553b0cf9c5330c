// User settings, persisted in localStorage so a reload keeps them, and mirrored to IndexedDB
// (durableSettings) so a browser killed seconds after a change keeps it too.
import { create } from 'zustand';
import { createJSONStorage, persist } from 'zustand/middleware';
import type { BackendPreference } from '../contract/backends';
import { durableSettings } from './durableSettings';

interface SettingsState {
  backendPreference: BackendPreference;
  /** Teaching mode: explanation panels beside the live views, and the guided demo. */
  teaching: boolean;
  setBackendPreference(p: BackendPreference): void;
  setTeaching(on: boolean): void;
}

export const SETTINGS_KEY = 'sparring.settings';

export const useSettings = create<SettingsState>()(
  persist(
    (set) => ({
      backendPreference: 'auto',
      teaching: false,
      setBackendPreference: (backendPreference) => set({ backendPreference }),
      setTeaching: (teaching) => set({ teaching }),
    }),
    // Version 2 adds `teaching`; a version-1 record keeps its backend and gets teaching off.
    {
      name: SETTINGS_KEY,
      version: 2,
      migrate: (old) => ({ teaching: false, ...(old as object) }) as SettingsState,
      storage: createJSONStorage(() => durableSettings()),
    },
  ),
);

/** At start: where IndexedDB holds newer settings than localStorage (a kill lost the latter), load them. */
export async function reconcileSettings(): Promise<void> {
  if (await durableSettings().reconcile(SETTINGS_KEY)) await useSettings.persist.rehydrate();
}
