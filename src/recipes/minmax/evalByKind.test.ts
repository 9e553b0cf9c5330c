import { describe, expect, it } from 'vitest';
import { rngFor } from '../../data/sandbox/index';
import { sampleQa, type QaFamily, type QaItem } from '../../data/sandbox/qa';
import type { Verdict } from '../../rl/minmax';
import { evalByKind } from './evalByKind';

const item = (family: QaFamily, i: number): QaItem => sampleQa(rngFor(7, 'evalByKind', i), family);

describe('evalByKind: held-out metrics per question kind', () => {
  // count, count, color: no location item.
  const items = [item('count', 0), item('count', 1), item('color', 2)];
  const truth = [1, 0, 1];
  const verdicts: Verdict[] = ['correct', 'correct', 'incorrect'];
  // Per item: (right answer, wrong answer). The count items' wrong answers are both accepted (a blind
  // spot) and the second's right answer is called INCORRECT; the color item's wrong answer is
  // rejected, its right one called INCORRECT.
  const balanced: Verdict[] = ['correct', 'correct', 'incorrect', 'correct', 'incorrect', 'incorrect'];

  it('splits truth accuracy, the monitor score and its balanced accuracy by kind', () => {
    const m = evalByKind(items, truth, verdicts, balanced);
    expect(m['eval/policy_acc_count']).toBe(0.5);
    expect(m['eval/policy_acc_color']).toBe(1);
    expect(m['eval/monitor_says_correct']).toBeCloseTo(2 / 3);
    expect(m['eval/monitor_says_correct_count']).toBe(1);
    expect(m['eval/monitor_says_correct_color']).toBe(0);
    // count: 1 of 2 right answers called CORRECT, 0 of 2 wrong ones INCORRECT.
    expect(m['eval/monitor_acc_balanced_count']).toBe(0.25);
    expect(m['eval/monitor_accepts_wrong_count']).toBe(1);
    expect(m['eval/monitor_acc_balanced_color']).toBe(0.5);
    expect(m['eval/monitor_accepts_wrong_color']).toBe(0);
  });

  it('leaves out a kind with no item, and the monitor metrics without a monitor', () => {
    const m = evalByKind(items, truth, null, null);
    expect(Object.keys(m).sort()).toEqual(['eval/policy_acc_color', 'eval/policy_acc_count']);
  });
});
