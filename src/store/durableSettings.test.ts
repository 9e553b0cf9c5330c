import 'fake-indexeddb/auto';
import { describe, expect, it } from 'vitest';
import { durableLocal, idbSettingsKv } from './durableSettings';

let dbNo = 0;

/** localStorage stand-in (a Map). */
function memLocal() {
  const m = new Map<string, string>();
  return {
    getItem: (k: string) => m.get(k) ?? null,
    setItem: (k: string, v: string) => void m.set(k, v),
    removeItem: (k: string) => void m.delete(k),
    map: m,
  };
}

describe('durable settings', () => {
  it('every write reaches IndexedDB; a start whose localStorage lost the last write takes it back', async () => {
    const kv = idbSettingsKv(`durable-settings-test-${dbNo++}`);
    const local = memLocal();
    const d = durableLocal(kv, local);
    d.setItem('k', 'old');
    d.setItem('k', 'new');
    await d.flushed();
    expect(await kv.get('k')).toBe('new');
    expect(await d.reconcile('k')).toBe(false);
    // The browser was killed before localStorage committed "new": it reopens with "old".
    local.setItem('k', 'old');
    const after = durableLocal(kv, local);
    expect(after.getItem('k')).toBe('old');
    expect(await after.reconcile('k')).toBe(true);
    expect(after.getItem('k')).toBe('new');
    expect(await after.reconcile('missing')).toBe(false);
  });
});
