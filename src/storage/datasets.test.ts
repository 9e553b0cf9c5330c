import 'fake-indexeddb/auto';
import { describe, expect, it } from 'vitest';
import { DatasetStore } from './datasets';
import { idbKv, type Kv } from './kv';

let dbNo = 0;
const freshKv = (): Kv => idbKv(`datasets-test-${dbNo++}`);

describe('DatasetStore (IndexedDB)', () => {
  it('an upload survives a new store on the same database (a reload), listed oldest first', async () => {
    const kv = freshKv();
    let t = 100;
    const a = new DatasetStore({ kv, now: () => t++ });
    await a.put('b.csv', 'prompt\nx\n', 1);
    await a.put('a.jsonl', '{"prompt":"y"}\n{"prompt":"z"}\n', 2);
    const reloaded = new DatasetStore({ kv: idbKv(`datasets-test-${dbNo - 1}`) });
    // Bytes: 2 per UTF-16 code unit; 'prompt\nx\n' is 9, the JSONL 30.
    expect((await reloaded.list()).map((d) => [d.ref, d.rows, d.bytes])).toEqual([
      ['upload:b.csv', 1, 18],
      ['upload:a.jsonl', 2, 60],
    ]);
    expect(await reloaded.text('upload:a.jsonl')).toBe('{"prompt":"y"}\n{"prompt":"z"}\n');
    // Re-uploading a name replaces it.
    await reloaded.put('b.csv', 'prompt\nw\nv\n', 2);
    expect(await reloaded.text('upload:b.csv')).toBe('prompt\nw\nv\n');
    expect((await reloaded.list()).length).toBe(2);
  });

  it('refuses an upload larger than the free quota before writing, naming the file and the sizes', async () => {
    const kv = freshKv();
    const s = new DatasetStore({ kv, estimate: async () => ({ usage: 1000, quota: 1040 }) });
    await expect(s.put('big.jsonl', 'x'.repeat(100), 1)).rejects.toThrow(
      "dataset big.jsonl was not saved: it needs 200 B, and 40 B of the browser's storage quota is free; delete old uploads, checkpoints or runs to free space",
    );
    expect(await s.list()).toEqual([]);
  });

  it('a quota error from IndexedDB leaves nothing half-written', async () => {
    const kv = freshKv();
    let writes = 0;
    const failing: Kv = {
      ...kv,
      set: async (k, v) => {
        if (++writes === 2) throw Object.assign(new Error('full'), { name: 'QuotaExceededError' });
        return kv.set(k, v);
      },
    };
    const s = new DatasetStore({ kv: failing, estimate: async () => ({ usage: null, quota: null }) });
    await expect(s.put('p.jsonl', '{"prompt":"a"}\n', 1)).rejects.toMatchObject({ code: 'quota' });
    expect(await s.list()).toEqual([]);
    expect(await kv.keys('')).toEqual([]);
    await expect(s.text('upload:p.jsonl')).rejects.toThrow(
      'dataset "upload:p.jsonl" is not stored in this browser (no uploads stored); upload the file again',
    );
  });
});
