// Dynamic sampling (DAPO; veRL `algorithm.filter_groups`): a group whose rollouts all score the
// same gets a GRPO advantage of 0 on every row, so it teaches nothing and only dilutes the
// token mean. veRL drops such groups and keeps generating batches of fresh prompts until the
// batch holds `train_batch_size` groups (recipe/dapo/dapo_ray_trainer.py):
//
//   kept      a group is kept when std(metric over its rows) > 0, or it has a single row
//   fill      generate another batch while kept groups < target and gen batches < max_num_gen_batches
//             (max <= 0: no cap); then the batch is cut to the first target groups
//   cap       veRL raises an error when the cap is hit short of the target; the lab trains on the
//             groups it kept (fewer than the target, maybe none) and reports it (filter/short)
//
// The metric is the recipe's (veRL: acc, score, seq_reward = the score before the KL penalty, or
// seq_final_reward = after it). Pure bookkeeping on [B] arrays; the recipe does the generation.
import { groupRows } from './advantages';
import type { GroupIndex } from './types';

/** veRL's `algorithm.filter_groups`. */
export interface FilterGroupsConfig {
  enable: boolean;
  /** Generation batches per step at most (veRL max_num_gen_batches; the lab needs >= 1). */
  maxNumGenBatches: number;
}

/** Group ids of a batch split by veRL's rule: `kept` (std > 0 or one row) and `dropped`, in first-seen order. */
export function splitGroupsByVariance(
  metric: ArrayLike<number>,
  index: GroupIndex,
): { kept: (string | number)[]; dropped: (string | number)[] } {
  if (metric.length !== index.length)
    throw new Error(`filter_groups: ${metric.length} metric values for ${index.length} group ids`);
  const kept: (string | number)[] = [];
  const dropped: (string | number)[] = [];
  for (const [id, rows] of groupRows(index)) {
    // np.std > 0 <=> some value differs from the first (exactly: equal floats have std 0).
    const varies = rows.some((r) => metric[r] !== metric[rows[0]]);
    (varies || rows.length === 1 ? kept : dropped).push(id);
  }
  return { kept, dropped };
}

/** One generation batch as the accumulator sees it: a metric and a group id per row. */
export interface GenBatchScores {
  metric: ArrayLike<number>;
  index: GroupIndex;
}

/** Rows of one generation batch that the step trains on, by generation batch. */
export interface DynamicSelection {
  /** Per generation batch, the rows kept (groups in order, cut at the target). */
  rows: number[][];
  /** Groups kept (<= target). */
  keptGroups: number;
  /** Zero-variance groups dropped over all generation batches. */
  droppedGroups: number;
  /** Kept groups beyond the target that the cut left out (veRL batch[:traj_bsz]). */
  surplusGroups: number;
  genBatches: number;
}

/**
 * Accumulates generation batches of one step (veRL's loop): `add` each batch's scores, ask
 * `wantsMore()` before generating another, then `selection()` for the rows to train on.
 */
export class DynamicBatch {
  private readonly batches: { kept: (string | number)[]; dropped: number; index: GroupIndex }[] = [];
  private kept = 0;

  constructor(
    /** Groups the step should train on (veRL train_batch_size, in prompts). */
    readonly targetGroups: number,
    readonly config: FilterGroupsConfig,
  ) {
    if (!Number.isInteger(targetGroups) || targetGroups < 1)
      throw new Error(`filter_groups: target groups must be a positive integer (got ${targetGroups})`);
    if (!Number.isInteger(config.maxNumGenBatches) || config.maxNumGenBatches < 1)
      throw new Error(`filter_groups: maxNumGenBatches must be an integer >= 1 (got ${config.maxNumGenBatches})`);
  }

  add(scores: GenBatchScores): void {
    // Filter off: every group counts (one generation batch, nothing dropped).
    const s = this.config.enable
      ? splitGroupsByVariance(scores.metric, scores.index)
      : { kept: [...groupRows(scores.index).keys()], dropped: [] };
    this.batches.push({ kept: s.kept, dropped: s.dropped.length, index: scores.index });
    this.kept += s.kept.length;
  }

  get genBatches(): number {
    return this.batches.length;
  }

  /** Another generation batch is due: filtering on, short of the target, under the cap. */
  wantsMore(): boolean {
    if (this.batches.length === 0) return true;
    return this.config.enable && this.kept < this.targetGroups && this.batches.length < this.config.maxNumGenBatches;
  }

  selection(): DynamicSelection {
    let room = this.targetGroups;
    let dropped = 0;
    let surplus = 0;
    const rows = this.batches.map((b) => {
      dropped += b.dropped;
      const take = new Set(b.kept.slice(0, Math.max(0, room)));
      surplus += b.kept.length - take.size;
      room -= take.size;
      const out: number[] = [];
      for (let r = 0; r < b.index.length; r++) if (take.has(b.index[r])) out.push(r);
      return out;
    });
    return {
      rows,
      keptGroups: this.targetGroups - Math.max(0, room),
      droppedGroups: dropped,
      surplusGroups: surplus,
      genBatches: this.batches.length,
    };
  }
}

/** The step's report of a selection: filter/* metrics (veRL logs num_gen_batches). */
export function dynamicSamplingMetrics(s: DynamicSelection, targetGroups: number): Record<string, number> {
  return {
    'filter/gen_batches': s.genBatches,
    'filter/kept_groups': s.keptGroups,
    'filter/dropped_groups': s.droppedGroups,
    'filter/resampled_batches': s.genBatches - 1,
    'filter/short': s.keptGroups < targetGroups ? 1 : 0,
  };
}
