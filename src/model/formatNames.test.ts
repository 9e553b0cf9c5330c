// One name for a weight format from the form to the shader: the form's field values (int4-g32),
// the contract's kinds and group sizes (weightSpec), the loaded weight's kind, and the kernels'
// variants (the WGSL decode of each packed kind, the planned GEMV / learn GEMM keys). A format
// added on one side and not the others fails here.
import * as tf from '@tensorflow/tfjs';
import { describe, expect, it } from 'vitest';
import { weightsField } from '../contract/weightFields';
import { WEIGHT_FORMATS, weightSpec } from '../contract/weightFormat';
import { WEIGHT_DECODE_WGSL } from '../engine/kernels/matmul/weightDecode';
import { GemvMode, gemvKernel } from '../engine/plan/decodeKernels';
import { gemmKernel } from '../engine/plan/learnKernels';
import type { FrozenWeight } from './linear';
import { weightQuantizer } from './quant';

describe('weight format names from the form to the shader', () => {
  it("the form offers the contract's formats, and their kinds are exactly f32 and the kinds the shaders decode", () => {
    expect(weightsField('defender').options).toEqual(WEIGHT_FORMATS);
    const formKinds = new Set(WEIGHT_FORMATS.map((f) => weightSpec(f).kind));
    expect([...formKinds].sort()).toEqual(['f32', ...Object.keys(WEIGHT_DECODE_WGSL)].sort());
    // The kind is the form's name up to its group size: int4-g32 -> int4.
    for (const f of WEIGHT_FORMATS) expect(f.split('-g')[0]).toBe(weightSpec(f).kind);
  });

  it("a weight loaded in each form format carries the contract's kind and group size into the kernels' matrices", () => {
    const [out, inp] = [8, 128];
    const w = Float32Array.from({ length: out * inp }, (_, i) => Math.sin(i) / 4);
    for (const f of WEIGHT_FORMATS) {
      const spec = weightSpec(f);
      const quantize = weightQuantizer(f, 'tiny');
      if (!quantize) {
        expect(spec.kind, f).toBe('f32');
        continue;
      }
      const weight = quantize('q_proj', w, [out, inp]) as FrozenWeight & {
        blocks: { kind: string; groupSize: number; packed: tf.Tensor; scales: tf.Tensor }[];
      };
      try {
        expect(weight.kind, f).toBe(spec.kind);
        for (const b of weight.blocks) {
          expect(b.kind, f).toBe(spec.kind);
          if (spec.kind === 'int4') expect(b.groupSize, f).toBe(spec.groupSize);
        }
      } finally {
        weight.dispose();
      }
    }
  });

  it("each form format's kernels are named by its kind (and group size) and include that kind's decode", () => {
    for (const f of WEIGHT_FORMATS) {
      const spec = weightSpec(f);
      const groupSize = spec.kind === 'int4' ? spec.groupSize : 16;
      const gemv = gemvKernel({ shape: 'split', mode: GemvMode.Plain, kind: spec.kind, groupSize, norm: false });
      const gemm = gemmKernel(spec.kind, groupSize);
      const variant = spec.kind === 'f32' || spec.kind === 'f16' ? spec.kind : `${spec.kind}_g${groupSize}`;
      expect(gemv.key, f).toContain(`_${variant}_`);
      expect(gemm.key, f).toMatch(new RegExp(`^learn_gemm_${variant}(_g\\d+)?(_packed)?$`));
      for (const [kind, src] of Object.entries(WEIGHT_DECODE_WGSL)) {
        expect(gemv.body.includes(src), `${f} gemv ${kind}`).toBe(kind === spec.kind);
        expect(gemm.body.includes(src), `${f} gemm ${kind}`).toBe(kind === spec.kind);
      }
    }
  });
});
