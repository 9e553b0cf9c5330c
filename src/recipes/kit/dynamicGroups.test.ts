import { describe, expect, it } from 'vitest';
import { drawGroups, genBatchStep, joinGrouped, type GroupedBatch } from './dynamicGroups';

type Part = GroupedBatch<{ r: string[] }, { p: string[] }, 'gen', 'ref'>;

/** A batch of `groups` groups of 2 rows; row tokens of length T, values tagged by batch. */
function part(tag: number, groups: number, T: number): Part {
  const B = groups * 2;
  const rows = Array.from({ length: B }, (_, b) => b);
  return {
    group: rows.map((b) => Math.floor(b / 2)),
    groups,
    row: { r: rows.map((b) => `${tag}.${b}`) },
    per: { p: Array.from({ length: groups }, (_, g) => `${tag}:g${g}`) },
    gens: {
      gen: {
        pad: 9,
        gen: {
          tokens: rows.map((b) => Array<number>(T).fill(10 * tag + b)),
          logprobs: rows.map(() => Array<number>(T).fill(-tag)),
          entropy: rows.map(() => Array<number>(T).fill(tag)),
          mask: rows.map(() => Array<number>(T).fill(1)),
          lengths: rows.map(() => T),
        },
      },
    },
    mats: { ref: { data: Float32Array.from({ length: B * T }, (_, i) => tag + i / 100), rows: B, cols: T } },
  };
}

describe('dynamicGroups', () => {
  it('joins the kept rows of two batches: groups renumbered in order, per-group columns picked, [B][T] padded', () => {
    // Batch 1 (T 2) keeps its group 1; batch 2 (T 3) keeps its group 0.
    const j = joinGrouped(
      [part(1, 2, 2), part(2, 1, 3)],
      [
        [2, 3],
        [0, 1],
      ],
    );
    expect(j.group).toEqual([0, 0, 1, 1]);
    expect(j.groups).toBe(2);
    expect(j.row.r).toEqual(['1.2', '1.3', '2.0', '2.1']);
    expect(j.per.p).toEqual(['1:g1', '2:g0']);
    const g = j.gens.gen.gen;
    expect(g.tokens).toEqual([
      [12, 12, 9],
      [13, 13, 9],
      [20, 20, 20],
      [21, 21, 21],
    ]);
    expect(g.mask[0]).toEqual([1, 1, 0]);
    expect(g.logprobs[1]).toEqual([-1, -1, 0]);
    expect(g.entropy[3]).toEqual([2, 2, 2]);
    expect(g.lengths).toEqual([2, 2, 3, 3]);
    expect(j.mats.ref.cols).toBe(3);
    expect(j.mats.ref.rows).toBe(4);
    // Row 2 of batch 1 (its data at 4, 5 of a T-2 matrix), then 0-padded to 3 columns.
    expect([...j.mats.ref.data.subarray(0, 3)].map((x) => +x.toFixed(4))).toEqual([1.04, 1.05, 0]);
    expect([...j.mats.ref.data.subarray(6, 9)].map((x) => +x.toFixed(4))).toEqual([2, 2.01, 2.02]);
  });

  it('off: the first batch as drawn and no metrics; on: batches drawn until the group count varies, or the cap', async () => {
    const drawn: number[] = [];
    // Batch gb's metric: its group 0 varies only in batch 1; group 1 never varies.
    const draw = async (gb: number) => {
      drawn.push(gb);
      return part(gb, 2, 1);
    };
    const metric = (p: Part) => p.row.r.map((x, b) => (x.startsWith('1.') && b === 1 ? 1 : 0));
    const off = await drawGroups({ filterGroups: false, maxNumGenBatches: 4 }, draw, metric);
    expect(drawn).toEqual([0]);
    expect(off.metrics).toEqual({});
    expect(off.batch.row.r).toEqual(['0.0', '0.1', '0.2', '0.3']);

    drawn.length = 0;
    const on = await drawGroups({ filterGroups: true, maxNumGenBatches: 3 }, draw, metric);
    // Target 2 groups; one group varies in all 3 batches drawn: short at the cap.
    expect(drawn).toEqual([0, 1, 2]);
    expect(on.metrics).toEqual({
      'filter/gen_batches': 3,
      'filter/kept_groups': 1,
      'filter/dropped_groups': 5,
      'filter/resampled_batches': 2,
      'filter/short': 1,
    });
    expect(on.batch.row.r).toEqual(['1.0', '1.1']);
    expect(on.batch.per.p).toEqual(['1:g0']);

    drawn.length = 0;
    const none = await drawGroups({ filterGroups: true, maxNumGenBatches: 1 }, draw, metric);
    // Nothing varies in batch 0 and the cap is 1: the step learns from batch 0 as drawn.
    expect(drawn).toEqual([0]);
    expect(none.metrics['filter/kept_groups']).toBe(0);
    expect(none.batch.row.r).toEqual(['0.0', '0.1', '0.2', '0.3']);
  });

  it("seeds the first generation batch by the step itself (the default run's draw), later ones apart", () => {
    expect(genBatchStep(7, 0)).toBe(7);
    const later = [1, 2, 3].map((gb) => genBatchStep(7, gb));
    expect(new Set([7, ...later]).size).toBe(4);
  });
});
