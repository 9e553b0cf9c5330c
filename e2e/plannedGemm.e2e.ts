// The planned path's tiled GEMM (matmul/plan_gemm_tiled.wgsl over the learn GEMM's tile loop,
// matmul/gemm_tile_loop.wgsl), the GPU default for projections of GEMM_MIN_ROWS rows or more,
// forced on the software adapter (Node + Dawn: SwiftShader, or lavapipe in its lane):
//  - the kernel alone against a float64 reference and the split GEMV (plan_gemv.wgsl), off the
//    32 x 32 tile's edges, with the fused RMSNorm, plain and gate-up, f32 and int4;
//  - the planned prefill (2 rows x 16-column chunks = 32 GEMM rows) and a batch-32 decode with the
//    tiled GEMM, every weight format the plan takes (f32, f16, int8, int4), against the tfjs path
//    and against the plan's GEMV kernels, with the tiled GEMM counted in the plans' dispatches.
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { useDawn } from './dawnSetup';
import { webgpuDevice } from '../src/engine/webgpu/wgslProgram';
import { GemvMode } from '../src/engine/plan/decodeKernels';
import { GEMM_MIN_ROWS, prefillChunk } from '../src/engine/plan/decodePlan';
import { gemvCase } from '../dev/test/planKernelCases';
import { maxAbs } from '../dev/test/maxAbs';
import { engineOptions, resetEngineOptions, setEngineOptions } from '../src/engine/options';
import { parseModelConfig } from '../src/contract/modelConfig';
import { parseSafetensors } from '../src/model/safetensors';
import { disposeLlama, loadLlama, type LlamaModel, type LoadOptions } from '../src/model/llama';
import {
  plannedDispatches,
  plannedForcedLogits,
  plannedGemm,
  plannedPrefillLogits,
  releaseDecodePlans,
} from '../src/model/planned/decode';
import { f16Quantizer, int4Quantizer, int8Quantizer } from '../src/model/quant';
import { tfjsLogits } from './tfjsPrefix';

useDawn(resetEngineOptions);

/** Largest |got - ref| / scale (elementwise). */
function worstRel(got: ArrayLike<number>, ref: ArrayLike<number>, scale: ArrayLike<number>): number {
  expect(got.length).toBe(ref.length);
  let worst = 0;
  for (let i = 0; i < ref.length; i++) {
    const e = Math.abs(got[i] - ref[i]) / Math.max(scale[i], 1e-30);
    worst = Number.isNaN(e) ? Infinity : Math.max(worst, e);
  }
  return worst;
}

describe('the tiled GEMM kernel against float64 and the split GEMV', () => {
  // K = 100: three whole 32-wide K steps and a partial one; N = 45 and 37 rows: partial tiles.
  const cases = [
    { format: 'f32', mode: GemvMode.Plain, K: 100, N: 45, rows: 37, norm: true },
    { format: 'f32', mode: GemvMode.GateUp, K: 100, N: 45, rows: 37, norm: true },
    { format: 'int4', mode: GemvMode.Plain, K: 128, N: 70, rows: 64, norm: false },
    { format: 'int4', mode: GemvMode.GateUp, K: 96, N: 33, rows: 40, norm: true },
  ] as const;
  for (const c of cases) {
    it(`${c.format} ${c.mode === GemvMode.GateUp ? 'gate-up' : 'plain'} ${c.rows} rows x ${c.N} x ${c.K}${c.norm ? ' (RMSNorm fused)' : ''}: within 1e-6 x sum|x w| of float64 and of the split GEMV`, async () => {
      const spec = { ...c, seed: c.K + c.N };
      const tiled = await gemvCase(webgpuDevice(), { ...spec, layout: 'gemm' });
      const split = await gemvCase(webgpuDevice(), { ...spec, layout: 'split' });
      expect(worstRel(tiled.got, tiled.ref, tiled.mag)).toBeLessThan(1e-6);
      expect(worstRel(tiled.got, split.got, tiled.mag)).toBeLessThan(1e-6);
      // outputs of O(1): an absolute error bound of this size means the values are right
      expect(Math.max(...Array.from(tiled.ref, Math.abs))).toBeGreaterThan(0.1);
    });
  }
});

function fixture(opts: LoadOptions = {}): LlamaModel {
  const dir = resolve('dev', 'fixtures', 'tiny-llama-f32');
  return loadLlama(
    parseModelConfig(readFileSync(resolve(dir, 'config.json'), 'utf8')),
    parseSafetensors(new Uint8Array(readFileSync(resolve(dir, 'model.safetensors')))),
    opts,
  );
}

const tokens = (n: number, salt: number) => [
  1,
  ...Array.from({ length: n - 1 }, (_, t) => ((salt * 7 + t * 13) % 61) + 3),
];

describe('the planned prefill and batch-32 decode on the tiled GEMM (forced), each weight format', () => {
  // Prefill: 2 rows of 40 and 33 tokens, chunks of 16 columns: 32 GEMM rows, three chunks.
  const long = [tokens(40, 1), tokens(33, 2)];
  // Decode: 32 rows of 1 to 6 prompt tokens, a teacher-forced step of 32 GEMM rows.
  const batch = Array.from({ length: 32 }, (_, b) => tokens(1 + (b % 6), b + 3));
  const forced = [0].map((t) => batch.map((_, b) => (5 * b + 11 * t + 4) % 64));

  // Against the GEMV kernels too for f32 and int4 (the per-word and per-element decodes); f16 and
  // int8 against tfjs alone (a GEMV plan more costs ~2 s of SwiftShader compiles per format).
  for (const [format, quantize, gemv] of [
    ['f32', undefined, true],
    ['f16', f16Quantizer(), false],
    ['int8', int8Quantizer(), false],
    ['int4', int4Quantizer(32), true],
  ] as const) {
    it(`${format}: prefill and decode logits within 1e-4 of tfjs${gemv ? ' and 5e-5 of the GEMV kernels' : ''}; the tiled GEMM ran`, async () => {
      const model = fixture(quantize ? { quantize } : {});
      try {
        expect(2 * prefillChunk(2)).toBe(GEMM_MIN_ROWS);
        const perLayer = 6; // q, k, v, o, gate+up, down
        setEngineOptions({ plannedGemm: 'tiled' });
        const prefill = await plannedPrefillLogits(model, long);
        const decode = await plannedForcedLogits(model, batch, forced);
        // the plans above: every layer projection of a prefill chunk tiled, the prefill's head
        // (2 rows) not; at batch 32 every projection of a decode step, the head included
        const small = plannedDispatches(model, 2, 64).tiledGemm;
        expect(small).toEqual({ decode: 0, prefill: perLayer * model.layers.length });
        const big = plannedDispatches(model, 32, 64).tiledGemm;
        expect(big.decode).toBe(perLayer * model.layers.length + 1);
        expect(big.prefill).toBe(perLayer * model.layers.length + 1);
        releaseDecodePlans(model);

        // tfjs: float32 in another summation order; the logits are O(1) to O(10)
        expect(maxAbs(prefill, await tfjsLogits(model, long))).toBeLessThan(1e-4);
        const seqs = batch.map((p, b) => [...p, forced[0][b]]);
        expect(maxAbs(decode[0], await tfjsLogits(model, seqs))).toBeLessThan(1e-4);
        if (gemv) {
          setEngineOptions({ plannedGemm: 'gemv' });
          expect(maxAbs(prefill, await plannedPrefillLogits(model, long))).toBeLessThan(5e-5);
          expect(maxAbs(decode[0], (await plannedForcedLogits(model, batch, forced))[0])).toBeLessThan(5e-5);
          expect(plannedDispatches(model, 32, 64).tiledGemm).toEqual({ decode: 0, prefill: 0 });
        }
        // logits of O(1) that differ by row: a wrong row, unit or weight would show
        expect(Math.max(...Array.from(prefill, Math.abs))).toBeGreaterThan(1);
        expect(maxAbs(prefill.subarray(0, 64), prefill.subarray(64, 128))).toBeGreaterThan(0.1);
        expect(maxAbs(decode[0].subarray(0, 64), decode[0].subarray(64, 128))).toBeGreaterThan(0.1);
      } finally {
        setEngineOptions({ plannedGemm: null });
        releaseDecodePlans(model);
        disposeLlama(model);
      }
    });
  }

  it('picks the tiled GEMM by kernel family when not forced: GPU kernels tiled, software kernels the GEMVs', () => {
    const lane = engineOptions().kernelVariants;
    setEngineOptions({ kernelVariants: 'gpu' });
    expect(plannedGemm()).toBe('tiled');
    setEngineOptions({ kernelVariants: 'software' });
    expect(plannedGemm()).toBe('gemv');
    setEngineOptions({ kernelVariants: 'software', plannedGemm: 'tiled' });
    expect(plannedGemm()).toBe('tiled');
    setEngineOptions({ kernelVariants: lane, plannedGemm: null });
  });
});
