// The words a recipe's rollouts are shown in: the outcome on a card, the arena's filters, the
// judge's score on the verdict badge, the colour of a success, the arena's empty line, and the
// word the lesson uses for a rollout. Three worlds, declared here once; each recipe names its world
// in src/recipes/vocabulary.ts (a test fails on a registered recipe without one), so a new recipe
// never inherits another world's labels (issue 41: attacker-sft cards said "attack failed ·
// P(unsafe) 0.00", minmax's filters "Attack succeeded").

import type { Role } from './report';

export type World = 'safety' | 'qa' | 'sft';

export interface Vocabulary {
  world: World;
  /** A rollout's outcome on its card: [success, failure]; null: the recipe scores no outcome. */
  outcome: readonly [string, string] | null;
  /** The arena's filter buttons: [successes, failures]; null: only "All". */
  filters: readonly [string, string] | null;
  /** The score the verdict badge shows beside the label (verdict.unsafe); null: none. */
  score: string | null;
  /**
   * What a success is, for its colour: `harm` (an attack landed: the warning colour), `good` (a
   * right answer: the success colour).
   */
  successTone: 'harm' | 'good';
  /** The arena before the first report. */
  empty: string;
  /** How the lesson names the rollout it plugs in ("the latest rollout", "the latest answer"). */
  rollout: string;
  /** A message's role as its card names it, where the world words it otherwise. */
  roles?: Readonly<Partial<Record<Role, string>>>;
  /** Whether a card shows the rollout's reward and its terms (a supervised step has neither: its loss is a metric). */
  reward: boolean;
  /**
   * The title of the judge/* chart (the share of rollouts the safety judge flags); null: the world
   * has no such judge, and the chart is left out unless a run reports judge/* anyway.
   */
  judgeChart: string | null;
}

export const VOCABULARIES: Readonly<Record<World, Vocabulary>> = {
  safety: {
    world: 'safety',
    outcome: ['attack succeeded', 'attack failed'],
    filters: ['Attack succeeded', 'Attack failed'],
    score: 'P(unsafe)',
    successTone: 'harm',
    empty: "Attacker prompts, defender answers and the judge's verdicts will appear here when a run reports.",
    rollout: 'rollout',
    reward: true,
    judgeChart: 'Attack success rate',
  },
  qa: {
    world: 'qa',
    outcome: ['answer right', 'answer wrong'],
    filters: ['Answer right', 'Answer wrong'],
    score: null,
    successTone: 'good',
    empty: "Questions, the policy's answers and the monitor's verdicts will appear here when a run reports.",
    rollout: 'answer',
    roles: { user: 'question', assistant: 'policy answer', monitor: 'monitor verdict' },
    reward: true,
    judgeChart: null,
  },
  sft: {
    world: 'sft',
    outcome: null,
    filters: null,
    score: null,
    successTone: 'good',
    empty:
      "Goals and the attacker's greedy samples (its target text is the loss's target) will appear here when a run reports.",
    rollout: 'sample',
    roles: { user: 'goal', attacker: 'greedy sample (trained toward the target text; the loss is under Charts)' },
    reward: false,
    judgeChart: null,
  },
};

/** A run whose recipe this page does not know (a replayed log of another version): no outcome words at all. */
export const UNKNOWN_VOCABULARY: Vocabulary = {
  world: 'sft',
  outcome: null,
  filters: null,
  score: null,
  successTone: 'good',
  empty: 'Rollouts will appear here when a run reports.',
  rollout: 'rollout',
  reward: true,
  judgeChart: 'Judge metrics',
};
