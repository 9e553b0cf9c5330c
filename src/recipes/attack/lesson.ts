// Teaching mode's lesson for `attack` (shown beside a run of it; the fields: src/contract/lesson.ts).
import type { Lesson } from '../../contract/lesson';

export const attackLesson: Lesson = {
  recipe: 'attack',
  title: 'Training the attacker (MTSA, attacker side)',
  what:
    'The attacker model learns, by RL, to rewrite a harmful goal into a prompt that makes a frozen defender comply. The defender never changes, ' +
    'so this measures how much an automated attacker can extract from a fixed model.',
  formula: 'R = harm + diversityCoef · diversity − klBeta · KL',
  combine: 'sum',
  termNames: { harm: 'harm', diversity: 'diversityCoef · diversity', kl: '− β · KL' },
  weights: ['diversityCoef', 'klBeta'],
  watch: [
    { text: 'Attack success rate against the frozen defender.', metric: 'judge/asr' },
    { text: 'Diversity: if it drops to 0 the attacker found one prompt and repeats it.', metric: 'diversity/mean' },
    { text: 'Distinct prompts per step.', metric: 'attack/distinct' },
  ],
};
