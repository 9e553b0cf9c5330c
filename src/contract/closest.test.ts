import { describe, expect, it } from 'vitest';
import { closestNames, editDistance } from './closest';

describe('closest names', () => {
  it('counts edits as Levenshtein does (hand-worked)', () => {
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(editDistance('groupSzie', 'groupSize')).toBe(2);
    expect(editDistance('', 'abc')).toBe(3);
    expect(editDistance('KL', 'kl')).toBe(0);
  });

  it('offers a few near names, nearest first, and none for a name near nothing', () => {
    const fields = ['groupSize', 'groupCount', 'klCoef', 'klEstimator', 'lr', 'prompts', 'seedPrompts'];
    expect(closestNames('groupSzie', fields)).toEqual(['groupSize']);
    expect(closestNames('kl', fields)).toEqual(['klCoef', 'klEstimator']);
    expect(closestNames('prompt', fields)).toEqual(['prompts', 'seedPrompts']);
    expect(closestNames('nope', fields)).toEqual([]);
    expect(closestNames('blorp', ['attacker', 'defender', 'judge', 'qa'])).toEqual([]);
    expect(closestNames('x', fields.concat(['x1', 'x2', 'x3', 'x4']))).toHaveLength(3);
  });
});
