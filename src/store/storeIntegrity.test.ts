import 'fake-indexeddb/auto';
import { describe, expect, it } from 'vitest';
import {
  checkStores,
  LOCAL_MARK_KEY,
  localMarkPlace,
  noteSeen,
  STORE_MARK_KEY,
  wipedMessage,
  type MarkPlace,
} from './storeIntegrity';
import { idbKv, type Kv } from '../contract/kv';

let dbNo = 0;
const freshKv = (): Kv => idbKv(`integrity-test-${dbNo++}`);

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

describe('wiped-store detection', () => {
  it('a first start is new, the next intact; a database recreated behind the lab is wiped, with what it held', async () => {
    const local = memLocal();
    const ckpt = freshKv();
    const logs = freshKv();
    const stores = [
      { name: 'checkpoints', kv: ckpt },
      { name: 'run logs', kv: logs },
    ];
    const places = [localMarkPlace(local)!];
    expect(await checkStores(stores, places)).toEqual({ state: 'new' });
    expect(await checkStores(stores, places)).toEqual({ state: 'intact' });
    await noteSeen({ checkpoints: 3, runs: 2 }, places, Date.UTC(2026, 10, 24, 9));
    // The browser recreates the checkpoint database: its birth record is gone with everything else.
    await ckpt.del(STORE_MARK_KEY);
    const c = await checkStores(stores, places);
    expect(c).toEqual({
      state: 'wiped',
      databases: ['checkpoints'],
      seen: { checkpoints: 3, runs: 2, time: Date.UTC(2026, 10, 24, 9) },
    });
    if (c.state !== 'wiped') throw new Error('unreachable');
    const text = wipedMessage(c, false);
    expect(text).toMatch(
      /^The browser cleared this lab's storage \(checkpoints\) since it was last open\. When last seen \(.*\) it held 3 checkpoints and 2 run logs; they are gone\. /,
    );
    expect(text).toMatch(/not marked persistent/);
    // Said once: the new record is in place for the next start.
    expect(await checkStores(stores, places)).toEqual({ state: 'intact' });
  });

  it('a lost copy only forgets the ids (adopted back); one surviving copy of two is enough; clearing all is a fresh start', async () => {
    const kv = freshKv();
    const local = memLocal();
    const other = memLocal(); // stands in for Cache Storage
    const one = [localMarkPlace(local)!];
    const both: MarkPlace[] = [localMarkPlace(local)!, localMarkPlace(other)!];
    await checkStores([{ name: 'checkpoints', kv }], one);
    local.map.delete(LOCAL_MARK_KEY); // the write never reached disk
    expect(await checkStores([{ name: 'checkpoints', kv }], one)).toEqual({ state: 'new' });
    await kv.del(STORE_MARK_KEY);
    expect((await checkStores([{ name: 'checkpoints', kv }], one)).state).toBe('wiped');
    // With two copies, losing localStorage's still finds the wipe through the other.
    await checkStores([{ name: 'checkpoints', kv }], both);
    local.map.clear();
    await kv.del(STORE_MARK_KEY);
    expect((await checkStores([{ name: 'checkpoints', kv }], both)).state).toBe('wiped');
    local.map.clear();
    other.map.clear();
    await kv.del(STORE_MARK_KEY);
    expect(await checkStores([{ name: 'checkpoints', kv }], both)).toEqual({ state: 'new' });
    local.setItem(LOCAL_MARK_KEY, '{not json');
    expect(await checkStores([{ name: 'checkpoints', kv }], one)).toEqual({ state: 'new' });
  });
});
