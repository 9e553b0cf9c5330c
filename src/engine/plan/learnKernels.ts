// The planned learning step's kernels (forward over whole sequences and its backward). Small WGSL
// modules with their bindings declared here (PlanKernel), each dispatch's parameters in a static
// uniform record the planner fills once. One GEMM template does every product of the step:
// projections through frozen weights (f32, or f16 / int8 / int4 words decoded per element, never a
// dequantised matrix), LoRA's thin products, attention's batched products and the weight
// gradients, by strides alone. The rest is one thread per row or element and no barriers, except
// the vocabulary-wide token statistics (one workgroup per row).
import type { BindingSpec, PlanKernel } from './kernel';
import type { WeightFormat } from './decodeKernels';

// ---------------------------------------------------------------------------------------------
// GEMM: C(m, n) = alpha sum_k A(m, k) B(k, n) [+ C(m, n)] [+ bias(n)] [+ R(m, n)], batched over z

/** Operand element (m, k) of batch z = (zb, zh), zb = z / Z1, zh = z % Z1, sits at
 * off + zb sb + (zh / div) sh + m sm + k sk (div folds GQA: query heads sharing a KV head). */
export interface Operand {
  off: number;
  /** Stride of the first index (m for A and C, k for B). */
  s0: number;
  /** Stride of the second index (k for A, n for B and C). */
  s1: number;
  sb?: number;
  sh?: number;
  div?: number;
}

export interface GemmUniform {
  M: number;
  N: number;
  K: number;
  /** Inner batch size (heads); z = zb Z1 + zh. Default 1. */
  Z1?: number;
  a: Operand;
  /** Ignored for a quantised weight (see wK, wT). */
  b: Operand;
  c: Operand;
  alpha?: number;
  /** Add the product to C's old value. */
  accumulate?: boolean;
  /** Element offset of a bias vector added along n; absent: none. */
  biasOff?: number;
  /** Add R(m, n) (same layout as C): a residual. */
  residual?: boolean;
  /** Quantised weight W [rows, wK]: B(k, n) = W[n, k] when wT (x W^T), else W[k, n]. */
  wK?: number;
  wT?: boolean;
}

const GEMM_STRUCT = `struct Gemm {
  M : u32, N : u32, K : u32, Z1 : u32,
  aOff : u32, aS0 : u32, aS1 : u32, aSb : u32, aSh : u32, aDiv : u32,
  bOff : u32, bS0 : u32, bS1 : u32, bSb : u32, bSh : u32, bDiv : u32,
  cOff : u32, cS0 : u32, cS1 : u32, cSb : u32, cSh : u32, cDiv : u32,
  alpha : f32, acc : u32, biasOff : i32, res : u32, wK : u32, wT : u32,
}`;

export function packGemm(g: GemmUniform): ArrayBuffer {
  const buf = new ArrayBuffer(28 * 4);
  const u = new Uint32Array(buf);
  const f = new Float32Array(buf);
  const i = new Int32Array(buf);
  const op = (o: Operand, at: number) => u.set([o.off, o.s0, o.s1, o.sb ?? 0, o.sh ?? 0, o.div ?? 1], at);
  u.set([g.M, g.N, g.K, g.Z1 ?? 1]);
  op(g.a, 4);
  op(g.b, 10);
  op(g.c, 16);
  f[22] = g.alpha ?? 1;
  u[23] = g.accumulate ? 1 : 0;
  i[24] = g.biasOff ?? -1;
  u[25] = g.residual ? 1 : 0;
  u[26] = g.wK ?? 0;
  u[27] = g.wT ? 1 : 0;
  return buf;
}

/** Outputs per thread along m and n, threads per workgroup along each: a 32 x 32 tile. */
export const GEMM_T = 4;
export const GEMM_WG = 8;
export const GEMM_TILE = GEMM_T * GEMM_WG;

export function gemmWorkgroups(M: number, N: number, Z = 1): [number, number, number] {
  return [Math.ceil(N / GEMM_TILE), Math.ceil(M / GEMM_TILE), Z];
}

/** `fn bAt(base, k, n) -> f32`: the B operand from a plain buffer or a quantised weight. */
function bLoader(format: WeightFormat | 'buf', groupSize: number): string {
  if (format === 'buf' || format === 'f32') {
    return `fn bAt(base : u32, k : u32, n : u32) -> f32 {
  return Bm[base + k * U.bS0 + n * U.bS1];
}`;
  }
  const gs = `${groupSize}u`;
  const decode =
    format === 'f16'
      ? `let word = bitcast<u32>(Bm[r * ((U.wK + 1u) / 2u) + c / 2u]);
  return unpack2x16float(word)[c % 2u] * S[r * (U.wK / ${gs}) + c / ${gs}];`
      : format === 'int8'
      ? `let word = Bm[r * ((U.wK + 3u) / 4u) + c / 4u];
  let q = (word << (24u - 8u * (c % 4u))) >> 24u;
  return f32(q) * S[r * (U.wK / ${gs}) + c / ${gs}];`
      : `let word = Bm[r * (U.wK / 8u) + c / 8u];
  let q = (word >> (4u * (c % 8u))) & 15;
  return f32(q - 8) * S[r * (U.wK / ${gs}) + c / ${gs}];`;
  return `fn bAt(base : u32, k : u32, n : u32) -> f32 {
  var r = k;
  var c = n;
  if (U.wT == 1u) {
    r = n;
    c = k;
  }
  ${decode}
}`;
}

/**
 * The k loop over packed words (groups a multiple of the values per word): x W^T reads, per block
 * of 8 (int4) or 4 (int8) inputs, one word and one scale per output row and decodes the block in
 * registers; dy W reads the thread's four consecutive columns of a row from one word and one
 * scale per k. No element is decoded twice and no matrix is dequantised.
 */
function packedLoopsWgsl(format: 'int8' | 'int4' | 'f16', groupSize: number): string {
  const blk = packedBlock(format);
  const wpr = format === 'int4' ? 'U.wK / 8u' : format === 'f16' ? '(U.wK + 1u) / 2u' : '(U.wK + 3u) / 4u';
  // f16 (two halves a word, unpack2x16float): x W^T takes half j of each row's word; dy W's four
  // columns n0 .. n0 + 3 (n0 a multiple of 4) are the two words from n0 / 2.
  const half = (v: string, j: string) => `unpack2x16float(bitcast<u32>(${v}))[${j}]`;
  const decode = (idx: string) =>
    format === 'f16'
      ? idx === 'lanes'
        ? `vec4<f32>(unpack2x16float(bitcast<u32>(wv.x)), unpack2x16float(bitcast<u32>(Bm[k * wpr + n0 / 2u + 1u])))`
        : `vec4<f32>(${['x', 'y', 'z', 'w'].map((l) => half(`wv.${l}`, 'j')).join(', ')})`
      : format === 'int4'
      ? `vec4<f32>(((wv >> (4u * ${idx})) & vec4<i32>(15)) - vec4<i32>(8))`
      : `vec4<f32>((wv << (24u - 8u * ${idx})) >> vec4<u32>(24u))`;
  const fma = `acc0 += av.x * bv;
      acc1 += av.y * bv;
      acc2 += av.z * bv;
      acc3 += av.w * bv;
      ai += vec4<u32>(U.aS1);`;
  return `let wpr = ${wpr};
  let spr = U.wK / ${groupSize}u;
  if (U.wT == 1u) {
    // x W^T: rows ns of W along k
    let kFull = U.K / ${blk}u * ${blk}u;
    for (var kb = 0u; kb < kFull; kb += ${blk}u) {
      let wi = kb / ${blk}u;
      let wv = vec4<i32>(Bm[ns.x * wpr + wi], Bm[ns.y * wpr + wi], Bm[ns.z * wpr + wi], Bm[ns.w * wpr + wi]);
      let g = kb / ${groupSize}u;
      let sc = vec4<f32>(S[ns.x * spr + g], S[ns.y * spr + g], S[ns.z * spr + g], S[ns.w * spr + g]);
      for (var j = 0u; j < ${blk}u; j++) {
        let av = vec4<f32>(Am[ai.x], Am[ai.y], Am[ai.z], Am[ai.w]);
        let bv = ${decode('vec4<u32>(j)')} * sc;
        ${fma}
      }
    }
    for (var k = kFull; k < U.K; k++) {
      let av = vec4<f32>(Am[ai.x], Am[ai.y], Am[ai.z], Am[ai.w]);
      let bv = vec4<f32>(bAt(0u, k, ns.x), bAt(0u, k, ns.y), bAt(0u, k, ns.z), bAt(0u, k, ns.w));
      ${fma}
    }
  } else {
    // dy W: columns n0 .. n0 + 3 of row k sit in one word and one group
    let lanes = vec4<u32>(n0 % ${blk}u) + vec4<u32>(0u, 1u, 2u, 3u);
    for (var k = 0u; k < U.K; k++) {
      let av = vec4<f32>(Am[ai.x], Am[ai.y], Am[ai.z], Am[ai.w]);
      let wv = vec4<i32>(Bm[k * wpr + n0 / ${blk}u]);
      let bv = ${decode('lanes')} * S[k * spr + n0 / ${groupSize}u];
      ${fma}
    }
  }`;
}

/** Weights per packed word. */
function packedBlock(format: 'int8' | 'int4' | 'f16'): number {
  return format === 'int4' ? 8 : format === 'f16' ? 2 : 4;
}

export function gemmKernel(format: WeightFormat | 'buf' = 'buf', groupSize = 0): PlanKernel {
  const quant = format === 'int8' || format === 'int4' || format === 'f16';
  const b: BindingSpec[] = [
    { name: 'U', kind: 'uniform', type: 'Gemm' },
    { name: 'Am', kind: 'read', type: 'array<f32>' },
    { name: 'Bm', kind: 'read', type: quant ? 'array<i32>' : 'array<f32>' },
    { name: 'Cm', kind: 'rw', type: 'array<f32>' },
    { name: 'bias', kind: 'read', type: 'array<f32>' },
    { name: 'Rm', kind: 'read', type: 'array<f32>' },
  ];
  if (quant) b.push({ name: 'S', kind: 'read', type: 'array<f32>' });
  const packedLoops = quant && groupSize % packedBlock(format) === 0;
  const bInit = quant ? '' : 'var bi = vec4<u32>(bBase) + ns * U.bS1;';
  const bLoad = quant
    ? 'let bv = vec4<f32>(bAt(bBase, k, ns.x), bAt(bBase, k, ns.y), bAt(bBase, k, ns.z), bAt(bBase, k, ns.w));'
    : 'let bv = vec4<f32>(Bm[bi.x], Bm[bi.y], Bm[bi.z], Bm[bi.w]);\n    bi += vec4<u32>(U.bS0);';
  return {
    key: `learn_gemm_${quant ? `${format}_g${groupSize}${packedLoops ? '_packed' : ''}` : 'f32'}`,
    bindings: b,
    body: `${GEMM_STRUCT}
const T : u32 = ${GEMM_T}u;
const WG : u32 = ${GEMM_WG}u;
${bLoader(format, groupSize)}
@compute @workgroup_size(WG, WG, 1)
fn main(@builtin(global_invocation_id) gid : vec3<u32>) {
  let zb = gid.z / U.Z1;
  let zh = gid.z % U.Z1;
  let aBase = U.aOff + zb * U.aSb + (zh / U.aDiv) * U.aSh;
  let bBase = U.bOff + zb * U.bSb + (zh / U.bDiv) * U.bSh;
  let cBase = U.cOff + zb * U.cSb + (zh / U.cDiv) * U.cSh;
  let m0 = gid.y * T;
  let n0 = gid.x * T;
  if (m0 >= U.M || n0 >= U.N) {
    return;
  }
  // Rows and columns past the edge read the last one (in bounds, no branch in the loop); their
  // sums are never stored. Indices advance by a stride per k instead of being recomputed.
  let ms = min(vec4<u32>(m0) + vec4<u32>(0u, 1u, 2u, 3u), vec4<u32>(U.M - 1u));
  let ns = min(vec4<u32>(n0) + vec4<u32>(0u, 1u, 2u, 3u), vec4<u32>(U.N - 1u));
  var ai = vec4<u32>(aBase) + ms * U.aS0;
  var acc0 = vec4<f32>(0.0);
  var acc1 = vec4<f32>(0.0);
  var acc2 = vec4<f32>(0.0);
  var acc3 = vec4<f32>(0.0);
  ${bInit}
  ${packedLoops ? packedLoopsWgsl(format as 'int8' | 'int4' | 'f16', groupSize) : `for (var k = 0u; k < U.K; k++) {
    let av = vec4<f32>(Am[ai.x], Am[ai.y], Am[ai.z], Am[ai.w]);
    ${bLoad}
    acc0 += av.x * bv;
    acc1 += av.y * bv;
    acc2 += av.z * bv;
    acc3 += av.w * bv;
    ai += vec4<u32>(U.aS1);
  }`}
  var acc = array<vec4<f32>, 4>(acc0, acc1, acc2, acc3);
  for (var i = 0u; i < T; i++) {
    let m = m0 + i;
    if (m >= U.M) {
      break;
    }
    for (var j = 0u; j < T; j++) {
      let n = n0 + j;
      if (n >= U.N) {
        break;
      }
      let at = cBase + m * U.cS0 + n * U.cS1;
      var y = U.alpha * acc[i][j];
      if (U.acc == 1u) {
        y += Cm[at];
      }
      if (U.biasOff >= 0) {
        y += bias[u32(U.biasOff) + n];
      }
      if (U.res == 1u) {
        y += Rm[at];
      }
      Cm[at] = y;
    }
  }
}`,
  };
}

// ---------------------------------------------------------------------------------------------
// Row and element kernels (one thread each, no barriers)

const WG1 = 64;
export const elemWorkgroups = (n: number): [number, number, number] => {
  const groups = Math.ceil(n / WG1);
  // Past the per-dimension limit (65535) the grid folds into y; kernels rebuild the flat index.
  return groups <= 65535 ? [groups, 1, 1] : [65535, Math.ceil(groups / 65535), 1];
};
const FLAT = `@compute @workgroup_size(${WG1}, 1, 1)
fn main(@builtin(global_invocation_id) gid : vec3<u32>, @builtin(num_workgroups) nwg : vec3<u32>) {
  let idx = gid.x + gid.y * nwg.x * ${WG1}u;
  run(idx);
}`;

/** One thread per item: `run(idx)` for idx below `limit` (a WGSL expression over the uniform U). */
function flatKernel(key: string, struct: string, bindings: BindingSpec[], idx: string, limit: string, body: string): PlanKernel {
  const type = /^struct (\w+)/.exec(struct)![1];
  return {
    key,
    bindings: [{ name: 'U', kind: 'uniform', type }, ...bindings],
    body: `${struct}
fn run(${idx} : u32) {
  if (${idx} >= ${limit}) {
    return;
  }
${body}
}
${FLAT}`,
  };
}

/** Row r of rows: y = x inv w, inv = (mean x^2 + eps)^-1/2 (kept for the backward). */
export function rmsNormKernel(): PlanKernel {
  return flatKernel(
    'learn_rms_fwd',
    'struct Row { rows : u32, H : u32, eps : f32, acc : u32 }',
    [
      { name: 'X', kind: 'read', type: 'array<f32>' },
      { name: 'W', kind: 'read', type: 'array<f32>' },
      { name: 'Y', kind: 'rw', type: 'array<f32>' },
      { name: 'Inv', kind: 'rw', type: 'array<f32>' },
    ],
    'r',
    'U.rows',
    `  let base = r * U.H;
  var ss = 0.0;
  for (var i = 0u; i < U.H; i++) {
    ss += X[base + i] * X[base + i];
  }
  let inv = inverseSqrt(ss / f32(U.H) + U.eps);
  Inv[r] = inv;
  for (var i = 0u; i < U.H; i++) {
    Y[base + i] = X[base + i] * inv * W[i];
  }`,
  );
}

/** dX (+)= inv g - x inv^3 / H sum(g x), g = dY w. */
export function rmsNormGradKernel(): PlanKernel {
  return flatKernel(
    'learn_rms_bwd',
    'struct Row { rows : u32, H : u32, eps : f32, acc : u32 }',
    [
      { name: 'X', kind: 'read', type: 'array<f32>' },
      { name: 'W', kind: 'read', type: 'array<f32>' },
      { name: 'Inv', kind: 'read', type: 'array<f32>' },
      { name: 'DY', kind: 'read', type: 'array<f32>' },
      { name: 'DX', kind: 'rw', type: 'array<f32>' },
    ],
    'r',
    'U.rows',
    `  let base = r * U.H;
  let inv = Inv[r];
  var dot = 0.0;
  for (var i = 0u; i < U.H; i++) {
    dot += DY[base + i] * W[i] * X[base + i];
  }
  let k = inv * inv * inv * dot / f32(U.H);
  for (var i = 0u; i < U.H; i++) {
    var d = inv * DY[base + i] * W[i] - X[base + i] * k;
    if (U.acc == 1u) {
      d += DX[base + i];
    }
    DX[base + i] = d;
  }`,
  );
}

export function packRow(rows: number, H: number, eps: number, accumulate: boolean): ArrayBuffer {
  const buf = new ArrayBuffer(16);
  new Uint32Array(buf).set([rows, H]);
  new Float32Array(buf)[2] = eps;
  new Uint32Array(buf)[3] = accumulate ? 1 : 0;
  return buf;
}

/**
 * Token-major [B L, n D] <-> head-major [B, n, L, D] with RoPE (sgn +1), its transpose (sgn -1) or
 * none (sgn 0). toHeads: read token-major, write head-major; else the other way. One thread per
 * (token, head, j < D / 2) rotates the pair (j, j + D / 2).
 */
export function headsKernel(): PlanKernel {
  return {
    key: 'learn_heads',
    bindings: [
      { name: 'U', kind: 'uniform', type: 'Heads' },
      { name: 'Src', kind: 'read', type: 'array<f32>' },
      { name: 'Dst', kind: 'rw', type: 'array<f32>' },
      { name: 'Cos', kind: 'read', type: 'array<f32>' },
      { name: 'Sin', kind: 'read', type: 'array<f32>' },
    ],
    body: `struct Heads { tokens : u32, L : u32, n : u32, D : u32, toHeads : u32, sgn : f32, p0 : u32, p1 : u32 }
fn run(idx : u32) {
  let half = U.D / 2u;
  if (idx >= U.tokens * U.n * half) {
    return;
  }
  let j = idx % half;
  let h = (idx / half) % U.n;
  let t = idx / (half * U.n);
  let b = t / U.L;
  let i = t % U.L;
  let tok = t * U.n * U.D + h * U.D + j;
  let hd = ((b * U.n + h) * U.L + i) * U.D + j;
  var src = hd;
  var dst = tok;
  if (U.toHeads == 1u) {
    src = tok;
    dst = hd;
  }
  var c = 1.0;
  var s = 0.0;
  if (U.sgn != 0.0) {
    c = Cos[t * half + j];
    s = U.sgn * Sin[t * half + j];
  }
  let x1 = Src[src];
  let x2 = Src[src + half];
  // y1 = x1 cos - x2 sin, y2 = x2 cos + x1 sin (rotate_half); sin negated for the transpose
  Dst[dst] = x1 * c - x2 * s;
  Dst[dst + half] = x2 * c + x1 * s;
}
${FLAT}`,
  };
}

export function packHeads(tokens: number, L: number, n: number, D: number, toHeads: boolean, sgn: number): ArrayBuffer {
  const buf = new ArrayBuffer(32);
  new Uint32Array(buf).set([tokens, L, n, D, toHeads ? 1 : 0]);
  new Float32Array(buf)[5] = sgn;
  return buf;
}

/**
 * Attention probabilities in place over S [B, nH, L, L] (scores already scaled): key j is seen by
 * query i iff j <= i and j is a real token; masked scores get -1e9 as the tfjs path adds, so a row
 * with nothing to see is uniform there too.
 */
export function softmaxKernel(): PlanKernel {
  return flatKernel(
    'learn_softmax',
    'struct Sm { rows : u32, L : u32, nH : u32, p0 : u32 }',
    [
      { name: 'S', kind: 'rw', type: 'array<f32>' },
      { name: 'Valid', kind: 'read', type: 'array<f32>' },
    ],
    'r',
    'U.rows',
    `  let i = r % U.L;
  let b = r / (U.L * U.nH);
  let base = r * U.L;
  var mx = -3.0e38;
  for (var j = 0u; j < U.L; j++) {
    var s = S[base + j];
    if (j > i || Valid[b * U.L + j] == 0.0) {
      s += -1e9;
    }
    S[base + j] = s;
    mx = max(mx, s);
  }
  var sum = 0.0;
  for (var j = 0u; j < U.L; j++) {
    let e = exp(S[base + j] - mx);
    S[base + j] = e;
    sum += e;
  }
  for (var j = 0u; j < U.L; j++) {
    S[base + j] = S[base + j] / sum;
  }`,
  );
}

/** dS = P (dP - sum_j P dP), in place over dP. */
export function softmaxGradKernel(): PlanKernel {
  return flatKernel(
    'learn_softmax_bwd',
    'struct Sm { rows : u32, L : u32, nH : u32, p0 : u32 }',
    [
      { name: 'P', kind: 'read', type: 'array<f32>' },
      { name: 'DP', kind: 'rw', type: 'array<f32>' },
    ],
    'r',
    'U.rows',
    `  let base = r * U.L;
  var dot = 0.0;
  for (var j = 0u; j < U.L; j++) {
    dot += P[base + j] * DP[base + j];
  }
  for (var j = 0u; j < U.L; j++) {
    DP[base + j] = P[base + j] * (DP[base + j] - dot);
  }`,
  );
}

export function packSm(rows: number, L: number, nH: number): ArrayBuffer {
  return new Uint32Array([rows, L, nH, 0]).buffer;
}

/** act = silu(g) u. */
export function swigluKernel(): PlanKernel {
  return flatKernel(
    'learn_swiglu',
    'struct Cnt { n : u32, p0 : u32, p1 : u32, p2 : u32 }',
    [
      { name: 'G', kind: 'read', type: 'array<f32>' },
      { name: 'Up', kind: 'read', type: 'array<f32>' },
      { name: 'Act', kind: 'rw', type: 'array<f32>' },
    ],
    'i',
    'U.n',
    `  let g = G[i];
  Act[i] = g / (1.0 + exp(-g)) * Up[i];`,
  );
}

/** dg = d u silu'(g), du = d silu(g); silu'(g) = sig(g) (1 + g (1 - sig(g))). */
export function swigluGradKernel(): PlanKernel {
  return flatKernel(
    'learn_swiglu_bwd',
    'struct Cnt { n : u32, p0 : u32, p1 : u32, p2 : u32 }',
    [
      { name: 'G', kind: 'read', type: 'array<f32>' },
      { name: 'Up', kind: 'read', type: 'array<f32>' },
      { name: 'DAct', kind: 'read', type: 'array<f32>' },
      { name: 'DG', kind: 'rw', type: 'array<f32>' },
      { name: 'DU', kind: 'rw', type: 'array<f32>' },
    ],
    'i',
    'U.n',
    `  let g = G[i];
  let sg = 1.0 / (1.0 + exp(-g));
  let d = DAct[i];
  DG[i] = d * Up[i] * sg * (1.0 + g * (1.0 - sg));
  DU[i] = d * g * sg;`,
  );
}

export const packCnt = (n: number): ArrayBuffer => new Uint32Array([n, 0, 0, 0]).buffer;

/**
 * LoRA dropout: Out = X M, or Out += X M (`acc`), M = Scale where the mask's bit is set, else 0
 * (the multiplier tf.dropout draws: 0 or 1 / (1 - p), its value kept in Scale by the packing).
 */
export function dropMulKernel(): PlanKernel {
  return flatKernel(
    'learn_drop_mul',
    'struct Cnt { n : u32, acc : u32, p1 : u32, p2 : u32 }',
    [
      { name: 'X', kind: 'read', type: 'array<f32>' },
      { name: 'Bits', kind: 'read', type: 'array<u32>' },
      { name: 'Scale', kind: 'read', type: 'array<f32>' },
      { name: 'Out', kind: 'rw', type: 'array<f32>' },
    ],
    'i',
    'U.n',
    `  var y = 0.0;
  if (((Bits[i / 32u] >> (i % 32u)) & 1u) == 1u) {
    y = X[i] * Scale[0];
  }
  if (U.acc == 1u) {
    y = Out[i] + y;
  }
  Out[i] = y;`,
  );
}

/** A dropout multiplier [n] (0 or 1 / (1 - p)) packed to one bit per element, its nonzero value into Scale. */
export function dropPackKernel(): PlanKernel {
  return flatKernel(
    'learn_drop_pack',
    'struct Cnt { n : u32, p0 : u32, p1 : u32, p2 : u32 }',
    [
      { name: 'M', kind: 'read', type: 'array<f32>' },
      { name: 'Bits', kind: 'rw', type: 'array<u32>' },
      { name: 'Scale', kind: 'rw', type: 'array<f32>' },
    ],
    'w',
    '(U.n + 31u) / 32u',
    `  var bits = 0u;
  for (var j = 0u; j < 32u; j++) {
    let i = w * 32u + j;
    if (i < U.n && M[i] != 0.0) {
      bits = bits | (1u << j);
      // Every kept element holds the same value: racing writes agree.
      Scale[0] = M[i];
    }
  }
  Bits[w] = bits;`,
  );
}

export const packDrop = (n: number, accumulate: boolean): ArrayBuffer => new Uint32Array([n, accumulate ? 1 : 0, 0, 0]).buffer;

/** x[t] = E[ids[t]] for the embedding rows [rowStart, rowStart + rowCount). */
export function embedRowsKernel(): PlanKernel {
  return flatKernel(
    'learn_embed',
    'struct Emb { tokens : u32, H : u32, rowStart : u32, rowCount : u32 }',
    [
      { name: 'Ids', kind: 'read', type: 'array<i32>' },
      { name: 'E', kind: 'read', type: 'array<f32>' },
      { name: 'X', kind: 'rw', type: 'array<f32>' },
    ],
    'i',
    'U.tokens * U.H',
    `  let t = i / U.H;
  let r = u32(Ids[t]) - U.rowStart;
  if (u32(Ids[t]) >= U.rowStart && r < U.rowCount) {
    X[i] = E[r * U.H + i % U.H];
  }`,
  );
}

export const packEmb = (tokens: number, H: number, rowStart: number, rowCount: number): ArrayBuffer => new Uint32Array([tokens, H, rowStart, rowCount]).buffer;

// ---------------------------------------------------------------------------------------------
// Token statistics and their backward (one workgroup per row of the logits)

export const STATS_WG = 64;
/** Floats per row of the statistics buffer: log-prob, entropy, reference log-prob, logsumexp. */
export const STATS_COLS = 4;

const STATS_HEAD = `struct St { rows : u32, V : u32, isRef : u32, invT : f32 }
const WG : u32 = ${STATS_WG}u;
var<workgroup> red : array<f32, ${STATS_WG}>;
fn reduceMax(v : f32, lid : u32) -> f32 {
  red[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s /= 2u) {
    if (lid < s) {
      red[lid] = max(red[lid], red[lid + s]);
    }
    workgroupBarrier();
  }
  let r = red[0];
  workgroupBarrier();
  return r;
}
fn reduceSum(v : f32, lid : u32) -> f32 {
  red[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s /= 2u) {
    if (lid < s) {
      red[lid] = red[lid] + red[lid + s];
    }
    workgroupBarrier();
  }
  let r = red[0];
  workgroupBarrier();
  return r;
}`;

/** z = logits / T: logp = z_id - lse, entropy = lse - sum p z (the reference pass writes column 2 only). */
export function statsKernel(): PlanKernel {
  return {
    key: 'learn_stats',
    bindings: [
      { name: 'U', kind: 'uniform', type: 'St' },
      { name: 'Z', kind: 'read', type: 'array<f32>' },
      { name: 'Ids', kind: 'read', type: 'array<i32>' },
      { name: 'Out', kind: 'rw', type: 'array<f32>' },
    ],
    body: `${STATS_HEAD}
@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(workgroup_id) wid : vec3<u32>, @builtin(local_invocation_index) lid : u32) {
  let row = wid.x;
  let base = row * U.V;
  var mx = -3.0e38;
  for (var v = lid; v < U.V; v += WG) {
    mx = max(mx, Z[base + v] * U.invT);
  }
  mx = reduceMax(mx, lid);
  var se = 0.0;
  var sez = 0.0;
  for (var v = lid; v < U.V; v += WG) {
    let z = Z[base + v] * U.invT;
    let e = exp(z - mx);
    se += e;
    sez += e * z;
  }
  se = reduceSum(se, lid);
  sez = reduceSum(sez, lid);
  if (lid == 0u) {
    let lse = mx + log(se);
    let lp = Z[base + u32(Ids[row])] * U.invT - lse;
    if (U.isRef == 1u) {
      Out[row * ${STATS_COLS}u + 2u] = lp;
    } else {
      Out[row * ${STATS_COLS}u] = lp;
      Out[row * ${STATS_COLS}u + 1u] = lse - sez / se;
      Out[row * ${STATS_COLS}u + 3u] = lse;
    }
  }
}`,
  };
}

/** d logits = (dlogp (onehot - p) - dH p (log p + H)) / T. */
export function statsGradKernel(): PlanKernel {
  return {
    key: 'learn_stats_bwd',
    bindings: [
      { name: 'U', kind: 'uniform', type: 'St' },
      { name: 'Z', kind: 'read', type: 'array<f32>' },
      { name: 'Ids', kind: 'read', type: 'array<i32>' },
      { name: 'Stats', kind: 'read', type: 'array<f32>' },
      { name: 'DStats', kind: 'read', type: 'array<f32>' },
      { name: 'DZ', kind: 'rw', type: 'array<f32>' },
    ],
    body: `${STATS_HEAD}
@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(workgroup_id) wid : vec3<u32>, @builtin(local_invocation_index) lid : u32) {
  let row = wid.x;
  let base = row * U.V;
  let ent = Stats[row * ${STATS_COLS}u + 1u];
  let lse = Stats[row * ${STATS_COLS}u + 3u];
  let dlp = DStats[row * 2u];
  let dent = DStats[row * 2u + 1u];
  let id = u32(Ids[row]);
  for (var v = lid; v < U.V; v += WG) {
    let lp = Z[base + v] * U.invT - lse;
    let p = exp(lp);
    var d = -dlp * p - dent * p * (lp + ent);
    if (v == id) {
      d += dlp;
    }
    DZ[base + v] = d * U.invT;
  }
}`,
  };
}

export function packSt(rows: number, V: number, ref: boolean, invT: number): ArrayBuffer {
  const buf = new ArrayBuffer(16);
  new Uint32Array(buf).set([rows, V, ref ? 1 : 0]);
  new Float32Array(buf)[3] = invT;
  return buf;
}
