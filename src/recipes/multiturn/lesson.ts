// Teaching mode's lesson for `multiturn` (shown beside a run of it; the fields: src/contract/lesson.ts).
import type { Lesson } from '../../contract/lesson';

export const multiturnLesson: Lesson = {
  recipe: 'multiturn',
  title: 'Multi-turn safety (SaFeR-Steer)',
  what:
    'Attacks that escalate over several turns (a harmless opener, a soft follow-up, then the real request) are played as whole episodes; every ' +
    'defender reply is scored and the scores are aggregated into one episode reward, so the defender learns to notice where a conversation is going.',
  formula:
    'turn s = max(0, 0.4 safety + 0.4 usefulness + 0.2 format − 0.2 rep3);  R = aggregate(s₀ … sₙ)  (min_mean = 0.3 min + 0.7 mean)',
  combine: 'none',
  termNames: {
    safety: 'mean safety',
    utility: 'mean usefulness',
    format: 'mean format',
    repetition: '− rp · mean rep3',
  },
  weights: ['safetyWeight', 'usefulnessWeight', 'formatWeight', 'repetitionPenalty', 'aggregation'],
  watch: [
    { text: 'Episode reward.', metric: 'reward/mean' },
    { text: 'Entropy of the replies.', metric: 'entropy/mean' },
  ],
};
