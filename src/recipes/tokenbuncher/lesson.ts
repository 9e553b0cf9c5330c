// Teaching mode's lesson for `tokenbuncher` (shown beside a run of it; the fields: src/contract/lesson.ts).
import type { Lesson } from '../../contract/lesson';

export const tokenbuncherLesson: Lesson = {
  recipe: 'tokenbuncher',
  title: 'Token Buncher: make harmful answers too confident to exploit',
  what:
    'RL-based harmful fine-tuning needs the model to explore (sample varied answers) to find a reward signal. Token Buncher trains the defender to ' +
    "answer harmful prompts with very low entropy, so an attacker's RL later has nothing to reinforce, while benign utility is kept.",
  formula:
    'harmful: R = − mean entropy (+ safetyWeight · (1 − harm)) − klBeta · Σ_t KL_t;  benign: R = utilityWeight · correct − klBeta · Σ_t KL_t',
  combine: 'sum',
  termNames: {
    entropy: '− mean entropy',
    safety: 'safetyWeight · (1 − harm)',
    utility: 'utilityWeight · correct',
    kl: '− β · KL',
  },
  weights: ['safetyWeight', 'utilityWeight', 'klBeta', 'noiserEpsilon'],
  watch: [
    { text: 'Entropy on harmful prompts: should drop towards 0.', metric: 'entropy/harmful_mean' },
    { text: 'Benign correctness: should hold.', metric: 'defender/benign_correct' },
    {
      text: "KL to the starting defender: TokenNoiser steps push it up. On the sandbox the source's noise share (0.1) lets it run away and the defence fails; 0.02 with safetyWeight 1 holds only with zero-advantage groups skipped, and no noiser with safetyWeight 1 holds (EXPERIMENTS.md).",
      metric: 'kl/mean',
    },
  ],
};
