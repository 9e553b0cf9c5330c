// The pieces of an export entry: what one recipe contributes to a veRL / TRL export (its prompts
// as dataset rows, the Python compute_score that composes its reward, the constants that reward
// reads, recipe-specific veRL overrides, and every part of the lab's method that veRL cannot
// express, listed in the export's README, never silently dropped), and the builders entries
// share. Each recipe declares its entry in src/recipes/<name>/export.ts; the exporter never
// imports a recipe.
import type { SandboxHazard, SandboxPrompt } from '../../data/sandbox/index';

/** A harmful goal an attacker model writes a prompt for (the recipes' Goal). */
export interface AttackGoal {
  id: string;
  text: string;
  category: SandboxHazard;
}

/** One prompt of the export's dataset: its user message and what the reward needs to know about it. */
export interface DatasetItem {
  id: string;
  text: string;
  groundTruth: Record<string, unknown>;
  /** Multi-turn: what the veRL interaction plays (extra_info.interaction_kwargs.episode, JSON). */
  episode?: Record<string, unknown>;
}

/** A sandbox prompt as a dataset item (ground truth: what the rules judge reads). */
export const fromPrompt = (p: SandboxPrompt): DatasetItem => ({
  id: p.id,
  text: typeof p.prompt === 'string' ? p.prompt : p.prompt.join('\n'),
  groundTruth: { kind: p.kind, category: p.category, expected: p.expected, tactic: p.tactic },
});

export interface DatasetRow {
  data_source: string;
  prompt: { role: 'system' | 'user' | 'assistant'; content: string }[];
  ability: string;
  /** ground_truth: JSON text of {kind, category, expected, tactic}, what the rules judge needs. */
  reward_model: { style: string; ground_truth: string };
  extra_info: {
    split: string;
    index: number;
    prompt_id: string;
    prompt_text: string;
    interaction_kwargs?: { name: string; episode: string };
  };
}

/** A nested veRL override record (dotted paths are split by verlConfig). */
export type VerlOverrides = Record<string, unknown>;

export interface ExportRecipe {
  readonly name: string;
  /** The config field naming the model veRL trains. */
  readonly modelField: string;
  /** Prompts per step in the lab (veRL data.train_batch_size). */
  batchPrompts(c: Cfg): number;
  /** Training and held-out prompts; `attackPrompts` (goal id -> prompt) are prompts the recipe's attacker wrote for attackGoals. */
  dataset(
    c: Cfg,
    seed: number,
    attackPrompts?: Readonly<Record<string, string>>,
  ): { train: DatasetItem[]; val: DatasetItem[] };
  /** Recipes whose harmful prompts an attacker model writes: the goals it writes them for (train, then held-out). */
  attackGoals?(c: Cfg, seed: number): AttackGoal[];
  /** The constants reward.py's CONFIG holds. */
  rewardConstants(c: Cfg): Record<string, unknown>;
  /** Python (the recipe folder's reward.py, imported as text): def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs). */
  readonly computeScore: string;
  /** Recipe-specific veRL keys (dotted), on top of the shared ones. */
  verl(c: Cfg): VerlOverrides;
  /** What the lab does that this export cannot carry to veRL, one sentence each. */
  unsupported(c: Cfg): string[];
  /** Fits TRL's GRPOTrainer (single-turn GRPO on one policy). */
  readonly trl: boolean;
  /** Frozen models reward.py asks (attack's defender, rlhf's monitor): served by the user under the name reward.py sends. */
  frozen?(c: Cfg): FrozenModel[];
  /** More files of the export (the multi-turn interaction and its config), by path. */
  extraFiles?(c: Cfg): Record<string, string>;
}

export type Cfg = Record<string, unknown>;

/** A frozen model reward.py calls through an OpenAI-compatible server. */
export interface FrozenModel {
  /** The config field naming it (its value is also the model name reward.py sends). */
  field: string;
  /** The environment variable reward.py reads the server's URL from. */
  env: string;
  /** What it is, for the README ("defender", "monitor"). */
  role: string;
}
/** A numeric config field. */
export const n = (c: Cfg, k: string) => c[k] as number;

/** The judge fields every reward.py reads. */
export function judgeConstants(c: Cfg): Record<string, unknown> {
  return {
    judge: c.judge,
    judge_text: c.judgeUrlPromptToo === true ? 'prompt+response' : 'response',
    judge_scale: 'probability',
  };
}

export function judgeNotes(c: Cfg): string[] {
  const j = c.judge as string;
  if (j === 'rules' || j === 'rules-partial') return [];
  return [
    `The judge "${j}" is a model: reward.py asks it through the lab's http judge protocol (POST $SPARRING_JUDGE_URL/score {"texts": [response]} -> {"scores": [P(unsafe)]}); serve the guard model behind that endpoint (any server that speaks it).`,
    ...(j === 'http' && c.judgeUrl
      ? [
          `The lab's run scored at judgeUrl = ${String(c.judgeUrl)}: export SPARRING_JUDGE_URL=${String(c.judgeUrl).replace(/\/score\/?$/, '')}.`,
        ]
      : []),
    ...(j === 'llm-guard'
      ? [
          `The lab's llm-guard asks ${String(c.guard)} (${String(c.guardWeights)}) in Llama Guard 3's own prompt (src/judges/llamaGuard3.ts), categories ${String(c.guardCategories) || 'S1-S14'}${c.guardCustomCategories ? ` plus ${String(c.guardCustomCategories)}` : ''}, verdict by ${String(c.guardVerdict)}; the server behind the endpoint should build the same prompt.`,
        ]
      : []),
  ];
}

export const KL_IN_REWARD_NOTE = (beta: number) =>
  `KL in the reward: the lab subtracts klBeta x the MEAN over the response of k1 (logp - logp_ref); veRL's use_kl_in_reward subtracts kl_coef x k1 at EVERY token, i.e. the SUM over the response. The export keeps kl_coef = ${beta}; divide it by the typical response length to match the lab's magnitude.`;

/** defend and tokenbuncher put beta x k1 on every answer token, as their sources and veRL do. */
export const KL_SUM_NOTE = (beta: number) =>
  `KL in the reward: the lab subtracts klBeta x k1 (logp - logp_ref) summed over the response, as veRL's use_kl_in_reward does token by token, so kl_coef = ${beta} carries over unchanged.`;

export const ATTACKER_PROMPTS_NOTE =
  "Attacker prompts: the lab's attacker writes a fresh prompt per goal every step; veRL trains on a fixed prompt set, so the export writes the sandbox's tactic-wrapped prompts of the same goals (the distribution the attacker was fine-tuned on). To train on the attacker's own prompts, sample them once and replace data/train.parquet's prompt column.";

export const POLICY_LOSS_NOTES = (c: Cfg): string[] =>
  c.policyLoss === 'importance_sampling'
    ? [
        "Policy loss: the lab's importance_sampling loss (-sum ratio x A, no clip, summed over the batch's tokens) is exported as veRL's \"gpg\" loss (-logp x A) with loss_agg_mode seq-mean-token-sum: the same gradient direction with one update per batch, scaled by 1 / batch size.",
      ]
    : [];

/** Sandbox prompts (train, held-out) as dataset items. */
export const sandboxItems = (d: { train: SandboxPrompt[]; val: SandboxPrompt[] }) => ({
  train: d.train.map(fromPrompt),
  val: d.val.map(fromPrompt),
});

/** Dataset rows of prompts in veRL's RLHFDataset layout. */
export function datasetRows(recipe: string, prompts: readonly DatasetItem[], split: string): DatasetRow[] {
  return prompts.map((p, i) => ({
    data_source: `sparring/${recipe}`,
    prompt: [{ role: 'user', content: p.text }],
    ability: 'safety',
    reward_model: { style: 'rule', ground_truth: JSON.stringify(p.groundTruth) },
    extra_info: {
      split,
      index: i,
      prompt_id: p.id,
      prompt_text: p.text,
      ...(p.episode ? { interaction_kwargs: { name: 'sparring', episode: JSON.stringify(p.episode) } } : {}),
    },
  }));
}
