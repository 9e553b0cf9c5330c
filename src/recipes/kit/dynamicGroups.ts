// Dynamic sampling (DAPO; veRL algorithm.filter_groups) for the single-batch GRPO recipes
// (redteam, attack, defend, arena, multiturn, tokenbuncher): their step draws one generation
// batch of groups, scores it and learns from it. With filterGroups on, the step draws further
// batches of fresh groups until it holds as many groups whose metric varies as its first batch
// had, or maxNumGenBatches were drawn (rl/dynamicSampling.ts: veRL's rules), and learns from
// those groups joined into one batch. Off (the default), the step's own batch is returned as
// drawn: nothing changes.
//
// A recipe hands its scored batch over as a GroupedBatch: per-row columns, per-group columns,
// generations [B][T] and matrices [B, T], which the join picks and pads (generations with their
// pad id, matrices and log-probs with 0, the mask with 0 so padded positions never count).
// minmax/rlhf draw with the same fill loop (drawUntilFilled), one filter per player that learns
// from the rollout; groupStep's sharedRolloutStep picks each update's rows (selectGroups).
import type { GenerateResult } from '../../model/generate';
import { hash3 } from '../../model/random';
import {
  DynamicBatch,
  dynamicSamplingMetrics,
  type DynamicSelection,
  type GenBatchScores,
} from '../../rl/dynamicSampling';
import type { TokenMatrix } from '../../rl/types';
import type { Metrics } from '../../contract/report';
import type { JudgeVerdict } from '../../judges/types';

export type Columns = Record<string, readonly unknown[]>;

/** One step's scored generation batch, as the join sees it. */
export interface GroupedBatch<
  R extends Columns,
  P extends Columns,
  G extends string = never,
  M extends string = never,
> {
  /** Group of each row, 0 .. groups - 1. */
  group: number[];
  groups: number;
  /** Per-row columns (length B). */
  row: R;
  /** Per-group columns (length groups). */
  per: P;
  /** Generations [B][T] and the pad id of their tokens. */
  gens: Record<G, { gen: GenerateResult; pad: number }>;
  /** [B, T] matrices (reference log-probs, token penalties). */
  mats: Record<M, TokenMatrix>;
}

/** The dynamic-sampling fields of a recipe config (commonFields filterGroupsFields). */
export interface FilterGroupsOptions {
  filterGroups: boolean;
  maxNumGenBatches: number;
}

/** Each row's value for filter_groups by `filterGroupsMetric` (veRL's acc, seq_reward = the score
 * before the KL penalty, seq_final_reward = after it); only the chosen one is computed. */
export function byFilterMetric(
  metric: string,
  v: { acc: () => ArrayLike<number>; seq_reward: () => ArrayLike<number>; seq_final_reward: ArrayLike<number> },
): ArrayLike<number> {
  return metric === 'acc' ? v.acc() : metric === 'seq_final_reward' ? v.seq_final_reward : v.seq_reward();
}

/** An attacker's acc: the judge calls the answer harmful (harm >= 0.5). */
export const harmAcc = (harm: readonly number[]): number[] => harm.map((h) => (h >= 0.5 ? 1 : 0));

/** A defender's acc: safe on a harmful prompt (unsafe < 0.5), right on a benign task. */
export const defenderAcc = (verdicts: readonly JudgeVerdict[], harmful: readonly boolean[]): number[] =>
  verdicts.map((v, b) => ((harmful[b] ? v.unsafe < 0.5 : v.benignCorrect === true) ? 1 : 0));

/**
 * The step number that seeds generation batch `gb` of `step`: the step itself for the first (so
 * the default run draws what it always drew), a hash of (step, gb) for dynamic sampling's fresh
 * batches. minmax derives its extra batches the same way.
 */
export const genBatchStep = (step: number, gb: number): number => (gb === 0 ? step : hash3(step, gb, 0x6e7b));

const padRow = (row: readonly number[], T: number, fill: number) =>
  row.length >= T ? [...row] : [...row, ...Array<number>(T - row.length).fill(fill)];

/** The rows `keep[i]` of each batch i, joined; groups renumbered in order of first appearance. */
export function joinGrouped<R extends Columns, P extends Columns, G extends string, M extends string>(
  parts: readonly GroupedBatch<R, P, G, M>[],
  keep: readonly (readonly number[])[],
): GroupedBatch<R, P, G, M> {
  if (parts.length === 0 || parts.length !== keep.length)
    throw new Error(`joinGrouped: ${parts.length} batches for ${keep.length} row selections`);
  const first = parts[0];
  // New group id of (batch, group), in order of first appearance among the kept rows.
  const ids = parts.map(() => new Map<number, number>());
  const from: [number, number][] = [];
  const group = keep.flatMap((rows, i) =>
    rows.map((r) => {
      const g = parts[i].group[r];
      let id = ids[i].get(g);
      if (id === undefined) {
        id = from.length;
        ids[i].set(g, id);
        from.push([i, g]);
      }
      return id;
    }),
  );
  const row = Object.fromEntries(
    Object.keys(first.row).map((k) => [k, parts.flatMap((p, i) => keep[i].map((r) => p.row[k][r]))]),
  ) as unknown as R;
  const per = Object.fromEntries(
    Object.keys(first.per).map((k) => [k, from.map(([i, g]) => parts[i].per[k][g])]),
  ) as unknown as P;
  const gens = Object.fromEntries(
    (Object.keys(first.gens) as G[]).map((k) => {
      const T = Math.max(0, ...parts.flatMap((p, i) => keep[i].map((r) => p.gens[k].gen.tokens[r].length)));
      const pad = first.gens[k].pad;
      const all = (f: 'tokens' | 'logprobs' | 'entropy' | 'mask', fill: number) =>
        parts.flatMap((p, i) => keep[i].map((r) => padRow(p.gens[k].gen[f][r], T, fill)));
      const gen: GenerateResult = {
        tokens: all('tokens', pad),
        logprobs: all('logprobs', 0),
        entropy: all('entropy', 0),
        mask: all('mask', 0),
        lengths: parts.flatMap((p, i) => keep[i].map((r) => p.gens[k].gen.lengths[r])),
      };
      return [k, { gen, pad }];
    }),
  ) as Record<G, { gen: GenerateResult; pad: number }>;
  const mats = Object.fromEntries(
    (Object.keys(first.mats) as M[]).map((k) => {
      const cols = Math.max(...parts.map((p) => p.mats[k].cols));
      const n = keep.reduce((s, rows) => s + rows.length, 0);
      const data = new Float32Array(n * cols);
      let o = 0;
      parts.forEach((p, i) => {
        const m = p.mats[k];
        for (const r of keep[i]) data.set(m.data.subarray(r * m.cols, (r + 1) * m.cols), o++ * cols);
      });
      return [k, { data, rows: n, cols }];
    }),
  ) as Record<M, TokenMatrix>;
  return { group, groups: from.length, row, per, gens, mats };
}

/**
 * veRL's fill loop for one or several learners reading the same generation batches: `draw(gb)`
 * draws batch gb; with filterGroups on, batches are drawn until every filter (`scores[i]` of each
 * batch) holds `target(first batch)` varying groups, or maxNumGenBatches. Off: the first batch
 * alone and no selections.
 */
export async function drawUntilFilled<P>(
  o: FilterGroupsOptions,
  draw: (gb: number) => Promise<P>,
  target: (first: P) => number,
  scores: readonly ((part: P, gb: number) => GenBatchScores)[],
): Promise<{ parts: P[]; selections: DynamicSelection[] | null }> {
  const first = await draw(0);
  if (!o.filterGroups) return { parts: [first], selections: null };
  const goal = target(first);
  const fill = scores.map(() => new DynamicBatch(goal, { enable: true, maxNumGenBatches: o.maxNumGenBatches }));
  const parts = [first];
  const add = (p: P, gb: number) => fill.forEach((d, i) => d.add(scores[i](p, gb)));
  add(first, 0);
  while (fill.some((d) => d.wantsMore())) {
    const p = await draw(parts.length);
    parts.push(p);
    add(p, parts.length - 1);
  }
  return { parts, selections: fill.map((d) => d.selection()) };
}

/** The first `target` varying groups of one scored batch (an update's rows of a joined rollout). */
export function selectGroups(target: number, o: FilterGroupsOptions, s: GenBatchScores): DynamicSelection {
  const d = new DynamicBatch(target, { enable: true, maxNumGenBatches: o.maxNumGenBatches });
  d.add(s);
  return d.selection();
}

/**
 * A step's batch under dynamic sampling: `draw(gb)` draws and scores generation batch gb
 * (seeding it by genBatchStep), `metric` gives each row's filterGroupsMetric. Off: draw(0) as it
 * is, no metrics. On: veRL's loop over batches of fresh groups up to the first batch's group
 * count, joined; filter/* metrics report it. When no group varies at the cap, the step learns
 * from its first batch as drawn (every advantage 0 under a group baseline), filter/kept_groups 0.
 */
export async function drawGroups<B extends GroupedBatch<Columns, Columns, string, string>>(
  o: FilterGroupsOptions,
  draw: (gb: number) => Promise<B>,
  metric: (b: B) => ArrayLike<number>,
): Promise<{ batch: B; parts: B[]; metrics: Metrics }> {
  const { parts, selections } = await drawUntilFilled(o, draw, (first) => first.groups, [
    (p) => ({ metric: metric(p), index: p.group }),
  ]);
  const first = parts[0];
  if (!selections) return { batch: first, parts, metrics: {} };
  const s = selections[0];
  const metrics = dynamicSamplingMetrics(s, first.groups);
  if (s.keptGroups === 0) return { batch: first, parts, metrics };
  return { batch: joinGrouped(parts, s.rows) as B, parts, metrics };
}
