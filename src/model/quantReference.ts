// Float64 reference for the quantised-matmul checks: y = x W^T and dx = dy W from the
// host-quantised weights (q * scale), independent of any kernel. The browser and Dawn kernel
// tests compare against it.
import { quantCaseData, type QuantCaseSpec } from '../engine/testing/quantCase';
import { quantizeInt4, quantizeInt8 } from './quant';

export function quantMatmulF64(c: QuantCaseSpec): { y: Float64Array; dx: Float64Array } {
  const { w, x, dy } = quantCaseData(c);
  const m = c.bits === 8 ? quantizeInt8(w, [c.out, c.in], { groupSize: c.groupSize }) : quantizeInt4(w, [c.out, c.in], c.groupSize);
  const nG = c.in / m.groupSize;
  const W = (o: number, k: number) => m.q[o * c.in + k] * m.scales[o * nG + Math.floor(k / m.groupSize)];
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
