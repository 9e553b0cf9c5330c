// A batched f32 GEMM for tfjs-wasm's BatchMatMul where its own kernel runs a naive loop (any
// product with a batch dimension: the attention's scores and weighted sums, forward and
// backward). Built by build.sh into gemm.wasm (wasm32, SIMD128, no libc, no stack, no data),
// which imports tfjs-wasm's linear memory and reads and writes tensors in place.
//
// C[b] (M x N) = op(A[b]) op(B[b]), op = transpose when the flag is set:
//   A[b] is M x K (K x M when transA), B[b] is K x N (N x K when transB), C[b] row-major.
// A batch stride of 0 broadcasts that operand. With transB, each B[b] is first transposed into
// `scratch` after a panel's 16384 floats (K x N floats), and with transA each A[b] after that
// (M x K floats). Each C element is summed over k in order (k = 0, 1, ...), one
// multiply and one add per step, as tfjs-wasm's own loop does.
#include <wasm_simd128.h>

typedef unsigned int u32;

static void transposeInto(const float *src, float *dst, u32 rows, u32 cols) {
  // src rows x cols -> dst cols x rows
  for (u32 r = 0; r < rows; r++)
    for (u32 c = 0; c < cols; c++) dst[c * rows + r] = src[r * cols + c];
}

// Columns [n0, n1) of one M x K by K x N product: B(k, n) = B[k * N + n], C(m, n) = C[m * ldc + n],
// A(m, k) = A[m * ars + k * acs].
static void panel(const float *A, u32 ars, u32 acs, const float *B, float *C, u32 M, u32 N,
                  u32 K, u32 n0, u32 n1, u32 ldc) {
  u32 m = 0;
  for (; m + 4 <= M; m += 4) {
    const float *a0 = A + (m + 0) * ars, *a1 = A + (m + 1) * ars;
    const float *a2 = A + (m + 2) * ars, *a3 = A + (m + 3) * ars;
    u32 n = n0;
    for (; n + 8 <= n1; n += 8) {
      v128_t c00 = wasm_f32x4_splat(0), c01 = c00, c10 = c00, c11 = c00;
      v128_t c20 = c00, c21 = c00, c30 = c00, c31 = c00;
      const float *b = B + n;
      for (u32 k = 0; k < K; k++, b += N) {
        v128_t b0 = wasm_v128_load(b), b1 = wasm_v128_load(b + 4);
        v128_t x0 = wasm_f32x4_splat(a0[k * acs]);
        v128_t x1 = wasm_f32x4_splat(a1[k * acs]);
        v128_t x2 = wasm_f32x4_splat(a2[k * acs]);
        v128_t x3 = wasm_f32x4_splat(a3[k * acs]);
        c00 = wasm_f32x4_add(c00, wasm_f32x4_mul(x0, b0));
        c01 = wasm_f32x4_add(c01, wasm_f32x4_mul(x0, b1));
        c10 = wasm_f32x4_add(c10, wasm_f32x4_mul(x1, b0));
        c11 = wasm_f32x4_add(c11, wasm_f32x4_mul(x1, b1));
        c20 = wasm_f32x4_add(c20, wasm_f32x4_mul(x2, b0));
        c21 = wasm_f32x4_add(c21, wasm_f32x4_mul(x2, b1));
        c30 = wasm_f32x4_add(c30, wasm_f32x4_mul(x3, b0));
        c31 = wasm_f32x4_add(c31, wasm_f32x4_mul(x3, b1));
      }
      float *c = C + m * ldc + n;
      wasm_v128_store(c, c00), wasm_v128_store(c + 4, c01), c += ldc;
      wasm_v128_store(c, c10), wasm_v128_store(c + 4, c11), c += ldc;
      wasm_v128_store(c, c20), wasm_v128_store(c + 4, c21), c += ldc;
      wasm_v128_store(c, c30), wasm_v128_store(c + 4, c31);
    }
    for (; n + 4 <= n1; n += 4) {
      v128_t c0 = wasm_f32x4_splat(0), c1 = c0, c2 = c0, c3 = c0;
      const float *b = B + n;
      for (u32 k = 0; k < K; k++, b += N) {
        v128_t b0 = wasm_v128_load(b);
        c0 = wasm_f32x4_add(c0, wasm_f32x4_mul(wasm_f32x4_splat(a0[k * acs]), b0));
        c1 = wasm_f32x4_add(c1, wasm_f32x4_mul(wasm_f32x4_splat(a1[k * acs]), b0));
        c2 = wasm_f32x4_add(c2, wasm_f32x4_mul(wasm_f32x4_splat(a2[k * acs]), b0));
        c3 = wasm_f32x4_add(c3, wasm_f32x4_mul(wasm_f32x4_splat(a3[k * acs]), b0));
      }
      float *c = C + m * ldc + n;
      wasm_v128_store(c, c0), wasm_v128_store(c + ldc, c1);
      wasm_v128_store(c + 2 * ldc, c2), wasm_v128_store(c + 3 * ldc, c3);
    }
    for (; n < n1; n++) {
      float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      for (u32 k = 0; k < K; k++) {
        float bk = B[k * N + n];
        s0 += a0[k * acs] * bk, s1 += a1[k * acs] * bk;
        s2 += a2[k * acs] * bk, s3 += a3[k * acs] * bk;
      }
      C[m * ldc + n] = s0, C[(m + 1) * ldc + n] = s1;
      C[(m + 2) * ldc + n] = s2, C[(m + 3) * ldc + n] = s3;
    }
  }
  for (; m < M; m++) {
    const float *a0 = A + m * ars;
    u32 n = n0;
    for (; n + 8 <= n1; n += 8) {
      v128_t c0 = wasm_f32x4_splat(0), c1 = c0;
      const float *b = B + n;
      for (u32 k = 0; k < K; k++, b += N) {
        v128_t x0 = wasm_f32x4_splat(a0[k * acs]);
        c0 = wasm_f32x4_add(c0, wasm_f32x4_mul(x0, wasm_v128_load(b)));
        c1 = wasm_f32x4_add(c1, wasm_f32x4_mul(x0, wasm_v128_load(b + 4)));
      }
      wasm_v128_store(C + m * ldc + n, c0), wasm_v128_store(C + m * ldc + n + 4, c1);
    }
    for (; n + 4 <= n1; n += 4) {
      v128_t c0 = wasm_f32x4_splat(0);
      const float *b = B + n;
      for (u32 k = 0; k < K; k++, b += N)
        c0 = wasm_f32x4_add(c0, wasm_f32x4_mul(wasm_f32x4_splat(a0[k * acs]), wasm_v128_load(b)));
      wasm_v128_store(C + m * ldc + n, c0);
    }
    for (; n < n1; n++) {
      float s = 0;
      for (u32 k = 0; k < K; k++) s += a0[k * acs] * B[k * N + n];
      C[m * ldc + n] = s;
    }
  }
}

// Fewer than 4 rows: each row of C summed over k in order as whole rows of B stream past
// (B read once, contiguously; the LM head at decode).
static void rows(const float *A, u32 ars, u32 acs, const float *B, float *C, u32 M, u32 N,
                 u32 K) {
  for (u32 m = 0; m < M; m++) {
    float *c = C + m * N;
    for (u32 n = 0; n < N; n++) c[n] = 0;
    u32 k = 0;
    for (; k + 4 <= K; k += 4) { // four rows of B per pass over c, still summed in order of k
      const float *b0 = B + k * N, *b1 = b0 + N, *b2 = b1 + N, *b3 = b2 + N;
      float a0 = A[m * ars + k * acs], a1 = A[m * ars + (k + 1) * acs];
      float a2 = A[m * ars + (k + 2) * acs], a3 = A[m * ars + (k + 3) * acs];
      v128_t x0 = wasm_f32x4_splat(a0), x1 = wasm_f32x4_splat(a1);
      v128_t x2 = wasm_f32x4_splat(a2), x3 = wasm_f32x4_splat(a3);
      u32 n = 0;
      for (; n + 4 <= N; n += 4) {
        v128_t v = wasm_v128_load(c + n);
        v = wasm_f32x4_add(v, wasm_f32x4_mul(x0, wasm_v128_load(b0 + n)));
        v = wasm_f32x4_add(v, wasm_f32x4_mul(x1, wasm_v128_load(b1 + n)));
        v = wasm_f32x4_add(v, wasm_f32x4_mul(x2, wasm_v128_load(b2 + n)));
        v = wasm_f32x4_add(v, wasm_f32x4_mul(x3, wasm_v128_load(b3 + n)));
        wasm_v128_store(c + n, v);
      }
      for (; n < N; n++) c[n] = c[n] + a0 * b0[n] + a1 * b1[n] + a2 * b2[n] + a3 * b3[n];
    }
    for (; k < K; k++) {
      const float *b = B + k * N;
      float a = A[m * ars + k * acs];
      v128_t x = wasm_f32x4_splat(a);
      u32 n = 0;
      for (; n + 4 <= N; n += 4)
        wasm_v128_store(c + n, wasm_f32x4_add(wasm_v128_load(c + n), wasm_f32x4_mul(x, wasm_v128_load(b + n))));
      for (; n < N; n++) c[n] += a * b[n];
    }
  }
}

#define PANEL 16384 // floats of B per panel (64 KiB)

// One M x N product in panels of columns: a K x width slice of B (<= 64 KiB) stays in cache
// while every row of A passes over it; where B has several panels, each is first copied to
// `pack` contiguously (a wide B's rows are pages apart).
static void gemm1(const float *A, u32 ars, u32 acs, const float *B, float *C, u32 M, u32 N,
                  u32 K, float *pack) {
  if (M < 4) return rows(A, ars, acs, B, C, M, N, K);
  u32 width = K ? (PANEL / K) & ~7u : N;
  if (width < 8) width = 8;
  if (width >= N || K * width > PANEL) return panel(A, ars, acs, B, C, M, N, K, 0, N, N);
  for (u32 n0 = 0; n0 < N; n0 += width) {
    u32 w = n0 + width < N ? width : N - n0;
    for (u32 k = 0; k < K; k++)
      for (u32 j = 0; j < w; j++) pack[k * w + j] = B[k * N + n0 + j];
    panel(A, ars, acs, pack, C + n0, M, w, K, 0, w, N);
  }
}

// Byte offsets into the shared memory; strides in floats (0 broadcasts).
__attribute__((export_name("bmm"))) void bmm(u32 a, u32 b, u32 c, u32 scratch, u32 batch, u32 M,
                                             u32 N, u32 K, u32 transA, u32 transB, u32 strideA,
                                             u32 strideB) {
  const float *A = (const float *)a, *B = (const float *)b;
  float *C = (float *)c, *pack = (float *)scratch, *SB = pack + PANEL;
  float *SA = SB + (transB ? K * N : 0);
  for (u32 i = 0; i < batch; i++) {
    const float *Ai = A + i * strideA, *Bi = B + i * strideB;
    if (transA) {
      if (i == 0 || strideA != 0) transposeInto(Ai, SA, K, M);
      Ai = SA;
    }
    if (transB) {
      if (i == 0 || strideB != 0) transposeInto(Bi, SB, N, K);
      Bi = SB;
    }
    gemm1(Ai, K, 1, Bi, C + i * M * N, M, N, K, pack);
  }
}

// y = x r w over rows of H, r = 1 / sqrt(sum(x^2) / H + eps): RMSNorm's forward, the stock ops'
// order (square, mean, add eps, rsqrt, times r, times w), in one pass per row.
__attribute__((export_name("rmsnorm"))) void rmsnorm(u32 x, u32 w, u32 y, u32 rows, u32 H,
                                                     float eps) {
  const float *X = (const float *)x, *W = (const float *)w;
  float *Y = (float *)y;
  for (u32 i = 0; i < rows; i++, X += H, Y += H) {
    float ss = 0;
    for (u32 j = 0; j < H; j++) ss += X[j] * X[j];
    float r = 1.0f / __builtin_sqrtf(ss / (float)H + eps);
    for (u32 j = 0; j < H; j++) Y[j] = X[j] * r * W[j];
  }
}

// RoPE, rotate-half with the sign folded into sinSigned: x [B, nH, L, D], cos and sinSigned
// [B, 1, L, D]; y = x cos + swap(x) sinSigned, swap(x)_j = x_{(j + D/2) mod D}. With `back` set
// it is the backward, dx = dy cos + swap(dy sinSigned) (the swap is its own transpose).
__attribute__((export_name("rope"))) void rope(u32 x, u32 cs, u32 sn, u32 y, u32 B, u32 nH,
                                               u32 L, u32 D, u32 back) {
  const float *X = (const float *)x, *C = (const float *)cs, *S = (const float *)sn;
  float *Y = (float *)y;
  u32 half = D / 2;
  for (u32 b = 0; b < B; b++)
    for (u32 h = 0; h < nH; h++)
      for (u32 l = 0; l < L; l++) {
        const float *xr = X + ((b * nH + h) * L + l) * D, *c = C + (b * L + l) * D;
        const float *s = S + (b * L + l) * D;
        float *yr = Y + ((b * nH + h) * L + l) * D;
        if (back) {
          for (u32 j = 0; j < half; j++) yr[j] = xr[j] * c[j] + xr[j + half] * s[j + half];
          for (u32 j = half; j < D; j++) yr[j] = xr[j] * c[j] + xr[j - half] * s[j - half];
        } else {
          for (u32 j = 0; j < half; j++) yr[j] = xr[j] * c[j] + xr[j + half] * s[j];
          for (u32 j = half; j < D; j++) yr[j] = xr[j] * c[j] + xr[j - half] * s[j];
        }
      }
}

// A frozen projection with its LoRA delta, outside a tape: y = x wt + (x at) bts for x [N, in],
// wt [in, out], at [in, r], bts [r, out] (the scale folded in), as the separate products and
// their sum compute it (y = x wt, then d = (x at) bts, then y + d). `scratch`: PANEL + N r +
// N out floats.
__attribute__((export_name("lora_linear"))) void lora_linear(u32 x, u32 wt, u32 at, u32 bts,
                                                             u32 y, u32 scratch, u32 N, u32 in,
                                                             u32 out, u32 r) {
  const float *X = (const float *)x;
  float *Y = (float *)y, *pack = (float *)scratch, *T = pack + PANEL, *D = T + N * r;
  gemm1(X, in, 1, (const float *)wt, Y, N, out, in, pack);
  gemm1(X, in, 1, (const float *)at, T, N, r, in, pack);
  gemm1(T, r, 1, (const float *)bts, D, N, out, r, pack);
  u32 i = 0, n = N * out;
  for (; i + 4 <= n; i += 4) wasm_v128_store(Y + i, wasm_f32x4_add(wasm_v128_load(Y + i), wasm_v128_load(D + i)));
  for (; i < n; i++) Y[i] += D[i];
}

static void scale(float *x, u32 n, float s) {
  u32 i = 0;
  v128_t v = wasm_f32x4_splat(s);
  for (; i + 4 <= n; i += 4) wasm_v128_store(x + i, wasm_f32x4_mul(wasm_v128_load(x + i), v));
  for (; i < n; i++) x[i] *= s;
}

static void addInto(float *y, const float *d, u32 n) {
  u32 i = 0;
  for (; i + 4 <= n; i += 4) wasm_v128_store(y + i, wasm_f32x4_add(wasm_v128_load(y + i), wasm_v128_load(d + i)));
  for (; i < n; i++) y[i] += d[i];
}

// Under a tape: a frozen projection wt [in, out] with LoRA's A [r, in] and B [out, r] (PEFT's
// layout) on x [N, in]: t = s (x A^T) [N, r] and y = x wt + t B^T [N, out], as the taped ops
// compute them (lora.ts: t = (h A^T) s, delta = t B^T, y = x W^T + delta). `scratch`: PANEL +
// in r + r out + N out floats.
__attribute__((export_name("lora_fwd"))) void lora_fwd(u32 x, u32 wt, u32 a, u32 b, u32 y, u32 t,
                                                       u32 scratch, u32 N, u32 in, u32 out,
                                                       u32 r, float s) {
  const float *X = (const float *)x;
  float *Y = (float *)y, *T = (float *)t, *pack = (float *)scratch;
  float *At = pack + PANEL, *Bt = At + in * r, *D = Bt + r * out;
  transposeInto((const float *)a, At, r, in);
  transposeInto((const float *)b, Bt, out, r);
  gemm1(X, in, 1, At, T, N, r, in, pack);
  scale(T, N * r, s);
  gemm1(X, in, 1, (const float *)wt, Y, N, out, in, pack);
  gemm1(T, r, 1, Bt, D, N, out, r, pack);
  addInto(Y, D, N * out);
}

// lora_fwd's backward for dy = g [N, out]: sgB = s (g B) [N, r], dx = g wt^T + sgB A [N, in],
// dA = sgB^T x [r, in], dB = g^T t [out, r], the taped ops' products and order. `scratch`:
// PANEL + N r + N in + out in + r N + out N floats.
__attribute__((export_name("lora_bwd"))) void lora_bwd(u32 g, u32 x, u32 t, u32 wt, u32 a,
                                                       u32 b, u32 dx, u32 da, u32 db,
                                                       u32 scratch, u32 N, u32 in, u32 out,
                                                       u32 r, float s) {
  const float *G = (const float *)g, *X = (const float *)x, *T = (const float *)t;
  float *DX = (float *)dx, *pack = (float *)scratch;
  float *SG = pack + PANEL, *DH = SG + N * r, *W = DH + N * in, *SGt = W + out * in;
  float *Gt = SGt + r * N;
  gemm1(G, out, 1, (const float *)b, SG, N, r, out, pack);
  scale(SG, N * r, s);
  gemm1(SG, r, 1, (const float *)a, DH, N, in, r, pack);
  transposeInto((const float *)wt, W, in, out);
  gemm1(G, out, 1, W, DX, N, in, out, pack);
  addInto(DX, DH, N * in);
  transposeInto(SG, SGt, N, r);
  gemm1(SGt, N, 1, X, (float *)da, r, in, N, pack);
  transposeInto(G, Gt, N, out);
  gemm1(Gt, N, 1, T, (float *)db, out, r, N, pack);
}

// Rows `ids` of E from E^T [H, V] (the tied embedding as the LM head holds it): out [n, H],
// out[i][h] = et[h][ids[i]]; an id outside [0, V) gives a row of zeros.
__attribute__((export_name("gather_cols"))) void gather_cols(u32 et, u32 ids, u32 out, u32 n,
                                                             u32 H, u32 V) {
  const float *E = (const float *)et;
  const int *I = (const int *)ids;
  float *O = (float *)out;
  for (u32 i = 0; i < n; i++) {
    u32 id = (u32)I[i];
    float *o = O + i * H;
    if (id >= V)
      for (u32 h = 0; h < H; h++) o[h] = 0;
    else
      for (u32 h = 0; h < H; h++) o[h] = E[h * V + id];
  }
}

// e^x, four lanes: Cephes' expf (x = n ln2 + r, |r| <= ln2 / 2, a degree-6 polynomial in r,
// times 2^n), ~1 ulp; below -87.34 it gives 0 (where e^x is subnormal, < 1.2e-38), above
// 88.72 (ln FLT_MAX) +inf, NaN stays NaN.
static v128_t exp4(v128_t x) {
  const v128_t lo = wasm_f32x4_splat(-87.3365447505f), hi = wasm_f32x4_splat(88.7228391117f);
  v128_t c = wasm_f32x4_min(wasm_f32x4_max(x, lo), hi);
  v128_t n = wasm_f32x4_nearest(wasm_f32x4_mul(c, wasm_f32x4_splat(1.44269504088896341f)));
  v128_t r = wasm_f32x4_sub(c, wasm_f32x4_mul(n, wasm_f32x4_splat(0.693359375f)));
  r = wasm_f32x4_sub(r, wasm_f32x4_mul(n, wasm_f32x4_splat(-2.12194440e-4f)));
  v128_t p = wasm_f32x4_splat(1.9875691500e-4f);
  p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(1.3981999507e-3f));
  p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(8.3334519073e-3f));
  p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(4.1665795894e-2f));
  p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(1.6666665459e-1f));
  p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(5.0000001201e-1f));
  p = wasm_f32x4_add(wasm_f32x4_add(wasm_f32x4_mul(wasm_f32x4_mul(p, r), r), r), wasm_f32x4_splat(1.0f));
  // 2^n as 2^(n - 1) * 2 where n > 0 (n reaches 128 near ln(FLT_MAX), past the exponent field).
  v128_t ni = wasm_i32x4_trunc_sat_f32x4(n), up = wasm_i32x4_gt(ni, wasm_i32x4_splat(0));
  v128_t e = wasm_i32x4_shl(wasm_i32x4_add(wasm_i32x4_sub(ni, wasm_v128_and(up, wasm_i32x4_splat(1))), wasm_i32x4_splat(127)), 23);
  v128_t y = wasm_f32x4_mul(wasm_f32x4_mul(p, e), wasm_v128_bitselect(wasm_f32x4_splat(2.0f), wasm_f32x4_splat(1.0f), up));
  y = wasm_v128_bitselect(wasm_f32x4_splat(0.0f), y, wasm_f32x4_lt(x, lo));
  y = wasm_v128_bitselect(wasm_f32x4_splat(__builtin_inff()), y, wasm_f32x4_gt(x, wasm_f32x4_splat(88.7228391117f)));
  return y;
}

__attribute__((export_name("exp_f32"))) void exp_f32(u32 x, u32 y, u32 n) {
  const float *X = (const float *)x;
  float *Y = (float *)y;
  u32 i = 0;
  for (; i + 4 <= n; i += 4) wasm_v128_store(Y + i, exp4(wasm_v128_load(X + i)));
  if (i < n) { // the last 1-3 values in lanes (no stack: this module has none of its own)
    u32 rem = n - i;
    v128_t v = wasm_f32x4_splat(0);
    v = wasm_f32x4_replace_lane(v, 0, X[i]);
    if (rem > 1) v = wasm_f32x4_replace_lane(v, 1, X[i + 1]);
    if (rem > 2) v = wasm_f32x4_replace_lane(v, 2, X[i + 2]);
    v = exp4(v);
    Y[i] = wasm_f32x4_extract_lane(v, 0);
    if (rem > 1) Y[i + 1] = wasm_f32x4_extract_lane(v, 1);
    if (rem > 2) Y[i + 2] = wasm_f32x4_extract_lane(v, 2);
  }
}

// The first k (1-4) floats at p as lanes, and back (no stack: this module has none).
static v128_t loadp(const float *p, u32 k) {
  if (k == 4) return wasm_v128_load(p);
  v128_t v = wasm_f32x4_splat(0);
  v = wasm_f32x4_replace_lane(v, 0, p[0]);
  if (k > 1) v = wasm_f32x4_replace_lane(v, 1, p[1]);
  if (k > 2) v = wasm_f32x4_replace_lane(v, 2, p[2]);
  if (k > 3) v = wasm_f32x4_replace_lane(v, 3, p[3]);
  return v;
}
static void storep(float *p, v128_t v, u32 k) {
  if (k == 4) return wasm_v128_store(p, v);
  p[0] = wasm_f32x4_extract_lane(v, 0);
  if (k > 1) p[1] = wasm_f32x4_extract_lane(v, 1);
  if (k > 2) p[2] = wasm_f32x4_extract_lane(v, 2);
  if (k > 3) p[3] = wasm_f32x4_extract_lane(v, 3);
}

static v128_t sigmoid4(v128_t g) { // 1 / (1 + e^-g), as tfjs's sigmoid
  const v128_t one = wasm_f32x4_splat(1.0f);
  return wasm_f32x4_div(one, wasm_f32x4_add(one, exp4(wasm_f32x4_neg(g))));
}

// SwiGLU's gate, y = (g sigmoid(g)) u, the stock ops' order.
__attribute__((export_name("swiglu_fwd"))) void swiglu_fwd(u32 g, u32 u, u32 y, u32 n) {
  const float *G = (const float *)g, *U = (const float *)u;
  float *Y = (float *)y;
  for (u32 i = 0; i < n; i += 4) {
    u32 k = n - i < 4 ? n - i : 4;
    v128_t gv = loadp(G + i, k), uv = loadp(U + i, k);
    storep(Y + i, wasm_f32x4_mul(wasm_f32x4_mul(gv, sigmoid4(gv)), uv), k);
  }
}

// Its backward (swiglu.ts's closed form, same order): s = sigmoid(g),
// dg = dy u s (1 + g (1 - s)), du = dy g s.
__attribute__((export_name("swiglu_bwd"))) void swiglu_bwd(u32 dy, u32 g, u32 u, u32 dg, u32 du,
                                                           u32 n) {
  const float *D = (const float *)dy, *G = (const float *)g, *U = (const float *)u;
  float *DG = (float *)dg, *DU = (float *)du;
  const v128_t one = wasm_f32x4_splat(1.0f);
  for (u32 i = 0; i < n; i += 4) {
    u32 k = n - i < 4 ? n - i : 4;
    v128_t d = loadp(D + i, k), gv = loadp(G + i, k), uv = loadp(U + i, k), s = sigmoid4(gv);
    v128_t t = wasm_f32x4_add(one, wasm_f32x4_mul(gv, wasm_f32x4_sub(one, s)));
    storep(DG + i, wasm_f32x4_mul(wasm_f32x4_mul(wasm_f32x4_mul(d, uv), s), t), k);
    storep(DU + i, wasm_f32x4_mul(wasm_f32x4_mul(d, gv), s), k);
  }
}
