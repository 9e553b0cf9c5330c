// The browser's storage quota and persistence, and record ids: asked by the worker's storage layer
// (to word a quota error) and by the page (the storage line, the persistence request).

export interface StorageEstimateResult {
  usage: number | null;
  quota: number | null;
}

/** navigator.storage.estimate() where the platform has it; nulls otherwise (Node, old Safari). */
export async function storageEstimate(): Promise<StorageEstimateResult> {
  const nav = (globalThis as { navigator?: { storage?: { estimate?: () => Promise<StorageEstimate> } } }).navigator;
  if (!nav?.storage?.estimate) return { usage: null, quota: null };
  try {
    const e = await nav.storage.estimate();
    return { usage: e.usage ?? null, quota: e.quota ?? null };
  } catch {
    return { usage: null, quota: null };
  }
}

/**
 * Asks the browser not to evict this origin's storage under pressure (checkpoints are hours of
 * GPU time). Resolves to whether storage is persistent; false where the API is missing.
 */
export async function requestPersistentStorage(): Promise<boolean> {
  const nav = (
    globalThis as { navigator?: { storage?: { persist?: () => Promise<boolean>; persisted?: () => Promise<boolean> } } }
  ).navigator;
  try {
    if (await nav?.storage?.persisted?.()) return true;
    return (await nav?.storage?.persist?.()) ?? false;
  } catch {
    return false;
  }
}

/** A unique-enough id: time plus randomness (crypto where available), sortable by creation. */
export function newId(prefix: string): string {
  const rnd =
    typeof crypto !== 'undefined' && 'getRandomValues' in crypto
      ? Array.from(crypto.getRandomValues(new Uint8Array(6)), (b) => b.toString(16).padStart(2, '0')).join('')
      : Math.random().toString(16).slice(2, 14);
  return `${prefix}-${Date.now().toString(36)}-${rnd}`;
}
