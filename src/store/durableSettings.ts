// Settings that survive a killed browser. localStorage is read synchronously at start (so the
// first render has the settings), but Chromium commits its writes lazily, seconds later: a value
// typed just before the browser was killed came back as the old one. Every write here also goes
// to IndexedDB, which has the value on disk when its transaction completes (milliseconds), and
// the start reconciles: where IndexedDB holds a different value, that one is the newer.
// The store's own persistence, so it talks to idb-keyval itself (the storage layer is the worker's).
import { createStore, del, get, set, type UseStore } from 'idb-keyval';

export const SETTINGS_DB = 'sparring-settings';

type LocalLike = Pick<Storage, 'getItem' | 'setItem' | 'removeItem'>;

/** The IndexedDB side: one key per setting. */
export interface SettingsKv {
  get<T>(key: string): Promise<T | undefined>;
  set(key: string, value: unknown): Promise<void>;
  del(key: string): Promise<void>;
}

/** An idb-keyval store (database `dbName`, object store "kv"), opened on first use, not at import. */
export function idbSettingsKv(dbName: string): SettingsKv {
  let store: UseStore | null = null;
  const s = (): UseStore => (store ??= createStore(dbName, 'kv'));
  return {
    get: <T>(key: string) => get<T>(key, s()),
    set: (key, value) => set(key, value, s()),
    del: (key) => del(key, s()),
  };
}

export interface DurableLocal {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
  /** Resolves when every write so far is in IndexedDB (tests; a page about to close). */
  flushed(): Promise<void>;
  /** Takes IndexedDB's value into localStorage where they differ; true if it did. */
  reconcile(key: string): Promise<boolean>;
}

export function durableLocal(
  kv: SettingsKv = idbSettingsKv(SETTINGS_DB),
  local: LocalLike | null = typeof localStorage === 'undefined' ? null : localStorage,
): DurableLocal {
  let pending: Promise<unknown> = Promise.resolve();
  // Writes go one after another, so the last value typed is the last one stored.
  const queue = (fn: () => Promise<unknown>) => {
    pending = pending.then(fn).catch(() => undefined); // no IndexedDB (private mode): localStorage alone
  };
  const tryLocal = (fn: () => void) => {
    try {
      fn();
    } catch {
      // private mode or full: IndexedDB keeps it
    }
  };
  return {
    getItem: (key) => {
      try {
        return local?.getItem(key) ?? null;
      } catch {
        return null;
      }
    },
    setItem: (key, value) => {
      tryLocal(() => local?.setItem(key, value));
      queue(() => kv.set(key, value));
    },
    removeItem: (key) => {
      tryLocal(() => local?.removeItem(key));
      queue(() => kv.del(key));
    },
    flushed: () => pending.then(() => undefined),
    reconcile: async (key) => {
      await pending;
      const v = await kv.get<unknown>(key).catch(() => undefined);
      if (typeof v !== 'string') return false;
      let cur: string | null = null;
      tryLocal(() => (cur = local?.getItem(key) ?? null));
      if (v === cur) return false;
      tryLocal(() => local?.setItem(key, v));
      return true;
    },
  };
}

let shared: DurableLocal | null = null;
/** The page's durable settings storage (database "sparring-settings"), created on first use. */
export function durableSettings(): DurableLocal {
  return (shared ??= durableLocal());
}
