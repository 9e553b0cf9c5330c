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

export {
  newId,
  requestPersistentStorage,
  storageEstimate,
  type StorageEstimateResult,
} from '../contract/browserStorage';

export { idbKv, type Kv } from '../contract/kv';

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
