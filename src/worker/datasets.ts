// Datasets uploaded in this tab, kept in the worker under `upload:<file name>` so a recipe's
// dataset field can name one and the env's readText(ref) returns its rows. The page parses and
// checks the file first (src/data/loaders.ts: one error naming the line and field) and sends the
// rows as JSONL, the form every recipe reads; CSV uploads arrive converted. Uploads live until
// the tab closes (a checkpoint of a run on an upload needs it uploaded again after a reload).
import type { DatasetRow } from '../data/loaders';
import type { DatasetInfo } from './storageProtocol';

export const UPLOAD_PREFIX = 'upload:';

const uploads = new Map<string, { text: string; rows: number }>();

/** The ref a recipe field uses for an uploaded file. */
export function uploadRef(fileName: string): string {
  const name = fileName.split(/[\\/]/).pop()!.trim();
  if (name === '') throw new Error('dataset upload: the file has no name');
  return `${UPLOAD_PREFIX}${name}`;
}

/** Rows as JSONL lines {"prompt", "goal"?, "category"?} (what the recipes' JSONL readers take). */
export function rowsToJsonl(rows: readonly DatasetRow[]): string {
  return rows.map((r) => JSON.stringify({ prompt: r.prompt, ...(r.goal !== undefined ? { goal: r.goal } : {}), ...(r.category !== undefined ? { category: r.category } : {}) })).join('\n') + '\n';
}

export function putDataset(fileName: string, jsonl: string, rows: number): DatasetInfo {
  if (typeof jsonl !== 'string' || jsonl.trim() === '') throw new Error(`dataset upload ${fileName}: no rows`);
  if (!Number.isSafeInteger(rows) || rows < 1) throw new Error(`dataset upload ${fileName}: row count must be a positive integer, got ${rows}`);
  const ref = uploadRef(fileName);
  uploads.set(ref, { text: jsonl, rows });
  return { ref, rows, bytes: jsonl.length };
}

export function listDatasets(): DatasetInfo[] {
  return [...uploads].map(([ref, u]) => ({ ref, rows: u.rows, bytes: u.text.length }));
}

/**
 * The text of an uploaded dataset; null when `ref` is not an upload ref (then it is fetched).
 * An upload ref that is not here throws, naming what is.
 */
export function datasetText(ref: string): string | null {
  if (!ref.startsWith(UPLOAD_PREFIX)) return null;
  const u = uploads.get(ref);
  if (!u) {
    const have = [...uploads.keys()];
    throw new Error(`dataset "${ref}" is not uploaded in this tab (${have.length ? `uploaded: ${have.join(', ')}` : 'nothing uploaded yet'}); upload the file again after a reload`);
  }
  return u.text;
}

/** For tests. */
export function clearDatasets(): void {
  uploads.clear();
}
