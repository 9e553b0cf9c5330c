// The uploaded datasets (IndexedDB, `upload:<name>`), as one list for every place that shows them:
// an upload in the Export / import panel must appear in the setup form's dataset pickers at once
// (each kept its own copy, refreshed only when its own select got focus, so the new file was not offered).
import { create } from 'zustand';
import type { DatasetInfo } from '../contract/workerApi';
import { engineOrNull } from './engineStore';

interface DatasetsState {
  uploads: DatasetInfo[];
}

export const useDatasets = create<DatasetsState>()(() => ({ uploads: [] }));

/** Reads the stored uploads from the worker into the list (no-op until the worker is up). */
export async function refreshDatasets(): Promise<void> {
  const api = engineOrNull();
  if (!api) return;
  try {
    useDatasets.setState({ uploads: await api.listDatasets() });
  } catch {
    // The worker restarting (backend change): the next refresh reads the list.
  }
}
