import { describe, expect, it } from 'vitest';
import { parseSafetensors, writeSafetensors } from '../model/safetensors';
import { exportMergedModel, mergeAdapterWeights, mergeProjection } from './merge';
import type { BaseDims, PlainLoraAdapter } from './peft';

describe('mergeProjection', () => {
  it('adds s B A to W (hand-computed 2x3, r = 1)', () => {
    // W = [[1,2,3],[4,5,6]], A = [[1,0,-1]], B = [[2],[0.5]], s = 2:
    // s B A = [[4,0,-4],[1,0,-1]] -> [[5,2,-1],[5,5,5]]
    const M = mergeProjection(
      Float32Array.from([1, 2, 3, 4, 5, 6]),
      Float32Array.from([1, 0, -1]),
      Float32Array.from([2, 0.5]),
      2,
      3,
      1,
      2,
    );
    expect(Array.from(M)).toEqual([5, 2, -1, 5, 5, 5]);
  });

  it('refuses sizes that do not fit the shapes', () => {
    expect(() => mergeProjection(new Float32Array(6), new Float32Array(2), new Float32Array(2), 2, 3, 1, 1)).toThrow(
      /A 2 for \[1, 3\]/,
    );
  });
});

describe('mergeAdapterWeights', () => {
  // One layer, hidden 2, 1 head of dim 2, intermediate 2; the adapter targets q only (r = 1, alpha = 2: s = 2).
  const dims: BaseDims = { hiddenSize: 2, intermediateSize: 2, numHeads: 1, numKvHeads: 1, headDim: 2, numLayers: 1 };
  const base = parseSafetensors(
    writeSafetensors({
      'model.embed_tokens.weight': { dtype: 'F32', shape: [3, 2], data: [1, 2, 3, 4, 5, 6] },
      'model.layers.0.self_attn.q_proj.weight': { dtype: 'F32', shape: [2, 2], data: [1, 0, 0, 1] },
      'model.layers.0.self_attn.k_proj.weight': { dtype: 'F32', shape: [2, 2], data: [7, 7, 7, 7] },
    }),
    'model.safetensors',
  );
  const adapter: PlainLoraAdapter = {
    r: 1,
    alpha: 2,
    dropout: 0,
    useRslora: false,
    layers: new Map([[0, { q: { A: Float32Array.from([1, 1]), B: Float32Array.from([0.5, -1]) } }]]),
  };

  it('merges the adapted projection and copies every other tensor', () => {
    const m = mergeAdapterWeights(base, adapter, dims);
    // s B A = 2 * [[0.5, 0.5], [-1, -1]] = [[1, 1], [-2, -2]]
    expect(Array.from(m.get('model.layers.0.self_attn.q_proj.weight')!.data)).toEqual([2, 1, -2, -1]);
    expect(Array.from(m.get('model.layers.0.self_attn.k_proj.weight')!.data)).toEqual([7, 7, 7, 7]);
    expect(Array.from(m.get('model.embed_tokens.weight')!.data)).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('writes a safetensors file that reads back with the merged values', () => {
    const st = parseSafetensors(exportMergedModel(base, adapter, dims, 'defender'), 'merged.safetensors');
    expect(st.names().sort()).toEqual([
      'model.embed_tokens.weight',
      'model.layers.0.self_attn.k_proj.weight',
      'model.layers.0.self_attn.q_proj.weight',
    ]);
    expect(Array.from(st.getFloat32('model.layers.0.self_attn.q_proj.weight'))).toEqual([2, 1, -2, -1]);
  });

  it('names a projection the base lacks', () => {
    const noV: PlainLoraAdapter = {
      ...adapter,
      layers: new Map([[0, { v: { A: Float32Array.from([1, 1]), B: Float32Array.from([1, 1]) } }]]),
    };
    expect(() => mergeAdapterWeights(base, noV, dims)).toThrow(/no tensor "model.layers.0.self_attn.v_proj.weight"/);
  });
});
