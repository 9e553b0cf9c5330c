// A key-value view of one IndexedDB object store (idb-keyval underneath), shared by the worker's
// storage layer, which writes the lab's databases, and the page, which lists and reads them
// (src/store/labDb.ts): one adapter, the layout in storageFormat.ts.
import { createStore, del, delMany, get, set, type UseStore } from 'idb-keyval';

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
