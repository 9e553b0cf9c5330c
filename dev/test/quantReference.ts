// Float64 reference for the quantised-matmul checks: y = x W^T and dx = dy W from the
// host-quantised weights (q * scale), independent of any kernel. The browser and Dawn kernel
// tests compare against it.
import { quantCaseData, type QuantCaseSpec } from './quantCase';
import {
  F16Weight,
  Int4Weight,
  Int8Weight,
  packF16x2,
  quantizeInt4,
  quantizeInt8,
  unpackF16x2,
} from '../../src/model/quant';

/** The case's weight as the kernels take it. */
export function quantCaseWeight(c: QuantCaseSpec, w: Float32Array): Int8Weight | Int4Weight | F16Weight {
  const shape: [number, number] = [c.out, c.in];
  return c.kind === 'f16'
    ? new F16Weight(w, shape)
    : c.kind === 'int8'
      ? Int8Weight.fromFloat32(w, shape, { groupSize: c.groupSize })
      : Int4Weight.fromFloat32(w, shape, c.groupSize);
}

/** The case's weights as the host stores them, W(o, k). */
function hostWeights(c: QuantCaseSpec, w: Float32Array): (o: number, k: number) => number {
  if (c.kind === 'f16') {
    const h = unpackF16x2(packF16x2(w, [c.out, c.in]), c.out, c.in);
    return (o, k) => h[o * c.in + k];
  }
  const m =
    c.kind === 'int8'
      ? quantizeInt8(w, [c.out, c.in], { groupSize: c.groupSize })
      : quantizeInt4(w, [c.out, c.in], c.groupSize);
  const nG = c.in / m.groupSize;
  return (o, k) => m.q[o * c.in + k] * m.scales[o * nG + Math.floor(k / m.groupSize)];
}

/** The case's weights as the host stores them, dense float32 [out, in] (q * scale rounded once, as a kernel does). */
export function quantCaseDense(c: QuantCaseSpec): Float32Array {
  const W = hostWeights(c, quantCaseData(c).w);
  const d = new Float32Array(c.out * c.in);
  for (let o = 0; o < c.out; o++) for (let k = 0; k < c.in; k++) d[o * c.in + k] = W(o, k);
  return d;
}

export function quantMatmulF64(c: QuantCaseSpec): { y: Float64Array; dx: Float64Array } {
  const { w, x, dy } = quantCaseData(c);
  const W = hostWeights(c, w);
  const y = new Float64Array(c.rows * c.out);
  const dx = new Float64Array(c.rows * c.in);
  for (let n = 0; n < c.rows; n++) {
    for (let o = 0; o < c.out; o++) {
      let s = 0;
      for (let k = 0; k < c.in; k++) s += x[n * c.in + k] * W(o, k);
      y[n * c.out + o] = s;
    }
    for (let k = 0; k < c.in; k++) {
      let s = 0;
      for (let o = 0; o < c.out; o++) s += dy[n * c.out + o] * W(o, k);
      dx[n * c.in + k] = s;
    }
  }
  return { y, dx };
}
