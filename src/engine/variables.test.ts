import * as tf from '@tensorflow/tfjs';
import { describe, expect, it } from 'vitest';
import { variableFrom } from './variables';

describe('variableFrom', () => {
  it('leaves one tensor per variable and keeps its values', () => {
    const before = tf.memory().numTensors;
    const v = variableFrom(tf.tensor1d([1, 2, 3]), true, 'variableFrom-test');
    expect(tf.memory().numTensors).toBe(before + 1);
    expect(Array.from(v.dataSync())).toEqual([1, 2, 3]);
    v.dispose();
    expect(tf.memory().numTensors).toBe(before);
  });
});
