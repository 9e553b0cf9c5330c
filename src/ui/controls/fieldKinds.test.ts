import { describe, expect, it } from 'vitest';
import { recipeListings } from '../../../dev/test/recipeListings';
import { fieldKind, readModelRef, writeModelRef } from './fieldKinds';

describe('setup form field kinds', () => {
  it('finds the model, judge and algorithm fields of the registered recipes', () => {
    const kinds = Object.fromEntries(
      recipeListings().map((r) => [
        r.name,
        Object.entries(r.schema)
          .filter(([k, f]) => fieldKind(k, f) !== 'plain')
          .map(([k, f]) => `${k}:${fieldKind(k, f)}`),
      ]),
    );
    expect(kinds.redteam).toEqual([
      'defender:model',
      'defenderWeights:weights',
      'judge:judge',
      'guard:model',
      'guardWeights:weights',
      'dataset:dataset',
      'advantage:algorithm',
      'policyLoss:algorithm',
      'klLossEstimator:algorithm',
    ]);
    expect(kinds['attacker-sft']).toEqual(['attacker:model', 'attackerWeights:weights', 'dataset:dataset']);
    expect(kinds.attack).toEqual(expect.arrayContaining(['attacker:model', 'defender:model', 'judge:judge']));
    expect(kinds.arena.slice(0, 5)).toEqual([
      'attacker:model',
      'attackerWeights:weights',
      'defender:model',
      'defenderWeights:weights',
      'judge:judge',
    ]);
    expect(kinds.minmax.slice(0, 4)).toEqual([
      'policy:model',
      'policyWeights:weights',
      'monitor:model',
      'monitorWeights:weights',
    ]);
    expect(kinds.multiturn).toEqual(expect.arrayContaining(['aggregation:algorithm', 'klLossEstimator:algorithm']));
    // A checkpoint path is not a model picker.
    expect(kinds.defend).not.toContain('attackerCheckpoint:model');
    expect(kinds.defend).toContain('dataset:dataset');
    expect(kinds.attack).toContain('dataset:dataset');
  });

  it('reads and writes model references', () => {
    expect(readModelRef('defender')).toEqual({ mode: 'sandbox', name: 'defender' });
    expect(writeModelRef({ mode: 'hub', id: 'HuggingFaceTB/SmolLM2-135M-Instruct', revision: 'main' })).toBe(
      'https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct/resolve/main/',
    );
    expect(readModelRef('https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct/resolve/main/')).toEqual({
      mode: 'hub',
      id: 'HuggingFaceTB/SmolLM2-135M-Instruct',
      revision: 'main',
    });
    expect(writeModelRef({ mode: 'hub', id: 'a/b', revision: 'refs/pr/1' })).toBe(
      'https://huggingface.co/a/b/resolve/refs%2Fpr%2F1/',
    );
    expect(readModelRef('https://huggingface.co/a/b/resolve/refs%2Fpr%2F1/')).toEqual({
      mode: 'hub',
      id: 'a/b',
      revision: 'refs/pr/1',
    });
    expect(readModelRef('http://localhost:9/tiny-llama/')).toEqual({
      mode: 'url',
      url: 'http://localhost:9/tiny-llama/',
    });
    const local = 'http://localhost:4173/local-models/my%20model/';
    expect(readModelRef(local)).toEqual({ mode: 'local', folder: 'my model', url: local });
    expect(writeModelRef(readModelRef(local))).toBe(local);
    expect(() => writeModelRef({ mode: 'hub', id: 'no-owner', revision: 'main' })).toThrow(/the owner is missing/);
  });
});
