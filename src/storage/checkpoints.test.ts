import 'fake-indexeddb/auto';
import { describe, expect, it, vi } from 'vitest';
import { CheckpointStore, findNonFinite, type NamedTensor } from './checkpoints';
import { formatBytes } from '../contract/formatBytes';
import { idbKv, requestPersistentStorage, StorageError, type Kv } from './kv';

// A fresh database per test, so tests never see each other's keys.
let dbNo = 0;
const freshKv = (): Kv => idbKv(`ckpt-test-${dbNo++}`);

const f32 = (name: string, shape: number[], fill: (i: number) => number): NamedTensor => {
  const n = shape.reduce((a, b) => a * b, 1);
  return { name, dtype: 'float32', shape, data: Float32Array.from({ length: n }, (_, i) => fill(i)) };
};

// 2x3 + 5 + 4 floats = 60 bytes, plus 3 int32 = 12 bytes: 72 bytes in 10-byte chunks = 8 chunks,
// with tensors straddling chunk boundaries (offsets 0, 24, 44, 60).
const params = (): NamedTensor[] => [
  f32('layer0.q.A', [2, 3], (i) => i * 0.5 - 1),
  f32('layer0.q.B', [5], (i) => Math.fround(1 / (i + 3))),
  f32('odd-bits', [4], (i) => [-0, 1e-40, 3.4e38, -2.5][i]),
];
const moments = (): NamedTensor[] => [
  { name: 'adam.count', dtype: 'int32', shape: [3], data: Int32Array.from([7, -1, 2147483647]) },
];

const bits = (a: Float32Array | Int32Array) => Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length));

describe('CheckpointStore', () => {
  it('round-trips tensors, optimiser state, rng and spec bit-exactly across several chunks', async () => {
    const kv = freshKv();
    const store = new CheckpointStore({ kv, chunkBytes: 10 });
    const m = await store.save({
      runId: 'run-a',
      step: 12,
      time: 1000,
      metrics: { 'reward/mean': 0.25, 'kl/mean': NaN },
      spec: { recipe: 'redteam', lr: 1e-4 },
      tensors: params(),
      optimizer: { state: { t: 12, beta1: 0.9 }, tensors: moments() },
      rng: { philox: [1, 2, 3] },
      extra: { note: 'hi' },
    });
    expect(m.sizeBytes).toBe(72);
    expect(m.chunks.map((c) => c.byteLength)).toEqual([10, 10, 10, 10, 10, 10, 10, 2]);
    // 'layer0.q.B' spans bytes [24, 44): chunks 2, 3, 4.
    expect(m.tensors[1].chunks).toEqual([2, 3, 4].map((c) => `c/${m.id}/${String(c).padStart(6, '0')}`));
    expect((await kv.keys(`c/${m.id}/`)).length).toBe(8);

    const ck = await store.load(m.id);
    expect(ck.tensors.map((t) => t.name)).toEqual(['layer0.q.A', 'layer0.q.B', 'odd-bits']);
    params().forEach((t, i) => {
      expect(ck.tensors[i].shape).toEqual(t.shape);
      expect(ck.tensors[i].data).toBeInstanceOf(Float32Array);
      expect(bits(ck.tensors[i].data)).toEqual(bits(t.data));
    });
    expect(ck.optimizer.tensors[0].data).toBeInstanceOf(Int32Array);
    expect(Array.from(ck.optimizer.tensors[0].data)).toEqual([7, -1, 2147483647]);
    expect(ck.optimizer.state).toEqual({ t: 12, beta1: 0.9 });
    expect(ck.rng).toEqual({ philox: [1, 2, 3] });
    expect(ck.spec).toEqual({ recipe: 'redteam', lr: 1e-4 });
    expect(ck.extra).toEqual({ note: 'hi' });
    expect(ck.manifest.metrics['reward/mean']).toBe(0.25);
    expect(Number.isNaN(ck.manifest.metrics['kl/mean'])).toBe(true);
  });

  it('lists newest first with step, time, metrics and size', async () => {
    const store = new CheckpointStore({ kv: freshKv(), chunkBytes: 16 });
    await store.save({ runId: 'r1', step: 1, time: 100, metrics: { 'reward/mean': 1 }, tensors: params() });
    await store.save({ runId: 'r1', step: 2, time: 300, tensors: params().slice(0, 1) });
    await store.save({ runId: 'r2', step: 5, time: 200, tensors: [] });
    const all = await store.list();
    expect(all.map((c) => [c.runId, c.step, c.time, c.sizeBytes])).toEqual([
      ['r1', 2, 300, 24],
      ['r2', 5, 200, 0],
      ['r1', 1, 100, 60],
    ]);
    expect(all[2].metrics).toEqual({ 'reward/mean': 1 });
    expect(all[2].name).toBe('step 1');
    expect((await store.list('r1')).map((c) => c.step)).toEqual([2, 1]);
    // The empty checkpoint loads too.
    expect((await store.load(all[1].id)).tensors).toEqual([]);
  });

  it('a quota error mid-save removes its own chunks, keeps the earlier checkpoint, and names the bytes', async () => {
    const inner = freshKv();
    let sets = 0;
    let failAfter = Infinity;
    // Wraps the store's writes: the 4th chunk write of the second save throws like Chrome does.
    const kv: Kv = {
      ...inner,
      set: async (k, v) => {
        if (sets++ >= failAfter) throw new DOMException('The quota has been exceeded.', 'QuotaExceededError');
        return inner.set(k, v);
      },
    };
    const store = new CheckpointStore({
      kv,
      chunkBytes: 10,
      estimate: async () => ({ usage: 5_000_000, quota: 5_000_100 }),
    });
    const first = await store.save({ runId: 'r', step: 1, tensors: params() });
    const before = (await inner.keys('')).sort();
    sets = 0;
    failAfter = 3;
    const err = await store
      .save({ runId: 'r', step: 2, tensors: params(), optimizer: { tensors: moments() } })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StorageError);
    const e = err as StorageError;
    expect(e.code).toBe('quota');
    expect(e.message).toContain('needed 72 bytes');
    expect(e.message).toContain('usage 5000000 bytes');
    expect(e.message).toContain('quota of 5000100 bytes');
    expect(e.message).toContain('chunk 4 of 8');
    // Exactly the keys of the first checkpoint remain: no orphan chunks, no manifest.
    expect((await inner.keys('')).sort()).toEqual(before);
    const back = await store.load(first.id);
    expect(bits(back.tensors[2].data)).toEqual(bits(params()[2].data));
    expect((await store.list()).map((c) => c.step)).toEqual([1]);
  });

  it('a failing manifest write also cleans up, and says the quota is unknown without estimate()', async () => {
    const inner = freshKv();
    const kv: Kv = {
      ...inner,
      set: async (k, v) => {
        if (k.startsWith('m/')) throw new Error('disk on fire');
        return inner.set(k, v);
      },
    };
    const store = new CheckpointStore({ kv, chunkBytes: 10, estimate: async () => ({ usage: null, quota: null }) });
    const err = (await store.save({ runId: 'r', step: 3, tensors: params() }).catch((e: unknown) => e)) as StorageError;
    expect(err.code).toBe('write');
    expect(err.message).toContain('disk on fire');
    expect(err.message).toContain('writing the manifest');
    expect(err.message).toContain('needed 60 bytes');
    expect(err.message).toContain('quota and usage unknown');
    expect(await inner.keys('')).toEqual([]);
  });

  it('load names a missing chunk, and a chunk of the wrong length', async () => {
    const kv = freshKv();
    const store = new CheckpointStore({ kv, chunkBytes: 10 });
    const m = await store.save({ runId: 'r', step: 4, name: 'before eval', tensors: params() });
    const victim = m.chunks[3].key;
    await kv.del(victim);
    const err = (await store.load(m.id).catch((e: unknown) => e)) as StorageError;
    expect(err.code).toBe('missing-chunk');
    expect(err.message).toContain(`chunk "${victim}" (4 of 6, 10 bytes) is missing`);
    expect(err.message).toContain('"before eval"');

    await kv.set(victim, new Uint8Array(7).buffer);
    const err2 = (await store.load(m.id).catch((e: unknown) => e)) as StorageError;
    expect(err2.code).toBe('corrupt');
    expect(err2.message).toContain(`chunk "${victim}" holds 7 bytes, the index says 10`);

    const err3 = (await store.load('nope').catch((e: unknown) => e)) as StorageError;
    expect(err3.code).toBe('not-found');
    expect(err3.message).toContain('"nope"');
  });

  it('renames and deletes (manifest and every chunk)', async () => {
    const kv = freshKv();
    const store = new CheckpointStore({ kv, chunkBytes: 10 });
    const a = await store.save({ runId: 'r', step: 1, tensors: params() });
    const b = await store.save({ runId: 'r', step: 2, tensors: params() });
    await store.rename(a.id, '  best so far ');
    expect((await store.manifest(a.id)).name).toBe('best so far');
    await expect(store.rename(a.id, ' ')).rejects.toThrow(/non-empty/);
    expect(await store.delete(a.id)).toBe(true);
    expect(await kv.keys(`c/${a.id}/`)).toEqual([]);
    expect(await kv.get(`m/${a.id}`)).toBeUndefined();
    expect(await store.delete(a.id)).toBe(false);
    expect((await store.list()).map((c) => c.id)).toEqual([b.id]);
    expect((await store.load(b.id)).tensors.length).toBe(3);
    expect(await store.usage()).toMatchObject({ checkpoints: 1, checkpointBytes: 60 });
  });

  it('refuses NaN/Infinity unless forced, and latestGood skips a forced bad one', async () => {
    const store = new CheckpointStore({ kv: freshKv(), chunkBytes: 64 });
    const good = await store.save({ runId: 'r', step: 1, tensors: params() });
    const bad = [...params(), f32('diverged', [3], (i) => [0, 1, Infinity][i])];
    await expect(store.save({ runId: 'r', step: 2, tensors: bad })).rejects.toThrow(
      'tensor "diverged" holds Infinity at element 2',
    );
    const nanMoment = [f32('m', [2], (i) => (i === 1 ? NaN : 0))];
    await expect(
      store.save({ runId: 'r', step: 2, tensors: params(), optimizer: { tensors: nanMoment } }),
    ).rejects.toThrow('tensor "m" holds NaN at element 1');
    expect((await store.list()).length).toBe(1);
    const forced = await store.save({ runId: 'r', step: 2, tensors: bad }, { force: true });
    expect(forced.nonFinite).toBe('tensor "diverged" holds Infinity at element 2');
    expect((await store.latestGood('r'))?.id).toBe(good.id);
    expect(findNonFinite(params())).toBeNull();
    // int32 tensors are never checked (no NaN there); -0 and subnormals are finite.
    expect(findNonFinite([f32('x', [2], (i) => [-0, 1e-45][i])])).toBeNull();
  });

  it('rejects malformed tensors with the tensor name', async () => {
    const store = new CheckpointStore({ kv: freshKv() });
    await expect(
      store.save({
        runId: 'r',
        step: 0,
        tensors: [{ name: 'w', dtype: 'float32', shape: [2, 2], data: new Float32Array(3) }],
      }),
    ).rejects.toThrow('tensor "w": shape [2, 2] has 4 elements but data has 3');
    await expect(
      store.save({
        runId: 'r',
        step: 0,
        tensors: [{ name: 'w', dtype: 'int32', shape: [1], data: new Float32Array(1) }],
      }),
    ).rejects.toThrow('tensor "w": dtype int32 needs a Int32Array');
  });

  it('gcOrphanChunks removes chunks without a manifest, prune keeps the newest steps', async () => {
    const kv = freshKv();
    const store = new CheckpointStore({ kv, chunkBytes: 10 });
    const a = await store.save({ runId: 'r', step: 1, tensors: params() });
    const b = await store.save({ runId: 'r', step: 2, tensors: params() });
    const c = await store.save({ runId: 'r', step: 3, tensors: params() });
    // A tab closed mid-save: chunks of an id that never got its manifest.
    await kv.set('c/ckpt-dead/000000', new Uint8Array(10).buffer);
    await kv.set('c/ckpt-dead/000001', new Uint8Array(10).buffer);
    expect(await store.gcOrphanChunks()).toBe(2);
    expect(await kv.keys('c/ckpt-dead/')).toEqual([]);
    expect((await kv.keys(`c/${a.id}/`)).length).toBe(6);
    expect(await store.prune('r', 2)).toEqual([a.id]);
    expect((await store.list('r')).map((x) => x.id).sort()).toEqual([b.id, c.id].sort());
  });
});

/** Web Locks, enough of them: shared holders counted; an exclusive ifAvailable request sees them. */
function fakeLocks() {
  let shared = 0;
  return {
    async request<T>(
      _name: string,
      opts: { mode: 'shared' | 'exclusive'; ifAvailable?: boolean },
      cb: (lock: unknown) => Promise<T>,
    ): Promise<T> {
      if (opts.mode === 'exclusive') return cb(shared > 0 && opts.ifAvailable ? null : {});
      shared++;
      try {
        return await cb({});
      } finally {
        shared--;
      }
    },
  };
}

describe('orphan collection across tabs', () => {
  it("a collector in another tab leaves the chunks of a save under way alone (the save's lock), then collects real orphans", async () => {
    vi.stubGlobal('navigator', { locks: fakeLocks() });
    try {
      const kv = freshKv();
      let release: () => void = () => undefined;
      const gate = new Promise<void>((r) => (release = r));
      let writes = 0;
      // The saving tab's writes stall after its first chunk: a collector runs in that window.
      const slow: Kv = {
        ...kv,
        set: async (k, v) => {
          if (writes++ === 1) await gate;
          return kv.set(k, v);
        },
      };
      const saver = new CheckpointStore({ kv: slow, chunkBytes: 10 });
      const saving = saver.save({ runId: 'r', step: 1, tensors: params() });
      while ((await kv.keys('c/')).length === 0) await new Promise((r) => setTimeout(r, 1));
      const otherTab = new CheckpointStore({ kv, chunkBytes: 10 });
      expect(await otherTab.gcOrphanChunks()).toBe(0);
      // Nor does its storage line call them orphans.
      expect(await otherTab.usage()).toMatchObject({ orphanChunks: 0, orphanBytes: 0 });
      release();
      const m = await saving;
      expect((await otherTab.load(m.id)).tensors.map((t) => t.name)).toEqual(params().map((t) => t.name));
      await kv.set('c/ckpt-dead/000000', new Uint8Array(10).buffer);
      expect(await otherTab.usage()).toMatchObject({ orphanChunks: 1, orphanBytes: 10 });
      expect(await otherTab.gcOrphanChunks()).toBe(1);
      expect((await otherTab.load(m.id)).tensors.length).toBe(3);
    } finally {
      vi.unstubAllGlobals();
    }
  });
});

describe('storage estimate', () => {
  it('usage() reports navigator.storage.estimate and the bytes of stored checkpoints', async () => {
    vi.stubGlobal('navigator', {
      storage: {
        estimate: async () => ({ usage: 3 * 1024 * 1024, quota: 10 * 1024 ** 3 }),
        persisted: async () => false,
        persist: async () => true,
      },
    });
    try {
      const store = new CheckpointStore({ kv: freshKv(), chunkBytes: 32 });
      await store.save({ runId: 'r', step: 1, tensors: params() });
      expect(await store.usage()).toEqual({
        checkpoints: 1,
        checkpointBytes: 60,
        orphanChunks: 0,
        orphanBytes: 0,
        usage: 3145728,
        quota: 10737418240,
      });
      // Chunks nobody points at count too, with their bytes, until collected.
      await store.kv.set('c/ckpt-dead/000000', new Uint8Array(32).buffer);
      await store.kv.set('c/ckpt-dead/000001', new Uint8Array(7).buffer);
      expect(await store.usage()).toMatchObject({
        checkpoints: 1,
        checkpointBytes: 60,
        orphanChunks: 2,
        orphanBytes: 39,
      });
      expect(formatBytes(3145728)).toBe('3.0 MiB');
      expect(formatBytes(512)).toBe('512 B');
      expect(await requestPersistentStorage()).toBe(true);
    } finally {
      vi.unstubAllGlobals();
    }
  });

  it('load refuses a manifest of another format version', async () => {
    const kv = freshKv();
    const store = new CheckpointStore({ kv });
    const m = await store.save({ runId: 'r', step: 1, tensors: params() });
    await kv.set(`m/${m.id}`, { ...m, format: 2 });
    await expect(store.load(m.id)).rejects.toThrow('manifest format 2, this version reads format 1');
  });
});
