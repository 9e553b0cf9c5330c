import 'fake-indexeddb/auto';
import { describe, expect, it } from 'vitest';
import type { RecipeCheckpoint, RecipeRun } from '../recipes/kit/types';
import { CheckpointStore, idbKv, type Kv } from '../storage';
import { autosaveDue, checkAutosavePolicy, pauseSaveDue, pruneAutosaves, saveRunCheckpoint } from './autosave';

let dbNo = 0;
const freshKv = (): Kv => idbKv(`autosave-test-${dbNo++}`);

/** A stand-in run whose state is a known payload: 2x2 LoRA A, its Adam moments, counters. */
function fakeRun(step: number): RecipeRun {
  const payload: RecipeCheckpoint = {
    format: 1,
    recipe: 'redteam',
    seed: 3,
    step,
    config: { groupSize: 2 },
    tensors: [
      {
        name: 'base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight',
        dtype: 'float32',
        shape: [2, 2],
        data: Float32Array.from([1, 2, 3, step]),
      },
    ],
    optimizer: {
      state: { step },
      tensors: [
        {
          name: 'base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight.exp_avg',
          dtype: 'float32',
          shape: [2, 2],
          data: new Float32Array(4),
        },
      ],
    },
    rng: { seed: 3, step },
    extra: { done: false },
  };
  return {
    recipe: 'redteam',
    seed: 3,
    stepsDone: step,
    done: false,
    stopReason: null,
    step: () => Promise.reject(new Error('not used')),
    state: async () => payload,
    restore: async () => undefined,
    dispose: () => undefined,
  };
}

describe('autosave policy', () => {
  it('is due every N completed steps, once per step, never at step 0 or when off', () => {
    const p = { everySteps: 3, onPause: true, keep: 0 };
    expect([1, 2, 3, 4, 5, 6].filter((s) => autosaveDue(p, s, null))).toEqual([3, 6]);
    expect(autosaveDue(p, 3, 3)).toBe(false);
    expect(autosaveDue(p, 0, null)).toBe(false);
    expect(autosaveDue({ everySteps: 0, onPause: true, keep: 0 }, 3, null)).toBe(false);
  });

  it('saves on pause unless this step is already saved', () => {
    expect(pauseSaveDue({ everySteps: 0, onPause: true, keep: 0 }, 4, 3)).toBe(true);
    expect(pauseSaveDue({ everySteps: 0, onPause: true, keep: 0 }, 4, 4)).toBe(false);
    expect(pauseSaveDue({ everySteps: 0, onPause: false, keep: 0 }, 4, 3)).toBe(false);
    expect(pauseSaveDue({ everySteps: 0, onPause: true, keep: 0 }, 0, null)).toBe(false);
  });

  it('names the bad field', () => {
    expect(checkAutosavePolicy({ everySteps: 2, onPause: false, keep: 0 })).toEqual({
      everySteps: 2,
      onPause: false,
      keep: 0,
    });
    expect(() => checkAutosavePolicy({ everySteps: 2, onPause: false })).toThrow(
      /"keep" must be an integer.*got missing/,
    );
    expect(() => checkAutosavePolicy({ everySteps: -1, onPause: true })).toThrow(/"everySteps".*-1/);
    expect(() => checkAutosavePolicy({ everySteps: 1.5, onPause: true })).toThrow(/"everySteps"/);
    expect(() => checkAutosavePolicy({ everySteps: 1, onPause: 'yes' })).toThrow(/"onPause".*"yes"/);
  });
});

describe('saveRunCheckpoint', () => {
  it('stores the run state under the run id with step, metrics and tensors', async () => {
    const store = new CheckpointStore({ kv: freshKv() });
    const e = await saveRunCheckpoint(store, fakeRun(4), 'redteam-3-x', { 'reward/mean': 0.5 }, 'autosave');
    expect(e).toMatchObject({
      kind: 'saved',
      reason: 'autosave',
      runId: 'redteam-3-x',
      step: 4,
      sizeBytes: 32,
      name: 'autosave · step 4',
    });
    const list = await store.list('redteam-3-x');
    expect(list).toHaveLength(1);
    expect(list[0]).toMatchObject({ step: 4, metrics: { 'reward/mean': 0.5 }, tensorCount: 2 });
    const back = await store.load(list[0].id);
    expect(Array.from(back.tensors[0].data)).toEqual([1, 2, 3, 4]);
    expect(back.spec).toEqual({ recipe: 'redteam', seed: 3, config: { groupSize: 2 }, format: 1 });
  });

  it('reports a full quota as a failed event and keeps the earlier checkpoint', async () => {
    const kv = freshKv();
    let full = false;
    const quotaKv: Kv = {
      ...kv,
      set: async (k, v) => {
        if (full) throw new DOMException('The quota has been exceeded.', 'QuotaExceededError');
        return kv.set(k, v);
      },
    };
    const store = new CheckpointStore({ kv: quotaKv, estimate: async () => ({ usage: 1000, quota: 1024 }) });
    const first = await saveRunCheckpoint(store, fakeRun(2), 'r', undefined, 'autosave');
    expect(first.kind).toBe('saved');
    full = true;
    const second = await saveRunCheckpoint(store, fakeRun(4), 'r', undefined, 'pause');
    expect(second.kind).toBe('failed');
    if (second.kind !== 'failed') return;
    expect(second.code).toBe('quota');
    expect(second.step).toBe(4);
    expect(second.message).toMatch(/quota is exceeded.*1000 bytes.*1024 bytes.*earlier checkpoints are intact/s);
    const list = await store.list('r');
    expect(list.map((c) => c.step)).toEqual([2]);
    expect(await kv.keys('c/')).toHaveLength(1);
  });

  it("prunes a run's automatic saves to the newest N, never a renamed or manual one or another run's", async () => {
    const store = new CheckpointStore({ kv: freshKv() });
    for (const [s, reason] of [
      [1, 'autosave'],
      [2, 'pause'],
      [3, 'autosave'],
      [4, 'manual'],
      [5, 'autosave'],
    ] as const) {
      await saveRunCheckpoint(store, fakeRun(s), 'r', undefined, reason);
    }
    await saveRunCheckpoint(store, fakeRun(1), 'other', undefined, 'autosave');
    const first = (await store.list('r')).find((c) => c.step === 1)!;
    await store.rename(first.id, 'keep me');
    const gone = await pruneAutosaves(store, 'r', 1);
    expect(gone).toHaveLength(2); // steps 3 and 2 (5 is the newest automatic save)
    expect((await store.list('r')).map((c) => `${c.step}:${c.name}`).sort()).toEqual([
      '1:keep me',
      '4:saved · step 4',
      '5:autosave · step 5',
    ]);
    expect(await store.list('other')).toHaveLength(1);
    expect(await pruneAutosaves(store, 'r', 0)).toEqual([]);
  });

  it("never prunes the final save a stop writes: it is the run's last state", async () => {
    const store = new CheckpointStore({ kv: freshKv() });
    const stop = await saveRunCheckpoint(store, fakeRun(3), 'r', undefined, 'stop');
    expect(stop).toMatchObject({ kind: 'saved', reason: 'stop', name: 'stopped · step 3' });
    // Resumed from it, the run autosaves twice more; keeping one autosave leaves the stop's save.
    for (const s of [4, 5]) await saveRunCheckpoint(store, fakeRun(s), 'r', undefined, 'autosave');
    await pruneAutosaves(store, 'r', 1);
    expect((await store.list('r')).map((c) => c.name).sort()).toEqual(['autosave · step 5', 'stopped · step 3']);
  });
});
