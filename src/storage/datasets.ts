// Uploaded datasets in IndexedDB, so a reload or a resumed run still finds the file its dataset
// field names (`upload:<file name>`). Each upload is a metadata record (listed without reading
// the text) and its text; the text is written first and the metadata last, so a failed write
// never lists an upload whose text is missing. Writes are checked against the browser's quota
// first, and a quota error says how much was needed and what is free.
import { formatBytes } from '../contract/formatBytes';
import { idbKv, isQuotaError, storageEstimate, StorageError, type Kv, type StorageEstimateResult } from './kv';

export const DATASET_DB = 'sparring-datasets';
export const UPLOAD_PREFIX = 'upload:';

export interface StoredDatasetInfo {
  /** What a recipe's dataset field takes. */
  ref: string;
  rows: number;
  bytes: number;
  savedAt: number;
  /** Characters of its longest prompt, as the page read it (absent in older records). */
  longestPrompt?: number;
}

const metaKey = (ref: string) => `m/${ref}`;
const textKey = (ref: string) => `t/${ref}`;

/** The ref of an uploaded file: `upload:<base name>`. */
export function uploadRef(fileName: string): string {
  const name = fileName.split(/[\\/]/).pop()!.trim();
  if (name === '') throw new StorageError('invalid', 'dataset upload: the file has no name');
  return `${UPLOAD_PREFIX}${name}`;
}

export class DatasetStore {
  readonly kv: Kv;
  private readonly estimate: () => Promise<StorageEstimateResult>;
  private readonly now: () => number;

  constructor(opts: { kv?: Kv; estimate?: () => Promise<StorageEstimateResult>; now?: () => number } = {}) {
    this.kv = opts.kv ?? idbKv(DATASET_DB);
    this.estimate = opts.estimate ?? storageEstimate;
    this.now = opts.now ?? Date.now;
  }

  /** Stores (or replaces) an upload; throws a StorageError naming the file when it does not fit. */
  async put(fileName: string, text: string, rows: number, longestPrompt?: number): Promise<StoredDatasetInfo> {
    const ref = uploadRef(fileName);
    if (typeof text !== 'string' || text.trim() === '')
      throw new StorageError('invalid', `dataset upload ${fileName}: no rows`);
    if (!Number.isSafeInteger(rows) || rows < 1)
      throw new StorageError(
        'invalid',
        `dataset upload ${fileName}: row count must be a positive integer, got ${rows}`,
      );
    // UTF-16 in IndexedDB: two bytes per code unit is what the browser charges at most.
    const bytes = 2 * text.length;
    const est = await this.estimate().catch(() => ({ usage: null, quota: null }));
    const room = est.quota !== null && est.usage !== null ? est.quota - est.usage : null;
    const quotaError = () =>
      new StorageError(
        'quota',
        `dataset ${fileName} was not saved: it needs ${formatBytes(bytes)}` +
          (room !== null
            ? `, and ${formatBytes(Math.max(0, room))} of the browser's storage quota is free`
            : ' and the browser storage quota is exceeded') +
          '; delete old uploads, checkpoints or runs to free space',
      );
    if (room !== null && bytes > room) throw quotaError();
    const info: StoredDatasetInfo = {
      ref,
      rows,
      bytes,
      savedAt: this.now(),
      ...(Number.isSafeInteger(longestPrompt) && longestPrompt! >= 0 ? { longestPrompt } : {}),
    };
    try {
      await this.kv.set(textKey(ref), text);
      await this.kv.set(metaKey(ref), info);
    } catch (e) {
      await this.kv.del(textKey(ref)).catch(() => undefined);
      if (isQuotaError(e)) throw quotaError();
      throw new StorageError(
        'write',
        `dataset ${fileName} was not saved: an IndexedDB write failed (${(e as Error)?.message ?? String(e)})`,
        { cause: e },
      );
    }
    return info;
  }

  /** Every upload, oldest first. */
  async list(): Promise<StoredDatasetInfo[]> {
    return (await this.kv.values<StoredDatasetInfo>('m/')).sort(
      (a, b) => a.savedAt - b.savedAt || a.ref.localeCompare(b.ref),
    );
  }

  /** The text of an upload; a missing one throws naming what is stored. */
  async text(ref: string): Promise<string> {
    const t = (await this.kv.get<StoredDatasetInfo>(metaKey(ref)))
      ? await this.kv.get<string>(textKey(ref))
      : undefined;
    if (typeof t === 'string') return t;
    const have = (await this.list()).map((d) => d.ref);
    throw new StorageError(
      'not-found',
      `dataset "${ref}" is not stored in this browser (${have.length ? `stored: ${have.join(', ')}` : 'no uploads stored'}); upload the file again`,
    );
  }

  /** Removes an upload; false when there was none. */
  async delete(ref: string): Promise<boolean> {
    const had = (await this.kv.get(metaKey(ref))) !== undefined;
    await this.kv.delMany([metaKey(ref), textKey(ref)]);
    return had;
  }
}
