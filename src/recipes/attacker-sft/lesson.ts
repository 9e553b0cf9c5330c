// Teaching mode's lesson for `attacker-sft` (shown beside a run of it; the fields: src/contract/lesson.ts).
import type { Lesson } from '../../contract/lesson';

export const attackerSftLesson: Lesson = {
  recipe: 'attacker-sft',
  title: 'Attacker warm-up by supervised fine-tuning (MTSA phase 1)',
  what:
    'Before RL, the attacker is taught by example: pairs of (harmful goal, adversarial prompt) in many tactics — role-play, hypotheticals, ' +
    'crescendos. There is no reward: the loss is the negative log-likelihood of the example prompt.',
  formula: 'loss = − mean over target tokens of log p(token | goal, earlier tokens)   (no reward)',
  combine: 'none',
  noReward: true,
  termNames: {},
  weights: ['lr'],
  watch: [
    { text: 'SFT loss: falls fast, then flattens.', metric: 'loss/sft' },
    {
      text: 'Distinct greedy prompts for held-out goals: low means the attacker copies one template.',
      metric: 'sample/distinct',
    },
  ],
};
