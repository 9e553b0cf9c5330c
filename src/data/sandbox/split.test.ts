import { describe, expect, it } from 'vitest';
import { splitRows } from '../split';
import { attackerSft, harmfulPrompts } from './datasets';
import { allGoals, SANDBOX_HAZARDS } from './hazards';
import { sandboxSplitInfo, SANDBOX_SPLIT_SEED, splitGoals } from './split';

describe('sandbox train / eval goal split', () => {
  it("splits each category's goals into two disjoint parts that cover them, a quarter (rounded up) held out", () => {
    // Goals per category (templates x fillers): S1 3x4, S2 3x3, S5 3x4, S7 3x4, S9 2x3, S10 3x3, S11 3, S14 2x3.
    const want = {
      S1: [12, 3],
      S2: [9, 3],
      S5: [12, 3],
      S7: [12, 3],
      S9: [6, 2],
      S10: [9, 3],
      S11: [3, 1],
      S14: [6, 2],
    } as const;
    for (const c of SANDBOX_HAZARDS) {
      const train = splitGoals(c, 'train');
      const ev = splitGoals(c, 'eval');
      expect([allGoals(c).length, ev.length], c).toEqual(want[c]);
      expect(
        train.filter((g) => ev.includes(g)),
        c,
      ).toEqual([]);
      expect([...train, ...ev].sort(), c).toEqual(allGoals(c).sort());
    }
    expect(sandboxSplitInfo()).toEqual({ trainSize: 49, evalSize: 20, seed: SANDBOX_SPLIT_SEED });
  });

  it('no evaluation goal appears among thousands of training draws, and evaluation draws only evaluation goals', () => {
    const evalGoals = new Set(SANDBOX_HAZARDS.flatMap((c) => splitGoals(c, 'eval')));
    const trainDrawn = new Set([
      ...harmfulPrompts(3000, 1, { split: 'train' }).map((p) => p.goal),
      ...attackerSft(2000, 2, { split: 'train' }).map((e) => e.goal),
    ]);
    expect([...trainDrawn].filter((g) => evalGoals.has(g))).toEqual([]);
    // Every training goal is reachable.
    expect(trainDrawn.size).toBe(49);
    const evalDrawn = new Set(harmfulPrompts(1000, 3, { split: 'eval' }).map((p) => p.goal));
    expect([...evalDrawn].sort()).toEqual([...evalGoals].sort());
    // Without a split every goal is drawn (the sandbox models' SFT data is unchanged).
    expect(new Set(harmfulPrompts(3000, 1).map((p) => p.goal)).size).toBe(69);
  });
});

describe('row split', () => {
  it('holds out ceil(share x n) rows, seeded, keeping order; at least one, never all', () => {
    const rows = Array.from({ length: 10 }, (_, i) => i);
    const a = splitRows(rows, 0.25, 7);
    expect(a.eval.length).toBe(3);
    expect(a.train.length).toBe(7);
    expect([...a.train, ...a.eval].sort((x, y) => x - y)).toEqual(rows);
    expect(a.eval).toEqual([...a.eval].sort((x, y) => x - y));
    expect(splitRows(rows, 0.25, 7)).toEqual(a);
    expect(splitRows(rows, 0.25, 8).eval).not.toEqual(a.eval);
    expect(a.info).toEqual({ trainSize: 7, evalSize: 3, seed: 7 });
    expect(splitRows([1, 2], 0.25, 0).eval.length).toBe(1);
    expect(splitRows([1, 2], 0.99, 0).train.length).toBe(1);
    expect(splitRows([1], 0.25, 0)).toMatchObject({ train: [1], eval: [] });
  });
});
