// The WGSL decode of each packed weight format (shaders/matmul/weight_decode_<kind>.wgsl), the one
// place a format's bits are read: the tfjs op's GEMV and tiled GEMM, the planned decode's GEMVs
// and tiled GEMM, and the learning step's GEMMs all include it ahead of their own addressing. Each
// snippet declares WPW (weights per i32 word), W_SCALED and weightAt / weightsAt / weightRun4.
import f16Wgsl from '../../../../shaders/matmul/weight_decode_f16.wgsl?raw';
import int8Wgsl from '../../../../shaders/matmul/weight_decode_int8.wgsl?raw';
import int4Wgsl from '../../../../shaders/matmul/weight_decode_int4.wgsl?raw';
import type { WeightKind } from '../../../contract/weightFormat';

/** The packed kinds (f32 is read as it is stored). */
export type PackedWeightKind = Exclude<WeightKind, 'f32'>;

/** The decode snippet of each packed kind: a kind the kernels do not decode fails to compile here. */
export const WEIGHT_DECODE_WGSL: Record<PackedWeightKind, string> = { f16: f16Wgsl, int8: int8Wgsl, int4: int4Wgsl };

export function weightDecodeWgsl(kind: PackedWeightKind): string {
  return WEIGHT_DECODE_WGSL[kind];
}

/** Weights per i32 word of each packed kind: the snippets' WPW (weightDecode.test.ts holds them equal). */
export const WEIGHTS_PER_WORD: Record<PackedWeightKind, number> = { f16: 2, int8: 4, int4: 8 };
