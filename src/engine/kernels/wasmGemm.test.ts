import * as tf from '@tensorflow/tfjs';
import '@tensorflow/tfjs-backend-wasm';
import { afterAll, describe, expect, it } from 'vitest';
import { installWasmKernels, wasmGemmCalls } from './wasmGemm';
import { gemmSharedWasmBase64, gemmWasmBase64 } from './wasm-gemm/gemmBinary';
import { rmsNorm, rope, swiglu, tokenStats, wasmAttention } from '../index';
import { tokenStatsF64, tokenStatsGradF64 } from './token-stats/tokenStatsReference';
import { NORM_EPS, normCaseData, rmsNormF64 } from './rms-norm/fusedNormReference';
import { seededLogits, seededUpstream } from '../../../dev/test/seededLogits';

// Our batched SIMD GEMM on tfjs-wasm against tfjs-cpu's BatchMatMul: every transpose pair, the
// block sizes' tails (M, N not multiples of 4 or 8), a broadcast batch of one, and the
// attention's shapes ([b, kvHeads, group x T, d]).
installWasmKernels();

const draw = (shape: number[], seed: number) => Array.from(tf.randomNormal(shape, 0, 1, 'float32', seed).dataSync());

function product(
  backend: string,
  a: { shape: number[]; data: number[] },
  b: { shape: number[]; data: number[] },
  tA: boolean,
  tB: boolean,
) {
  tf.setBackend(backend);
  return tf.tidy(() => {
    const y = tf.matMul(tf.tensor(a.data, a.shape), tf.tensor(b.data, b.shape), tA, tB);
    return { shape: y.shape, data: Array.from(y.dataSync()) };
  });
}

const cases: [string, number[], number[]][] = [
  ['3 x 13 x 9 by 3 x 9 x 11', [3, 13, 9], [3, 9, 11]],
  ['attention scores [2,2,126,24] x [2,2,63,24]^T', [2, 2, 126, 24], [2, 2, 24, 63]],
  ['one product over several column panels, 37 x 40 by 40 x 901', [37, 40], [40, 901]],
  ['a B past NOPACK columns, copied panel by panel, 5 x 40 by 40 x 1100', [5, 40], [40, 1100]],
  ['fewer than 4 rows, 2 x 3 x 10 by 2 x 10 x 9', [2, 3, 10], [2, 10, 9]],
  ['batch-one broadcast of b', [4, 7, 5], [1, 5, 17]],
  ['batch-one broadcast of a', [1, 6, 5], [3, 5, 8]],
  // a transposed B is turned panel by panel in the scratch, in chunks of k past 2048 (PANEL / 8)
  ['a transposed B over several panels, 37 x 600 by 600 x 70', [37, 600], [600, 70]],
  ['K past one chunk of a transposed B, 6 x 2500 by 2500 x 13', [6, 2500], [2500, 13]],
  ['fewer than 4 rows and K past one chunk, 2 x 2500 by 2500 x 9', [2, 2500], [2500, 9]],
];

describe('batched products on tfjs-wasm (our GEMM) against tfjs-cpu', () => {
  afterAll(() => tf.setBackend('cpu'));
  for (const [name, sa, sb] of cases)
    for (const [tA, tB] of [
      [false, false],
      [false, true],
      [true, false],
      [true, true],
    ])
      it(`${name}, transposeA ${tA}, transposeB ${tB}`, async () => {
        await tf.setBackend('wasm');
        // Stored the way the flags read them: a transposed operand has its last two dims swapped.
        const swap = (s: number[]) => [...s.slice(0, -2), s[s.length - 1], s[s.length - 2]];
        const a = { shape: tA ? swap(sa) : sa, data: draw(sa, 1) };
        const b = { shape: tB ? swap(sb) : sb, data: draw(sb, 2) };
        const before = wasmGemmCalls();
        const wasm = product('wasm', a, b, tA, tB);
        expect(wasmGemmCalls()).toBe(before + 1);
        const cpu = product('cpu', a, b, tA, tB);
        expect(wasm.shape).toEqual(cpu.shape);
        const err = Math.max(...wasm.data.map((v, i) => Math.abs(v - cpu.data[i])));
        // tfjs-cpu sums k in blocks: a long K's float32 sums differ in their last bits
        const K = sa[sa.length - 1];
        const scale = Math.max(...cpu.data.map(Math.abs));
        expect(err).toBeLessThan(K < 100 ? 1e-5 : 4e-6 * scale);
        // ours sums each output over k in order, one multiply and one add per step: a float32
        // sum in that order, exactly (the first output of each batch, every k)
        const [M, N] = [sa[sa.length - 2], sb[sb.length - 1]];
        const at = (d: number[], s: number[], t: boolean, i: number, j: number, bat: number) => {
          const [R, C] = [s[s.length - 2], s[s.length - 1]];
          const base = (s.length > 2 && s[0] > 1 ? bat : 0) * R * C;
          return d[base + (t ? j * R + i : i * C + j)];
        };
        const batches = wasm.shape.length > 2 ? wasm.shape.slice(0, -2).reduce((p, d) => p * d, 1) : 1;
        for (let bat = 0; bat < Math.min(batches, 3); bat++) {
          let acc = 0;
          for (let k = 0; k < K; k++)
            acc = Math.fround(acc + Math.fround(at(a.data, sa, tA, 0, k, bat) * at(b.data, sb, tB, k, 0, bat)));
          expect(wasm.data[bat * M * N]).toBe(acc);
        }
      });
});

describe('RMSNorm, RoPE and SwiGLU as one kernel of ours on tfjs-wasm', () => {
  afterAll(() => tf.setBackend('cpu'));
  const x = draw([2, 3, 5, 8], 3);
  const w = draw([8], 4);
  const cos = draw([2, 1, 5, 8], 5);
  const sin = draw([2, 1, 5, 8], 6);
  const run = (backend: string, f: () => tf.Tensor) => {
    tf.setBackend(backend);
    return tf.tidy(() => Array.from(f().dataSync()));
  };
  const cases: [string, () => tf.Tensor, string, number][] = [
    ['rmsNorm', () => rmsNorm(tf.tensor(x, [2, 3, 5, 8]), tf.tensor1d(w), 1e-5), 'SparringWasmRmsNorm', 1],
    [
      'rope',
      () => rope(tf.tensor4d(x, [2, 3, 5, 8]), tf.tensor4d(cos, [2, 1, 5, 8]), tf.tensor4d(sin, [2, 1, 5, 8])),
      'SparringWasmRope',
      1,
    ],
    [
      "rope's gradient (under a weighted sum)",
      () => {
        const wts = tf.tensor4d(draw([2, 3, 5, 8], 7), [2, 3, 5, 8]);
        const [c, s] = [tf.tensor4d(cos, [2, 1, 5, 8]), tf.tensor4d(sin, [2, 1, 5, 8])];
        return tf.grad((v: tf.Tensor) => tf.sum(tf.mul(rope(v as tf.Tensor4D, c, s), wts)))(
          tf.tensor4d(x, [2, 3, 5, 8]),
        );
      },
      'SparringWasmRope',
      2,
    ],
    [
      'swiglu',
      () => swiglu(tf.tensor(x, [2, 3, 5, 8]), tf.tensor(draw([2, 3, 5, 8], 8), [2, 3, 5, 8])),
      'SparringWasmSwiglu',
      1,
    ],
    [
      "swiglu's gradients (under a weighted sum)",
      () => {
        const [g, u] = [tf.tensor(x, [2, 3, 5, 8]), tf.tensor(draw([2, 3, 5, 8], 8), [2, 3, 5, 8])];
        const wts = tf.tensor(draw([2, 3, 5, 8], 9), [2, 3, 5, 8]);
        const [dg, du] = tf.grads((a: tf.Tensor, b: tf.Tensor) => tf.sum(tf.mul(swiglu(a, b), wts)))([g, u]);
        return tf.concat([dg.reshape([-1]), du.reshape([-1])]);
      },
      'SparringWasmSwigluGrad',
      1,
    ],
  ];
  for (const [name, f, kernel, n] of cases)
    it(`${name}: tfjs-cpu's values, in ${n} kernel(s) of ours`, async () => {
      await tf.setBackend('wasm');
      const p = await tf.profile(() => {
        f().dispose();
        return [];
      });
      expect(p.kernels.filter((k) => k.name === kernel)).toHaveLength(n);
      const got = run('wasm', f);
      const want = run('cpu', f);
      expect(Math.max(...got.map((v, i) => Math.abs(v - want[i])))).toBeLessThan(1e-5);
    });
});

describe("SwiGLU's sigmoid on tfjs-wasm over the float range", () => {
  afterAll(() => tf.setBackend('cpu'));
  it('gives (g sigmoid(g)) u of float64 within 1e-6 relative, its exponent clamped at +-87', async () => {
    await tf.setBackend('wasm');
    const g = [...Array.from({ length: 2001 }, (_, i) => -100 + i / 10), -1e9, 1e9, 0, -87.5, 87.5];
    const u = g.map((_, i) => 0.5 + (i % 7) / 3);
    const got = tf.tidy(() => Array.from(swiglu(tf.tensor1d(g), tf.tensor1d(u)).dataSync()));
    g.forEach((x, i) => {
      const [gf, uf] = [Math.fround(x), Math.fround(u[i])];
      const want = (gf / (1 + Math.exp(-gf))) * uf;
      expect(Math.abs(got[i] - want)).toBeLessThanOrEqual(1e-6 * Math.abs(want) + 1e-28);
    });
  });
});

describe('rmsNorm under a tape on tfjs-wasm: one kernel of ours each way', () => {
  afterAll(() => tf.setBackend('cpu'));
  it('gives the float64 reference y, dx and dw', async () => {
    await tf.setBackend('wasm');
    const spec = { rows: 21, hidden: 96, batch: 1, heads: 1, len: 1, headDim: 2, seed: 42 };
    const d = normCaseData(spec);
    const ref = rmsNormF64(spec, d);
    const [x, w, dy] = [tf.tensor(d.x, [3, 7, 96]), tf.tensor1d(d.w), tf.tensor(d.dy, [3, 7, 96])];
    const run = () =>
      tf.valueAndGrads((a: tf.Tensor, b: tf.Tensor) => tf.sum(tf.mul(rmsNorm(a, b as tf.Tensor1D, NORM_EPS), dy)))([
        x,
        w,
      ]);
    const p = await tf.profile(() => {
      const { value, grads } = run();
      tf.dispose([value, ...grads]);
      return [];
    });
    expect(p.kernels.filter((k) => k.name.startsWith('SparringWasmRmsNorm')).map((k) => k.name)).toEqual([
      'SparringWasmRmsNormTaped',
      'SparringWasmRmsNormGrad',
    ]);
    const { grads } = run();
    // the value as the taped op gives it (under a tape)
    const taped = tf.tidy(() => {
      let out: Float32Array = new Float32Array(0);
      tf.grad((a: tf.Tensor) => {
        const v = rmsNorm(a, w, NORM_EPS);
        out = v.dataSync() as Float32Array;
        return tf.sum(tf.mul(v, dy));
      })(x);
      return out;
    });
    const maxErr = (got: ArrayLike<number>, want: Float64Array) =>
      Math.max(...Array.from(got, (v, i) => Math.abs(v - want[i]) / (1 + Math.abs(want[i]))));
    expect(maxErr(taped, ref.y)).toBeLessThan(1e-6);
    expect(maxErr(grads[0].dataSync(), ref.dx)).toBeLessThan(1e-6);
    expect(maxErr(grads[1].dataSync(), ref.dw)).toBeLessThan(1e-5);
  });
});

describe('grouped-query attention on tfjs-wasm: one kernel of ours each way', () => {
  afterAll(() => tf.setBackend('cpu'));
  // B 2, 4 query heads on 2 kv heads, L 5 queries over C 7 slots (a cache's shape), D 6 (a tail
  // past the 4 lanes), a causal mask with a masked slot; then k^T past the scratch (C D > 16384:
  // the whole rows, no stop at the last unmasked column)
  describe.each([
    [2, 4, 2, 5, 7, 6],
    [1, 2, 1, 6, 700, 24],
  ])('B %i, nH %i, nKV %i, L %i, C %i, D %i', (B, nH, nKV, L, C, D) => {
    const mask = Array.from({ length: B * L * C }, (_, i) => {
      const [b, r, j] = [Math.floor(i / (L * C)), Math.floor(i / C) % L, i % C];
      return j <= r + C - L && !(b === 1 && j === 2) ? 0 : -1e9;
    });
    const [q, k, v, w] = [
      draw([B, nH, L, D], 21),
      draw([B, nKV, C, D], 22),
      draw([B, nKV, C, D], 23),
      draw([B, L, nH * D], 24),
    ];
    /** llama.ts's stock attention: the products, the scale, the mask, softmax, heads back in place. */
    const stock = (qt: tf.Tensor, kt: tf.Tensor, vt: tf.Tensor, m: tf.Tensor) => {
      const G = nH / nKV;
      const scores = tf.matMul(qt.reshape([B, nKV, G * L, D]), kt, false, true).mul(1 / Math.sqrt(D));
      const p = tf.softmax(scores.reshape([B, nKV, G, L, C]).add(m), -1).reshape([B, nKV, G * L, C]);
      return tf
        .matMul(p, vt)
        .reshape([B, nH, L, D])
        .transpose([0, 2, 1, 3])
        .reshape([B, L, nH * D]);
    };
    const run = (f: typeof stock) =>
      tf.tidy(() => {
        const m = tf.tensor(mask, [B, 1, 1, L, C]);
        const xs = [tf.tensor(q, [B, nH, L, D]), tf.tensor(k, [B, nKV, C, D]), tf.tensor(v, [B, nKV, C, D])];
        const y = f(xs[0], xs[1], xs[2], m);
        const grads = tf.grads((a: tf.Tensor, b: tf.Tensor, c: tf.Tensor) =>
          tf.sum(tf.mul(f(a, b, c, m), tf.tensor(w, y.shape))),
        )(xs);
        return [y, ...grads].map((t) => Array.from(t.dataSync()));
      });
    it("gives the stock ops' values and q, k, v gradients on tfjs-cpu, and the float64 forward", async () => {
      await tf.setBackend('wasm');
      const ours = (a: tf.Tensor, b: tf.Tensor, c: tf.Tensor, m: tf.Tensor) =>
        wasmAttention(a as tf.Tensor4D, b as tf.Tensor4D, c as tf.Tensor4D, m, nH, nKV)!;
      const p = await tf.profile(() => {
        run(ours);
        return [];
      });
      expect(p.kernels.filter((x) => x.name.startsWith('SparringWasmAttention')).map((x) => x.name)).toEqual([
        'SparringWasmAttention', // the value
        'SparringWasmAttention', // under the tape
        'SparringWasmAttentionGrad',
      ]);
      const got = run(ours);
      await tf.setBackend('cpu');
      const want = run(stock);
      got.forEach((g, i) => expect(Math.max(...g.map((x, j) => Math.abs(x - want[i][j])))).toBeLessThan(2e-6));
      // float64: out[b, i, h, :] = sum_j softmax_j(q_h,i . k_j / sqrt(D) + mask) v_j, kv head h / G
      for (const [b, i, h] of [
        [0, 0, 0],
        [B - 1, L - 1, nH - 1],
        [B - 1, 2, 1],
      ]) {
        const kv = Math.floor(h / (nH / nKV));
        const s = Array.from({ length: C }, (_, j) => {
          let dot = 0;
          for (let d = 0; d < D; d++) dot += q[((b * nH + h) * L + i) * D + d] * k[((b * nKV + kv) * C + j) * D + d];
          return dot / Math.sqrt(D) + mask[(b * L + i) * C + j];
        });
        const mx = Math.max(...s);
        const e = s.map((x) => Math.exp(x - mx));
        const z = e.reduce((a, c) => a + c, 0);
        for (let d = 0; d < D; d++) {
          const ref = e.reduce((a, ej, j) => a + (ej / z) * v[((b * nKV + kv) * C + j) * D + d], 0);
          expect(Math.abs(got[0][((b * L + i) * nH + h) * D + d] - ref)).toBeLessThan(1e-6);
        }
      }
    });
  });
});

describe('tokenStats on tfjs-wasm: one kernel of ours each way', () => {
  afterAll(() => tf.setBackend('cpu'));
  it('gives the float64 reference log-probs, entropies and logit gradients, masked logits included', async () => {
    await tf.setBackend('wasm');
    for (const [rows, vocab] of [
      [1, 7],
      [5, 1000],
      [3, 4099],
    ]) {
      const c = seededLogits(rows, vocab, 1234 + vocab);
      const logits = c.logits.slice();
      for (let r = 0; r < rows; r++) logits[r * vocab + ((c.ids[r] + 3) % vocab)] = -Infinity; // masked
      const dy = seededUpstream(rows, 7 + vocab); // [rows, 2]
      const ids = tf.tensor1d(c.ids, 'int32');
      const up = tf.tensor2d(dy, [rows, 2]);
      const p = await tf.profile(() => {
        tf.grad((x: tf.Tensor) => tf.sum(tf.mul(tokenStats(x as tf.Tensor2D, ids), up)))(
          tf.tensor2d(logits, [rows, vocab]),
        ).dispose();
        return [];
      });
      expect(p.kernels.filter((k) => k.name.startsWith('SparringWasmTokenStats')).map((k) => k.name)).toEqual([
        'SparringWasmTokenStats',
        'SparringWasmTokenStatsGrad',
      ]);
      const x = tf.tensor2d(logits, [rows, vocab]);
      const got = tokenStats(x, ids).arraySync();
      const grad = tf
        .grad((v: tf.Tensor) => tf.sum(tf.mul(tokenStats(v as tf.Tensor2D, ids), up)))(x)
        .dataSync();
      const ref = tokenStatsF64(logits, rows, vocab, c.ids);
      const refGrad = tokenStatsGradF64(logits, rows, vocab, c.ids, dy);
      for (let r = 0; r < rows; r++) {
        expect(Math.abs(got[r][0] - ref.logp[r])).toBeLessThan(1e-5);
        expect(Math.abs(got[r][1] - ref.entropy[r])).toBeLessThan(1e-5);
      }
      // the WGSL path's bound against the same reference (token-stats tests, dawn.e2e.ts): ours
      // reads 1.6e-6 on these rows (a float32 exp and log near p = 1), the stock ops 4e-8
      expect(Math.max(...Array.from(grad, (g, i) => Math.abs(g - refGrad[i])))).toBeLessThan(1e-5);
      for (let r = 0; r < rows; r++) expect(grad[r * vocab + ((c.ids[r] + 3) % vocab)]).toBe(0);
    }
  });
});

describe('Exp on tfjs-wasm (ours, a 4-lane polynomial)', () => {
  afterAll(() => tf.setBackend('cpu'));
  it('gives Math.exp within 2 ulp over the float range, 0 below -87.34, +inf above 88.72, NaN for NaN', async () => {
    await tf.setBackend('wasm');
    const xs = [
      ...Array.from({ length: 4001 }, (_, i) => -90 + (i * 180) / 4000),
      -1e9,
      1e9,
      0,
      NaN,
      1e-30,
      88.5,
      88.72,
    ];
    const got = tf.tidy(() => Array.from(tf.exp(tf.tensor1d(xs)).dataSync()));
    xs.forEach((x, i) => {
      const want = Math.fround(Math.exp(Math.fround(x))); // the tensor holds x in float32
      if (Number.isNaN(x)) expect(got[i]).toBeNaN();
      else if (x < -87.34) expect(got[i]).toBeLessThan(1.2e-38);
      else if (want === Infinity) expect(got[i]).toBe(Infinity);
      else expect(Math.abs(got[i] - want)).toBeLessThanOrEqual(2.5e-7 * want);
    });
  });
});

describe("the shared-memory module (tfjs-wasm's threaded build)", () => {
  it('instantiates on a memory shaped as the threaded glue makes it and gives the plain module products', () => {
    const run = (b64: string, memory: WebAssembly.Memory) => {
      const m = new WebAssembly.Module(Buffer.from(b64, 'base64'));
      const { bmm } = new WebAssembly.Instance(m, { env: { memory } }).exports as { bmm: (...a: number[]) => void };
      const f = new Float32Array(memory.buffer);
      const [M, N, K] = [5, 11, 7];
      for (let i = 0; i < M * K + K * N; i++) f[i] = Math.sin(i + 1);
      bmm(0, M * K * 4, (M * K + K * N) * 4, 4096, 1, M, N, K, 0, 1, 0, 0);
      return Array.from(f.slice(M * K + K * N, M * K + K * N + M * N));
    };
    // tfjs-backend-wasm's threaded glue: new WebAssembly.Memory({ maximum: 4294967296 / 65536, shared: true }).
    const shared = new WebAssembly.Memory({ initial: 256, maximum: 65536, shared: true });
    expect(shared.buffer).toBeInstanceOf(SharedArrayBuffer);
    const want = run(gemmWasmBase64, new WebAssembly.Memory({ initial: 256 }));
    expect(run(gemmSharedWasmBase64, shared)).toEqual(want);
  });
});
