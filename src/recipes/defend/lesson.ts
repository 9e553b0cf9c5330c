// Teaching mode's lesson for `defend` (shown beside a run of it; the fields: src/contract/lesson.ts).
import type { Lesson } from '../../contract/lesson';

export const defendLesson: Lesson = {
  recipe: 'defend',
  title: 'Defender RL against an attacker (MTSA-RLVR)',
  what:
    'A frozen attacker writes harmful prompts; the defender answers each G times and learns to answer safely, while benign tasks (some dressed ' +
    'up to look adversarial) keep it from refusing everything. An entropy bonus rewards confident answers.',
  formula:
    'R = safetyWeight · (1 − harm) | utilityWeight · correct  − entropyCoef · mean entropy − klBeta · Σ_t KL_t (per token, as MTSA)',
  combine: 'sum',
  termNames: {
    safety: 'safetyWeight · (1 − harm)',
    utility: 'utilityWeight · correct',
    entropy: '− entropyCoef · H',
    kl: '− β · KL',
  },
  weights: ['safetyWeight', 'utilityWeight', 'entropyCoef', 'klBeta'],
  watch: [
    { text: "Attack success rate of the attacker's prompts: should fall.", metric: 'judge/asr' },
    { text: 'Benign tasks answered correctly: should not fall.', metric: 'defender/benign_correct' },
    { text: 'Over-refusal of benign tasks.', metric: 'defender/over_refusal' },
  ],
};
