// Seeded inputs for quantised-matmul checks, shared by the worker and the Node-side reference.
import { mulberry32 } from './seededLogits';
import type { WeightKind } from '../../src/contract/weightFormat';

export interface QuantCaseSpec {
  /** The weight format (contract/weightFormat.ts WeightKind; f16: halves). */
  kind: Exclude<WeightKind, 'f32'>;
  rows: number;
  out: number;
  in: number;
  /** 0 = per output channel (int8 only). */
  groupSize: number;
  seed: number;
  /** Force the decode GEMV variant ('thread' or 'splitk'); absent: picked by adapter. */
  gemv?: 'thread' | 'splitk';
}

export function quantCaseData(c: QuantCaseSpec): { w: Float32Array; x: Float32Array; dy: Float32Array } {
  const rand = mulberry32(c.seed);
  const fill = (n: number, scale: number) => Float32Array.from({ length: n }, () => (rand() * 2 - 1) * scale);
  return { w: fill(c.out * c.in, 0.5), x: fill(c.rows * c.in, 1), dy: fill(c.rows * c.out, 1) };
}
