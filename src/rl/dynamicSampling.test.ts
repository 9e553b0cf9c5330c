import { describe, expect, it } from 'vitest';
import { DynamicBatch, dynamicSamplingMetrics, splitGroupsByVariance } from './dynamicSampling';

// Hand-worked groups (veRL's rule: keep a group when np.std(metric) > 0 or it has one row).
describe('splitGroupsByVariance', () => {
  it('keeps groups whose metric varies and singletons; drops all-equal groups', () => {
    // group 0: 1 1 1 1 (std 0) dropped; group 1: 1 0 1 1 (std 0.433) kept; group 2: one row, kept;
    // group 3: -2.5 -2.5 (std 0) dropped; group 4: 5 5 5 4.999 kept (any difference counts).
    const metric = [1, 1, 1, 1, 1, 0, 1, 1, 7, -2.5, -2.5, 5, 5, 5, 4.999];
    const index = [0, 0, 0, 0, 1, 1, 1, 1, 2, 3, 3, 4, 4, 4, 4];
    expect(splitGroupsByVariance(metric, index)).toEqual({ kept: [1, 2, 4], dropped: [0, 3] });
  });

  it('reads groups by id, not by position (interleaved rows)', () => {
    expect(splitGroupsByVariance([3, 3, 3, 4], ['a', 'b', 'a', 'b'])).toEqual({ kept: ['b'], dropped: ['a'] });
  });

  it('names a length mismatch', () => {
    expect(() => splitGroupsByVariance([1, 2], [0])).toThrow(/2 metric values for 1 group ids/);
  });
});

describe('DynamicBatch', () => {
  const on = { enable: true, maxNumGenBatches: 3 };

  it('off: one generation batch, every group kept', () => {
    const d = new DynamicBatch(2, { enable: false, maxNumGenBatches: 3 });
    expect(d.wantsMore()).toBe(true);
    d.add({ metric: [1, 1, 0, 0], index: [0, 0, 1, 1] });
    expect(d.wantsMore()).toBe(false);
    const s = d.selection();
    expect(s.rows).toEqual([[0, 1, 2, 3]]);
    expect(s.keptGroups).toBe(2);
    expect(s.droppedGroups).toBe(0);
  });

  it('resamples until the target is met, then cuts to the first target groups (veRL batch[:traj_bsz])', () => {
    const d = new DynamicBatch(3, on);
    // batch 1: groups 0 (equal, dropped) and 1 (varies): 1 kept < 3 -> more
    d.add({ metric: [2, 2, 0, 1], index: [0, 0, 1, 1] });
    expect(d.wantsMore()).toBe(true);
    // batch 2: both vary: 3 kept -> enough
    d.add({ metric: [0, 1, 1, 0], index: [0, 0, 1, 1] });
    expect(d.wantsMore()).toBe(false);
    const s = d.selection();
    expect(s.rows).toEqual([
      [2, 3],
      [0, 1, 2, 3],
    ]);
    expect(s).toMatchObject({ keptGroups: 3, droppedGroups: 1, surplusGroups: 0, genBatches: 2 });
    expect(dynamicSamplingMetrics(s, 3)).toEqual({
      'filter/gen_batches': 2,
      'filter/kept_groups': 3,
      'filter/dropped_groups': 1,
      'filter/resampled_batches': 1,
      'filter/short': 0,
    });
  });

  it('leaves out kept groups past the target', () => {
    const d = new DynamicBatch(1, on);
    d.add({ metric: [0, 1, 1, 0, 5, 5], index: [7, 7, 8, 8, 9, 9] });
    expect(d.wantsMore()).toBe(false);
    const s = d.selection();
    expect(s.rows).toEqual([[0, 1]]);
    expect(s).toMatchObject({ keptGroups: 1, droppedGroups: 1, surplusGroups: 1 });
  });

  it('stops at the cap short of the target and reports it (veRL would raise here)', () => {
    const d = new DynamicBatch(2, { enable: true, maxNumGenBatches: 2 });
    d.add({ metric: [1, 1], index: [0, 0] });
    expect(d.wantsMore()).toBe(true);
    d.add({ metric: [1, 0, 3, 3], index: [0, 0, 1, 1] });
    expect(d.wantsMore()).toBe(false);
    const s = d.selection();
    expect(s.rows).toEqual([[], [0, 1]]);
    expect(s.keptGroups).toBe(1);
    expect(dynamicSamplingMetrics(s, 2)['filter/short']).toBe(1);
  });

  it('rejects a missing cap or target', () => {
    expect(() => new DynamicBatch(2, { enable: true, maxNumGenBatches: 0 })).toThrow(/maxNumGenBatches/);
    expect(() => new DynamicBatch(0, on)).toThrow(/target groups/);
  });
});
