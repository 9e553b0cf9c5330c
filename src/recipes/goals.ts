// The harmful goals the attacker-side recipes (attack, defend, arena) draw from, and the tactic
// family of a prompt an attacker wrote.
import { detectTactic, harmfulPrompts, splitAttackerTarget, type SandboxHazard, type Tactic } from '../data/sandbox/index.ts';

export interface Goal {
  id: string;
  text: string;
  category: SandboxHazard;
}

/** `n` seeded harmful sandbox goals (harmfulPrompts' goals, without a tactic wrapper). */
export function harmfulGoals(n: number, seed: number): Goal[] {
  return harmfulPrompts(n, seed).map((p) => ({ id: p.id, text: p.goal, category: p.category as SandboxHazard }));
}

/** The tactic family of an attacker prompt (several lines = crescendo turns). */
export function tacticOf(text: string): Tactic {
  const turns = splitAttackerTarget(text);
  return turns.length > 1 ? 'crescendo' : detectTactic(turns[0] ?? '');
}
