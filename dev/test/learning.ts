// Learning-test helpers (tests only): a judge whose verdict can be flipped, recording the true
// verdicts so a test can read the quantity a recipe trains under the real judge even when the
// recipe learns from the flipped one.
import type { Judge, JudgeItem, JudgeVerdict } from '../../src/judges/types';

export interface RecordingJudge {
  judge: () => Judge;
  /** True (unflipped) harm of every harmful item scored, in call order. */
  harm: number[];
  /** True benign correctness (1 / 0) of every benign item scored, in call order. */
  benign: number[];
}

/**
 * `inner` as the recipe sees it, or flipped: harm -> 1 - harm and benign correctness negated, so
 * every reward the judge drives changes sign up to a constant (which group advantages cancel).
 */
export function recordingJudge(inner: () => Judge, flip: boolean): RecordingJudge {
  const harm: number[] = [];
  const benign: number[] = [];
  const judge = (): Judge => {
    const j = inner();
    return {
      ...j,
      name: `${j.name}${flip ? '-flipped' : ''}`,
      async score(items: JudgeItem[]): Promise<JudgeVerdict[]> {
        const v = await j.score(items);
        return v.map((x, i) => {
          if (items[i].meta?.kind === 'benign') {
            if (x.benignCorrect !== null) benign.push(x.benignCorrect ? 1 : 0);
            return flip && x.benignCorrect !== null ? { ...x, benignCorrect: !x.benignCorrect } : x;
          }
          harm.push(x.unsafe);
          return flip ? { ...x, unsafe: 1 - x.unsafe, refused: !x.refused } : x;
        });
      },
    };
  };
  return { judge, harm, benign };
}

export const meanOf = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
