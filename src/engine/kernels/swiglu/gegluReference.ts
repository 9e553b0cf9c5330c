// GeGLU's float64 reference (the CPU reference of kernels/swiglu/geglu.ts): inputs from a seeded
// stream, gelu_tanh(g) * u and both gradients of sum(dy * result), written out in float64.
import { mulberry32 } from '../../../contract/mulberry32';

export interface GegluCase {
  g: Float32Array;
  u: Float32Array;
  dy: Float32Array;
  y: Float64Array;
  dg: Float64Array;
  du: Float64Array;
}

/** n gates spread over [-12, 12] (past where tanh saturates), up and dy in [-1, 1]. */
export function gegluCase(n: number, seed: number): GegluCase {
  const rand = mulberry32(seed);
  const g = Float32Array.from({ length: n }, () => (rand() * 2 - 1) * 12);
  const u = Float32Array.from({ length: n }, () => rand() * 2 - 1);
  const dy = Float32Array.from({ length: n }, () => rand() * 2 - 1);
  const c = Math.sqrt(2 / Math.PI);
  const y = new Float64Array(n);
  const dg = new Float64Array(n);
  const du = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const x = g[i];
    const t = Math.tanh(c * (x + 0.044715 * x ** 3));
    const gelu = 0.5 * x * (1 + t);
    const dgelu = 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x * x);
    y[i] = gelu * u[i];
    du[i] = dy[i] * gelu;
    dg[i] = dy[i] * u[i] * dgelu;
  }
  return { g, u, dy, y, dg, du };
}
