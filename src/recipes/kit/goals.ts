// The harmful goals the attacker-side recipes (attack, defend, arena) draw from, and the tactic
// family of a prompt an attacker wrote.
import {
  detectTactic,
  harmfulPrompts,
  benignSplitInfo,
  sandboxSplitInfo,
  SINGLE_TURN_TACTICS,
  splitAttackerTarget,
  type GoalSplit,
  type SandboxHazard,
  type SandboxPrompt,
  type Tactic,
} from '../../data/sandbox/index';
import { splitMetrics } from '../../data/split';

/** How redteam and tokenbuncher wrap goals: every single-turn tactic, none, or one tactic. */
export const REDTEAM_TACTIC_MIXES = ['mixed', 'plain', ...SINGLE_TURN_TACTICS] as const;
export type RedteamTacticMix = (typeof REDTEAM_TACTIC_MIXES)[number];

/** The tactics a mix wraps goals in. */
export function tacticList(mix: RedteamTacticMix): readonly Tactic[] {
  if (mix === 'mixed') return SINGLE_TURN_TACTICS;
  if (mix === 'plain') return ['direct'];
  return [mix];
}

/** A sandbox prompt as one user message (a multi-turn prompt's turns joined by newlines). */
export const promptText = (p: SandboxPrompt): string => (typeof p.prompt === 'string' ? p.prompt : p.prompt.join('\n'));

export interface Goal {
  id: string;
  text: string;
  category: SandboxHazard;
}

/**
 * `n` seeded harmful sandbox goals (harmfulPrompts' goals, without a tactic wrapper) from one side
 * of the sandbox's train / eval goal split: training pools draw 'train', held-out evaluations 'eval'.
 */
export function harmfulGoals(n: number, seed: number, split: GoalSplit): Goal[] {
  return harmfulPrompts(n, seed, { split }).map((p) => ({
    id: p.id,
    text: p.goal,
    category: p.category as SandboxHazard,
  }));
}

/** The sandbox goal split's sizes and seed, for an evaluation's report (`split/train`, `split/eval`, `split/seed`). */
export const sandboxSplitMetrics = (): Record<string, number> => splitMetrics(sandboxSplitInfo());

/** The sandbox benign task split's sizes (`split/benign_train`, `split/benign_eval`), as a benign file's. */
export function sandboxBenignSplitMetrics(): Record<string, number> {
  const b = benignSplitInfo();
  return { 'split/benign_train': b.trainSize, 'split/benign_eval': b.evalSize };
}

/** The tactic family of an attacker prompt (several lines = crescendo turns). */
export function tacticOf(text: string): Tactic {
  const turns = splitAttackerTarget(text);
  return turns.length > 1 ? 'crescendo' : detectTactic(turns[0] ?? '');
}
