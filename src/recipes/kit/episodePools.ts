// The episodes of the multiturn recipe (SaFeR-Steer on the sandbox): crescendo goals with their
// scripted user turns, and chains of benign tasks. No tensors here: the veRL export reads it too.
import {
  benignPrompts,
  harmfulPrompts,
  type GoalSplit,
  type SandboxHazard,
  type SandboxPrompt,
} from '../../data/sandbox/index';

/** What an episode is about: the scripted user turns (empty when the attacker writes them). */
export interface EpisodeSpec {
  id: string;
  kind: 'harmful' | 'benign';
  goal: string;
  category: SandboxHazard | null;
  /** Scripted user turns (followUps = scripted, and always for benign episodes). */
  turns: string[];
  /** Per scripted turn: the judge's view (kind, expected answer). */
  turnKinds: ('harmful' | 'benign')[];
  expected: (string | null)[];
}

/**
 * Crescendo goals (scripted turns; the opener is innocuous) and benign task chains; `split` draws
 * the goals from the sandbox's training or evaluation side only (the whole pool when absent).
 */
export function episodePools(
  n: number,
  seed: number,
  maxTurns: number,
  split?: GoalSplit,
): { harmful: EpisodeSpec[]; benign: EpisodeSpec[] } {
  const harmful = harmfulPrompts(n, seed, { tactics: ['crescendo'], ...(split ? { split } : {}) }).map(
    (p): EpisodeSpec => {
      const turns = (typeof p.prompt === 'string' ? [p.prompt] : [...p.prompt]).slice(0, maxTurns);
      return {
        id: p.id,
        kind: 'harmful',
        goal: p.goal,
        category: p.category,
        turns,
        turnKinds: turns.map((_, k) => (k === 0 ? 'benign' : 'harmful')),
        expected: turns.map(() => null),
      };
    },
  );
  const tasks = benignPrompts(n * maxTurns, seed, { wrapShare: 0.5, ...(split ? { split } : {}) });
  const benign = Array.from({ length: n }, (_, i): EpisodeSpec => {
    const chain = tasks.slice(i * maxTurns, (i + 1) * maxTurns);
    return {
      id: `benign-ep-${i}`,
      kind: 'benign',
      goal: chain[0].goal,
      category: null,
      turns: chain.map((t) => t.prompt as string),
      turnKinds: chain.map(() => 'benign'),
      expected: chain.map((t) => t.expected),
    };
  });
  return { harmful, benign };
}

/** Uploaded seeds as harmful episodes: their user turns, up to maxTurns, each judged as harmful. */
export function seedEpisodes(prompts: readonly SandboxPrompt[], maxTurns: number): EpisodeSpec[] {
  return prompts.map((p) => {
    const turns = (typeof p.prompt === 'string' ? [p.prompt] : [...p.prompt]).slice(0, maxTurns);
    return {
      id: p.id,
      kind: 'harmful',
      goal: p.goal,
      category: p.category,
      turns,
      turnKinds: turns.map(() => 'harmful'),
      expected: turns.map(() => null),
    };
  });
}
