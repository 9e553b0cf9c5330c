// A recipe's dataset field: "sandbox" (the built-in world) or a file the env can read (a path in
// the CLI, an upload or URL in the browser) of harmful prompts in any of the layouts
// contract/promptSets.ts recognises. The rows are split by row (seeded, data/split.ts): training
// draws only the train rows, the held-out evaluation only the eval rows.
import {
  formatQaPrompt,
  qaAnswer,
  type QaExample,
  type SandboxHazard,
  type SandboxPrompt,
} from '../../data/sandbox/index';
import { readQaSet } from '../../data/qaSets';
import { describeSkipped, harmfulRows, readPromptSet } from '../../contract/promptSets';
import { DATA_SPLIT_SEED, EVAL_SHARE, splitRows, type SplitInfo } from '../../data/split';
import type { Goal } from './goals';
import type { RecipeEnv } from './types';

export const SANDBOX_DATASET = 'sandbox';

export interface HarmfulPromptData {
  train: SandboxPrompt[];
  eval: SandboxPrompt[];
  split: SplitInfo;
  /** Rows left out, by line and field ('' when none): the report and the form show it. */
  skipped: string;
  skippedRows: number;
}

/** The dataset field's help line for a recipe that reads harmful prompts. */
export const HARMFUL_DATASET_HELP =
  'harmful prompts: "sandbox" (the built-in world) or a JSONL / CSV file (a path, URL or upload) whose rows give a prompt in ' +
  'prompt, goal, behavior, instruction, question or messages (chat format), with optional category and is_safe (safe rows are left out); ' +
  'a quarter of the rows (seeded) are held out for the evaluation';

/** The dataset field's help line for a recipe whose attacker writes prompts for harmful goals. */
export const HARMFUL_GOALS_HELP =
  'harmful goals: "sandbox" (the built-in world) or a JSONL / CSV file (a path, URL or upload) whose rows give a goal in ' +
  'goal, or else prompt, behavior, instruction, question or messages, with optional category and is_safe (safe rows are left out); ' +
  'a quarter of the rows (seeded) are held out for the evaluation';

/** Reads and splits a harmful prompt file; rows that cannot be used are named and left out. */
export async function loadHarmfulPromptData(
  env: RecipeEnv,
  ref: string,
  recipe: string,
  field = 'dataset',
): Promise<HarmfulPromptData> {
  if (!env.readText)
    throw new Error(`${recipe}: field "${field}" names a file (${ref}) but this environment cannot read files`);
  const set = harmfulRows(readPromptSet(await env.readText(ref), ref));
  if (set.rows.length < 2)
    throw new Error(`${ref}: ${set.rows.length} usable row; ${recipe} needs at least 2 to hold one out for evaluation`);
  const prompts = set.rows.map((r): SandboxPrompt => ({
    id: `${ref}:${r.line}`,
    kind: 'harmful',
    // A chat row's user turns, answered in order (a system turn is not sent).
    prompt: typeof r.prompt === 'string' ? r.prompt : r.prompt.filter((t) => t.role === 'user').map((t) => t.content),
    tactic: null,
    template: null,
    // Judges read the category as a label; an uploaded set's own names pass through unchanged.
    category: r.category as SandboxHazard | null,
    goal: r.goal,
    benignFamily: null,
    expected: null,
  }));
  const s = splitRows(prompts, EVAL_SHARE, DATA_SPLIT_SEED);
  return {
    train: s.train,
    eval: s.eval,
    split: s.info,
    skipped: describeSkipped(set),
    skippedRows: set.skipped.length,
  };
}

export interface HarmfulGoalData extends Omit<HarmfulPromptData, 'train' | 'eval'> {
  train: Goal[];
  eval: Goal[];
}

/** loadHarmfulPromptData read as goals (a row's goal column, else its prompt), for recipes whose attacker writes the prompts. */
export async function loadHarmfulGoalData(
  env: RecipeEnv,
  ref: string,
  recipe: string,
  field = 'dataset',
): Promise<HarmfulGoalData> {
  const d = await loadHarmfulPromptData(env, ref, recipe, field);
  const goal = (p: SandboxPrompt): Goal => ({ id: p.id, text: p.goal, category: p.category as SandboxHazard });
  return { ...d, train: d.train.map(goal), eval: d.eval.map(goal) };
}

export interface QaData {
  train: QaExample[];
  eval: QaExample[];
  split: SplitInfo;
  skippedRows: number;
}

/** Multiple-choice QA rows of a file (data/qaSets.ts) as the game's items, split by row. */
export async function loadQaData(env: RecipeEnv, ref: string, recipe: string, field = 'dataset'): Promise<QaData> {
  if (!env.readText)
    throw new Error(`${recipe}: field "${field}" names a file (${ref}) but this environment cannot read files`);
  const set = readQaSet(await env.readText(ref), ref);
  if (set.items.length < 2)
    throw new Error(
      `${ref}: ${set.items.length} usable QA row; ${recipe} needs at least 2 to hold one out for evaluation`,
    );
  const items = set.items.map((it, i): QaExample => ({
    ...it,
    id: `${ref}:${set.lines[i]}`,
    prompt: formatQaPrompt(it),
    answer: qaAnswer(it),
  }));
  const s = splitRows(items, EVAL_SHARE, DATA_SPLIT_SEED);
  return { train: s.train, eval: s.eval, split: s.info, skippedRows: set.skipped.length };
}

export interface BenignData {
  train: SandboxPrompt[];
  eval: SandboxPrompt[];
  split: SplitInfo;
  skippedRows: number;
}

/** The benign dataset field's help line (utility and over-refusal). */
export const BENIGN_DATASET_HELP =
  'benign tasks: "sandbox" (verifiable arithmetic, reversal and capital questions) or a JSONL / CSV file whose rows give a prompt ' +
  '(as for harmful prompts) and an optional reference answer (answer, reference or expected: correct when the reply contains it); ' +
  'rows marked is_safe false are left out; rows without a reference count toward over-refusal only; a quarter (seeded) are held out';

/** Benign tasks of a file, split by row: a chat row's user turns are joined into one message. */
export async function loadBenignData(
  env: RecipeEnv,
  ref: string,
  recipe: string,
  field = 'benignDataset',
): Promise<BenignData> {
  if (!env.readText)
    throw new Error(`${recipe}: field "${field}" names a file (${ref}) but this environment cannot read files`);
  const set = readPromptSet(await env.readText(ref), ref);
  const rows = set.rows.filter((r) => r.isSafe !== false);
  if (rows.length < 2)
    throw new Error(
      `${ref}: ${rows.length} usable benign row; ${recipe} needs at least 2 to hold one out for evaluation`,
    );
  const tasks = rows.map((r): SandboxPrompt => ({
    id: `${ref}:${r.line}`,
    kind: 'benign',
    prompt:
      typeof r.prompt === 'string'
        ? r.prompt
        : r.prompt
            .filter((t) => t.role === 'user')
            .map((t) => t.content)
            .join('\n'),
    tactic: null,
    template: null,
    category: null,
    goal: r.goal,
    benignFamily: null,
    expected: r.reference,
  }));
  const s = splitRows(tasks, EVAL_SHARE, DATA_SPLIT_SEED, 'benign');
  return {
    train: s.train,
    eval: s.eval,
    split: s.info,
    skippedRows: set.skipped.length + set.rows.length - rows.length,
  };
}

/** A benign file's split for the report: `split/benign_train`, `split/benign_eval`, `data/benign_skipped_rows`. */
export function benignSplitMetrics(b: BenignData): Record<string, number> {
  return {
    'split/benign_train': b.split.trainSize,
    'split/benign_eval': b.split.evalSize,
    'data/benign_skipped_rows': b.skippedRows,
  };
}
