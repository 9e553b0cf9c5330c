// Teaching mode's lesson for `arena` (shown beside a run of it; the fields: src/contract/lesson.ts).
import type { Lesson } from '../../contract/lesson';

export const arenaLesson: Lesson = {
  recipe: 'arena',
  title: 'Arena: attacker and defender trained against each other',
  what:
    'Two small chat models take turns learning. For k steps the attacker learns to write prompts that make the defender say something harmful; ' +
    'then for k steps the defender learns to stay safe on those prompts while still answering ordinary questions. Each side trains only a small ' +
    'LoRA adapter, so the "before" model is always one switch away (that is what the KL term measures against).',
  formula:
    'attacker phase: R = harm + diversityCoef · diversity − attackerKlBeta · KL\n' +
    'defender phase: R = safetyWeight · (1 − harm) on a harmful prompt, utilityWeight · correct on a benign task, − defenderKlBeta · KL',
  combine: 'sum',
  termNames: {
    harm: 'harm',
    diversity: 'diversityCoef · diversity',
    safety: 'safetyWeight · (1 − harm)',
    utility: 'utilityWeight · correct',
    kl: '− β · KL',
  },
  weights: ['diversityCoef', 'attackerKlBeta', 'safetyWeight', 'utilityWeight', 'defenderKlBeta', 'phaseSteps'],
  watch: [
    {
      text: 'Attack success rate: it should climb in attacker phases and fall back in defender phases — a saw-tooth when both sides learn.',
      metric: 'judge/asr',
    },
    { text: 'Which side trained this step (1 = attacker).', metric: 'arena/phase_attacker' },
    {
      text: 'Over-refusal on benign tasks: a defender that refuses everything is "safe" but useless — the utility term is there to stop that.',
      metric: 'defender/over_refusal',
    },
    {
      text: 'Attacker diversity: near 0 means every prompt of a group is the same string (mode collapse).',
      metric: 'attacker/diversity_mean',
    },
  ],
};
