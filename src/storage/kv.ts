// A tiny key-value seam over idb-keyval, so checkpoints and runs share one way to talk to
// IndexedDB and tests can wrap a single method (e.g. make `set` throw a QuotaExceededError after
// N writes) without monkeypatching the library.
//
// Each area gets its own database: idb-keyval's createStore opens a database without a version
// and creates only its own object store on upgrade, so two stores in one database ('sparring' /
// 'checkpoints' and 'sparring' / 'runs') would leave the second one missing.
//
// Keys are strings with a prefix per kind and zero-padded numbers, so a key range over a prefix
// comes back in a meaningful order (IndexedDB sorts string keys by code unit).

import { createStore, del, delMany, get, set, type UseStore } from 'idb-keyval';

export {
  newId,
  requestPersistentStorage,
  storageEstimate,
  type StorageEstimateResult,
} from '../contract/browserStorage';

export interface Kv {
  get<T>(key: string): Promise<T | undefined>;
  set(key: string, value: unknown): Promise<void>;
  del(key: string): Promise<void>;
  delMany(keys: string[]): Promise<void>;
  /** Keys that start with `prefix`, sorted. */
  keys(prefix: string): Promise<string[]>;
  /** Values of the keys that start with `prefix`, in key order. */
  values<T>(prefix: string): Promise<T[]>;
}

/** Upper bound of a prefix range: every key starting with `prefix` sorts below it. */
const prefixRange = (prefix: string): IDBKeyRange => IDBKeyRange.bound(prefix, `${prefix}\uffff`, false, true);

const request = <T>(req: IDBRequest<T>): Promise<T> =>
  new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });

/** A Kv on an idb-keyval store (one database, one object store). */
export function idbKv(dbName: string, storeName = 'kv'): Kv {
  // Opened lazily: createStore opens the database at once, and importing this module must not
  // touch IndexedDB (Node tests load fake-indexeddb first; SSR-less builds import it early).
  let store: UseStore | null = null;
  const s = (): UseStore => (store ??= createStore(dbName, storeName));
  return {
    get: <T>(key: string) => get<T>(key, s()),
    set: (key, value) => set(key, value, s()),
    del: (key) => del(key, s()),
    delMany: (keys) => delMany(keys, s()),
    keys: (prefix) => s()('readonly', (os) => request(os.getAllKeys(prefixRange(prefix)))).then((k) => k as string[]),
    values: <T>(prefix: string) =>
      s()('readonly', (os) => request(os.getAll(prefixRange(prefix)))).then((v) => v as T[]),
  };
}

/** Errors of the storage layer; `code` lets callers branch without parsing the message. */
export type StorageErrorCode = 'quota' | 'write' | 'not-found' | 'missing-chunk' | 'corrupt' | 'non-finite' | 'invalid';

export class StorageError extends Error {
  constructor(
    readonly code: StorageErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'StorageError';
  }
}

/** Whether an IndexedDB error is the browser's quota refusal (some engines wrap the DOMException). */
export function isQuotaError(e: unknown): boolean {
  const x = e as { name?: string; code?: number; inner?: unknown } | null;
  // DOMException code 22 is the legacy QUOTA_EXCEEDED_ERR.
  return !!x && (x.name === 'QuotaExceededError' || x.code === 22 || (x.inner !== undefined && isQuotaError(x.inner)));
}

/** Zero-padded decimal, so numeric order equals key order (up to 1e12 - 1). */
export const pad = (n: number, width = 12): string => String(n).padStart(width, '0');
