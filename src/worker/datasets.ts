// Uploaded datasets, stored in IndexedDB (storage/datasets.ts) under `upload:<file name>`, so a
// recipe's dataset field can name one and the env's readText(ref) returns its rows, after a
// reload and in a resumed run too. The page reads and checks the file first (contract/promptSets.ts:
// unusable rows named by line and field) and sends it as it is (or, with a column map, its usable
// rows as JSONL); each recipe reads it in its own terms.
import { DatasetStore, UPLOAD_PREFIX, uploadRef } from '../storage/datasets';
import type { DatasetInfo } from '../contract/workerApi';
import { brief } from '../contract/brief';

export { UPLOAD_PREFIX, uploadRef };

let store: DatasetStore | null = null;
const datasets = (): DatasetStore => (store ??= new DatasetStore());

const info = (d: { ref: string; rows: number; bytes: number; longestPrompt?: number }): DatasetInfo => ({
  ref: d.ref,
  rows: d.rows,
  bytes: d.bytes,
  ...(d.longestPrompt !== undefined ? { longestPrompt: d.longestPrompt } : {}),
});

export async function putDataset(
  fileName: string,
  jsonl: string,
  rows: number,
  longestPrompt?: number,
): Promise<DatasetInfo> {
  return info(await datasets().put(fileName, jsonl, rows, longestPrompt));
}

export async function listDatasets(): Promise<DatasetInfo[]> {
  return (await datasets().list()).map(info);
}

export function deleteDataset(ref: string): Promise<boolean> {
  return datasets().delete(ref);
}

/** The text of an uploaded dataset; null when `ref` is not an upload ref (then it is fetched). */
export async function datasetText(ref: string): Promise<string | null> {
  if (!ref.startsWith(UPLOAD_PREFIX)) return null;
  return datasets().text(ref);
}

/** For tests: use this store (a fresh database). */
export function useDatasetStore(s: DatasetStore): void {
  store = s;
}

/**
 * Start-time check of the config's dataset fields (`dataset`, `...Dataset`): a value that is not
 * "sandbox", an upload or an http(s) URL is refused by field before any model loads (it was
 * fetched from the lab's own server, which answers with its index.html, read as a CSV).
 */
export function datasetRefErrors(config: Record<string, unknown>): Record<string, string> {
  const errors: Record<string, string> = {};
  for (const [k, v] of Object.entries(config)) {
    if (!/^dataset$|Dataset$/.test(k) || typeof v !== 'string') continue;
    if (v === 'sandbox' || v.startsWith(UPLOAD_PREFIX) || /^https?:\/\//i.test(v)) continue;
    errors[k] =
      `field "${k}": ${brief(v)} is neither an upload (upload:<file name>) nor an http(s) URL; "sandbox" is the built-in data`;
  }
  return errors;
}
