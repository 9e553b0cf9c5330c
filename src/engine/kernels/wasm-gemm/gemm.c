// A batched f32 GEMM for tfjs-wasm's BatchMatMul where its own kernel runs a naive loop (any
// product with a batch dimension: the attention's scores and weighted sums, forward and
// backward). Built by build.sh into gemm.wasm (wasm32, SIMD128, no libc, no stack, no data),
// which imports tfjs-wasm's linear memory and reads and writes tensors in place.
//
// C[b] (M x N) = op(A[b]) op(B[b]), op = transpose when the flag is set:
//   A[b] is M x K (K x M when transA), B[b] is K x N (N x K when transB), C[b] row-major.
// A batch stride of 0 broadcasts that operand; a transposed operand is read in place (A) or
// turned panel by panel in `scratch` (B). Each C element is summed over k in order (k = 0, 1, ...), one
// multiply and one add per step, as tfjs-wasm's own loop does.
#include <wasm_simd128.h>

typedef unsigned int u32;

// Modes of a product into C: 0, C = acc; 1, C = C + acc (a sum's second term added as it is
// stored, so y + (t B^T) keeps the separate add's value with no pass of its own); 2, the sum
// continued from C (acc starts at C: a product over k in chunks, still summed in order of k).
#define LD(p) (add == 2 ? wasm_v128_load(p) : wasm_f32x4_splat(0))
#define ST(p, v) wasm_v128_store(p, add == 1 ? wasm_f32x4_add(wasm_v128_load(p), v) : v)
#define LDS(p) (add == 2 ? *(p) : 0.0f)
#define STS(p, v) (*(p) = add == 1 ? *(p) + (v) : (v))

// Columns [0, w) of one M x K by K x w product: B(k, n) = B[k * ldb + n], C(m, n) = C[m * ldc + n],
// A(m, k) = A[m * ars + k * acs]; 4 x 8 register tiles.
static void panel(const float *A, u32 ars, u32 acs, const float *B, u32 ldb, float *C, u32 ldc,
                  u32 M, u32 w, u32 K, u32 add) {
  u32 m = 0;
  for (; m + 4 <= M; m += 4) {
    const float *a0 = A + (m + 0) * ars, *a1 = A + (m + 1) * ars;
    const float *a2 = A + (m + 2) * ars, *a3 = A + (m + 3) * ars;
    u32 n = 0;
    for (; n + 8 <= w; n += 8) {
      float *c = C + m * ldc + n;
      v128_t c00 = LD(c), c01 = LD(c + 4), c10 = LD(c + ldc), c11 = LD(c + ldc + 4);
      v128_t c20 = LD(c + 2 * ldc), c21 = LD(c + 2 * ldc + 4);
      v128_t c30 = LD(c + 3 * ldc), c31 = LD(c + 3 * ldc + 4);
      const float *b = B + n;
      for (u32 k = 0; k < K; k++, b += ldb) {
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
      ST(c, c00), ST(c + 4, c01), c += ldc;
      ST(c, c10), ST(c + 4, c11), c += ldc;
      ST(c, c20), ST(c + 4, c21), c += ldc;
      ST(c, c30), ST(c + 4, c31);
    }
    for (; n + 4 <= w; n += 4) {
      float *c = C + m * ldc + n;
      v128_t c0 = LD(c), c1 = LD(c + ldc), c2 = LD(c + 2 * ldc), c3 = LD(c + 3 * ldc);
      const float *b = B + n;
      for (u32 k = 0; k < K; k++, b += ldb) {
        v128_t b0 = wasm_v128_load(b);
        c0 = wasm_f32x4_add(c0, wasm_f32x4_mul(wasm_f32x4_splat(a0[k * acs]), b0));
        c1 = wasm_f32x4_add(c1, wasm_f32x4_mul(wasm_f32x4_splat(a1[k * acs]), b0));
        c2 = wasm_f32x4_add(c2, wasm_f32x4_mul(wasm_f32x4_splat(a2[k * acs]), b0));
        c3 = wasm_f32x4_add(c3, wasm_f32x4_mul(wasm_f32x4_splat(a3[k * acs]), b0));
      }
      ST(c, c0), ST(c + ldc, c1), ST(c + 2 * ldc, c2), ST(c + 3 * ldc, c3);
    }
    for (; n < w; n++) {
      float *c = C + m * ldc + n;
      float s0 = LDS(c), s1 = LDS(c + ldc), s2 = LDS(c + 2 * ldc), s3 = LDS(c + 3 * ldc);
      for (u32 k = 0; k < K; k++) {
        float bk = B[k * ldb + n];
        s0 += a0[k * acs] * bk, s1 += a1[k * acs] * bk;
        s2 += a2[k * acs] * bk, s3 += a3[k * acs] * bk;
      }
      STS(c, s0), STS(c + ldc, s1), STS(c + 2 * ldc, s2), STS(c + 3 * ldc, s3);
    }
  }
  for (; m < M; m++) {
    const float *a0 = A + m * ars;
    float *c = C + m * ldc;
    u32 n = 0;
    for (; n + 8 <= w; n += 8) {
      v128_t c0 = LD(c + n), c1 = LD(c + n + 4);
      const float *b = B + n;
      for (u32 k = 0; k < K; k++, b += ldb) {
        v128_t x0 = wasm_f32x4_splat(a0[k * acs]);
        c0 = wasm_f32x4_add(c0, wasm_f32x4_mul(x0, wasm_v128_load(b)));
        c1 = wasm_f32x4_add(c1, wasm_f32x4_mul(x0, wasm_v128_load(b + 4)));
      }
      ST(c + n, c0), ST(c + n + 4, c1);
    }
    for (; n + 4 <= w; n += 4) {
      v128_t c0 = LD(c + n);
      const float *b = B + n;
      for (u32 k = 0; k < K; k++, b += ldb)
        c0 = wasm_f32x4_add(c0, wasm_f32x4_mul(wasm_f32x4_splat(a0[k * acs]), wasm_v128_load(b)));
      ST(c + n, c0);
    }
    for (; n < w; n++) {
      float s = LDS(c + n);
      for (u32 k = 0; k < K; k++) s += a0[k * acs] * B[k * ldb + n];
      STS(c + n, s);
    }
  }
}

// Fewer than 4 rows: each row of C summed over k in order as whole rows of B stream past
// (B read once, contiguously; the LM head at decode).
static void rows(const float *A, u32 ars, u32 acs, const float *B, u32 ldb, float *C, u32 ldc,
                 u32 M, u32 N, u32 K, u32 cont) {
  for (u32 m = 0; m < M; m++) {
    float *c = C + m * ldc;
    if (!cont)
      for (u32 n = 0; n < N; n++) c[n] = 0;
    u32 k = 0;
    for (; k + 4 <= K; k += 4) { // four rows of B per pass over c, still summed in order of k
      const float *b0 = B + k * ldb, *b1 = b0 + ldb, *b2 = b1 + ldb, *b3 = b2 + ldb;
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
      const float *b = B + k * ldb;
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
// A B with contiguous rows up to this many columns is read in place, not copied panel by panel:
// its rows are at most 4 KiB apart and a K x N slice of the learning step's weights (<= 150 KiB)
// stays in L2 either way; the copies were ~4 ms of its ~60 (projections 10% faster, raw kernels)
#define NOPACK 1024

// C (M x N, row stride ldc) = A B, or C + A B (add = 1); A(m, k) = A[m * ars + k * acs],
// B(k, n) = B[k * brs + n * bcs]. In panels of columns: a K x width slice of B (<= 64 KiB) stays
// in cache while every row of A passes over it. A B with contiguous rows that fits one panel, has
// at most NOPACK columns or K > PANEL / 8 is read in place; otherwise each panel is first copied
// to `pack` (PANEL floats) with contiguous rows: a wide B's rows are pages apart, and a
// transposed B (bcs != 1) is turned there, panel by panel, with no whole transposed copy (in
// chunks of k continued in order where K > PANEL / 8: the LM head's input gradient, K = the
// vocabulary).
static void gemm1(const float *A, u32 ars, u32 acs, const float *B, u32 brs, u32 bcs, float *C,
                  u32 ldc, u32 M, u32 N, u32 K, float *pack, u32 add) {
  u32 small = M < 4 && !add; // rows(): B streamed row by row, at most 3 rows of A
  u32 width = K ? (PANEL / K) & ~7u : N;
  if (width < 8) width = 8;
  if (bcs == 1 && (small || width >= N || K * width > PANEL || N <= NOPACK)) {
    if (small) return rows(A, ars, acs, B, brs, C, ldc, M, N, K, 0);
    return panel(A, ars, acs, B, brs, C, ldc, M, N, K, add);
  }
  u32 kc = K * 8 > PANEL ? PANEL / 8 : K; // rows of B per pack (only a transposed B gets here)
  for (u32 n0 = 0; n0 < N; n0 += width) {
    u32 w = n0 + width < N ? width : N - n0;
    for (u32 k0 = 0; k0 < K || k0 == 0; k0 += kc) {
      u32 kk = k0 + kc < K ? kc : K - k0;
      const float *b = B + n0 * bcs + k0 * brs;
      if (bcs == 1)
        for (u32 k = 0; k < kk; k++)
          for (u32 j = 0; j < w; j++) pack[k * w + j] = b[k * brs + j];
      else
        for (u32 j = 0; j < w; j++)
          for (u32 k = 0; k < kk; k++) pack[k * w + j] = b[j * bcs + k * brs];
      if (small) rows(A + k0 * acs, ars, acs, pack, w, C + n0, ldc, M, w, kk, k0 > 0);
      else panel(A + k0 * acs, ars, acs, pack, w, C + n0, ldc, M, w, kk, k0 > 0 ? 2 : add);
      if (K == 0) break;
    }
  }
}

// Byte offsets into the shared memory; strides in floats (0 broadcasts). `scratch`: PANEL floats.
__attribute__((export_name("bmm"))) void bmm(u32 a, u32 b, u32 c, u32 scratch, u32 batch, u32 M,
                                             u32 N, u32 K, u32 transA, u32 transB, u32 strideA,
                                             u32 strideB) {
  const float *A = (const float *)a, *B = (const float *)b;
  float *C = (float *)c, *pack = (float *)scratch;
  // A transposed (K x M) is read in place: the four rows of a tile are adjacent floats at each k.
  u32 ars = transA ? 1 : K, acs = transA ? M : 1;
  u32 brs = transB ? 1 : N, bcs = transB ? K : 1;
  for (u32 i = 0; i < batch; i++)
    gemm1(A + i * strideA, ars, acs, B + i * strideB, brs, bcs, C + i * M * N, N, M, N, K, pack, 0);
}

// y = x r w over rows of H, r = 1 / sqrt(sum(x^2) / H + eps): RMSNorm's forward, the stock ops'
// order (square, mean, add eps, rsqrt, times r, times w), in one pass per row; each row's r to
// `rout` unless it is 0 (the taped op keeps it for the backward).
__attribute__((export_name("rmsnorm"))) void rmsnorm(u32 x, u32 w, u32 y, u32 rows, u32 H,
                                                     float eps, u32 rout) {
  const float *X = (const float *)x, *W = (const float *)w;
  float *Y = (float *)y, *R = (float *)rout;
  for (u32 i = 0; i < rows; i++, X += H, Y += H) {
    float ss = 0;
    for (u32 j = 0; j < H; j++) ss += X[j] * X[j];
    float r = 1.0f / __builtin_sqrtf(ss / (float)H + eps);
    if (rout) R[i] = r;
    for (u32 j = 0; j < H; j++) Y[j] = X[j] * r * W[j];
  }
}

// Its backward from the saved r, with n = x r (rmsNorm.ts's taped closed form): dn = dy w,
// dx = r (dn - n mean(dn n)) per row, dw = sum over rows of dy n (rows in order).
__attribute__((export_name("rmsnorm_bwd"))) void rmsnorm_bwd(u32 dy, u32 x, u32 w, u32 rin,
                                                             u32 dx, u32 dw, u32 rows, u32 H) {
  const float *D = (const float *)dy, *X = (const float *)x, *W = (const float *)w;
  const float *R = (const float *)rin;
  float *DX = (float *)dx, *DW = (float *)dw;
  for (u32 j = 0; j < H; j++) DW[j] = 0;
  for (u32 i = 0; i < rows; i++, D += H, X += H, DX += H) {
    float r = R[i], dot = 0;
    for (u32 j = 0; j < H; j++) dot += D[j] * W[j] * (X[j] * r);
    float mean = dot / (float)H;
    for (u32 j = 0; j < H; j++) {
      float n = X[j] * r;
      DX[j] = r * (D[j] * W[j] - n * mean);
      DW[j] += D[j] * n;
    }
  }
}

// RoPE, rotate-half with the sign folded into sinSigned: x [B, nH, L, D], cos and sinSigned
// [B, 1, L, D]; y = x cos + swap(x) sinSigned, swap(x)_j = x_{(j + D/2) mod D}. With `back` set
// it is the backward, dx = dy cos + swap(dy sinSigned) (the swap is its own transpose). With
// `seq` set the token-major side is [B, L, nH, D] (a projection's rows, heads not yet split): x
// in the forward, y in the backward; the heads' transposes fold into the rotation's pass.
__attribute__((export_name("rope"))) void rope(u32 x, u32 cs, u32 sn, u32 y, u32 B, u32 nH,
                                               u32 L, u32 D, u32 back, u32 seq) {
  const float *X = (const float *)x, *C = (const float *)cs, *S = (const float *)sn;
  float *Y = (float *)y;
  u32 half = D / 2;
  for (u32 b = 0; b < B; b++)
    for (u32 h = 0; h < nH; h++)
      for (u32 l = 0; l < L; l++) {
        u32 head = ((b * nH + h) * L + l) * D, tok = ((b * L + l) * nH + h) * D;
        const float *xr = X + (seq && !back ? tok : head), *c = C + (b * L + l) * D;
        const float *s = S + (b * L + l) * D;
        float *yr = Y + (seq && back ? tok : head);
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
// their sum compute it (y = x wt, then d = (x at) bts, then y + d, d added as it is stored).
// `scratch`: PANEL + N r floats.
__attribute__((export_name("lora_linear"))) void lora_linear(u32 x, u32 wt, u32 at, u32 bts,
                                                             u32 y, u32 scratch, u32 N, u32 in,
                                                             u32 out, u32 r) {
  const float *X = (const float *)x;
  float *Y = (float *)y, *pack = (float *)scratch, *T = pack + PANEL;
  gemm1(X, in, 1, (const float *)wt, out, 1, Y, out, N, out, in, pack, 0);
  gemm1(X, in, 1, (const float *)at, r, 1, T, r, N, r, in, pack, 0);
  gemm1(T, r, 1, (const float *)bts, out, 1, Y, out, N, out, r, pack, 1);
}

static void scale(float *x, u32 n, float s) {
  u32 i = 0;
  v128_t v = wasm_f32x4_splat(s);
  for (; i + 4 <= n; i += 4) wasm_v128_store(x + i, wasm_f32x4_mul(wasm_v128_load(x + i), v));
  for (; i < n; i++) x[i] *= s;
}

// Under a tape: a frozen projection wt [in, out] with LoRA's A [r, in] and B [out, r] (PEFT's
// layout) on x [N, in]: t = s (x A^T) [N, r] and y = x wt + t B^T [N, out], as the taped ops
// compute them (lora.ts: t = (h A^T) s, delta = t B^T, y = x W^T + delta; A^T and B^T read
// transposed in place, the delta added as it is stored). `scratch`: PANEL floats.
__attribute__((export_name("lora_fwd"))) void lora_fwd(u32 x, u32 wt, u32 a, u32 b, u32 y, u32 t,
                                                       u32 scratch, u32 N, u32 in, u32 out,
                                                       u32 r, float s) {
  const float *X = (const float *)x;
  float *Y = (float *)y, *T = (float *)t, *pack = (float *)scratch;
  gemm1(X, in, 1, (const float *)a, 1, in, T, r, N, r, in, pack, 0);
  scale(T, N * r, s);
  gemm1(X, in, 1, (const float *)wt, out, 1, Y, out, N, out, in, pack, 0);
  gemm1(T, r, 1, (const float *)b, 1, r, Y, out, N, out, r, pack, 1);
}

// lora_fwd's backward for dy = g [N, out]: sgB = s (g B) [N, r], dx = g wt^T + sgB A [N, in],
// dA = sgB^T x [r, in], dB = g^T t [out, r], the taped ops' products and order; the transposed
// operands read in place (g^T and sgB^T as A with strides, wt^T turned panel by panel). dx = 0:
// no input gradient (an x that no trainable variable reaches: layer 0's q, k, v read the frozen
// embedding). `scratch`: PANEL + N r floats.
__attribute__((export_name("lora_bwd"))) void lora_bwd(u32 g, u32 x, u32 t, u32 wt, u32 a,
                                                       u32 b, u32 dx, u32 da, u32 db,
                                                       u32 scratch, u32 N, u32 in, u32 out,
                                                       u32 r, float s) {
  const float *G = (const float *)g, *X = (const float *)x, *T = (const float *)t;
  float *DX = (float *)dx, *pack = (float *)scratch, *SG = pack + PANEL;
  gemm1(G, out, 1, (const float *)b, r, 1, SG, r, N, r, out, pack, 0);
  scale(SG, N * r, s);
  if (dx) {
    gemm1(G, out, 1, (const float *)wt, 1, out, DX, in, N, in, out, pack, 0);
    gemm1(SG, r, 1, (const float *)a, in, 1, DX, in, N, in, r, pack, 1);
  }
  gemm1(SG, 1, r, X, in, 1, (float *)da, in, r, in, N, pack, 0);
  gemm1(G, 1, out, T, r, 1, (float *)db, r, out, r, N, pack, 0);
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

// e^r for x = n ln2 + r (ln2 in two parts, Cephes' expf): a degree-6 polynomial in r.
static v128_t exp_poly(v128_t x, v128_t n) {
  v128_t r = wasm_f32x4_sub(x, wasm_f32x4_mul(n, wasm_f32x4_splat(0.693359375f)));
  r = wasm_f32x4_sub(r, wasm_f32x4_mul(n, wasm_f32x4_splat(-2.12194440e-4f)));
  v128_t p = wasm_f32x4_splat(1.9875691500e-4f);
  p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(1.3981999507e-3f));
  p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(8.3334519073e-3f));
  p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(4.1665795894e-2f));
  p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(1.6666665459e-1f));
  p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(5.0000001201e-1f));
  p = wasm_f32x4_add(wasm_f32x4_add(wasm_f32x4_mul(wasm_f32x4_mul(p, r), r), r), wasm_f32x4_splat(1.0f));
  return p;
}

// e^x, four lanes: Cephes' expf (x = n ln2 + r, |r| <= ln2 / 2, a degree-6 polynomial in r,
// times 2^n), ~1 ulp; below -87.34 it gives 0 (where e^x is subnormal, < 1.2e-38), above
// 88.72 (ln FLT_MAX) +inf, NaN stays NaN.
static v128_t exp4(v128_t x) {
  const v128_t lo = wasm_f32x4_splat(-87.3365447505f), hi = wasm_f32x4_splat(88.7228391117f);
  // pmin/pmax, one minps/maxps each where V8's f32x4.min/max take ~8 instructions (NaN-exact):
  // exp over [8, 63, 384] 0.33-0.45 vs 0.46-0.6 ms; pmax(x, lo) is x < lo ? lo : x, NaN stays NaN
  v128_t c = wasm_f32x4_pmin(wasm_f32x4_pmax(x, lo), hi);
  v128_t n = wasm_f32x4_nearest(wasm_f32x4_mul(c, wasm_f32x4_splat(1.44269504088896341f)));
  v128_t p = exp_poly(c, n);
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

// e^x for a sigmoid, x clamped to [-87, 87] (beyond it 1 + e^x is 1, or its reciprocal ~0):
// exp4's polynomial with no overflow or underflow lanes to mend, and n from x log2 e + 1.5 2^23
// (whose low bits are round(x log2 e) as an integer, where trunc_sat is a long sequence in V8):
// SwiGLU over [8, 63, 384] 0.33-0.45 vs 0.46-0.64 ms forward, 0.43-0.55 vs 0.60-0.73 backward.
static v128_t exp4s(v128_t x) {
  const v128_t magic = wasm_f32x4_splat(12582912.0f);
  x = wasm_f32x4_pmin(wasm_f32x4_pmax(x, wasm_f32x4_splat(-87.0f)), wasm_f32x4_splat(87.0f));
  v128_t j = wasm_f32x4_add(wasm_f32x4_mul(x, wasm_f32x4_splat(1.44269504088896341f)), magic);
  v128_t n = wasm_f32x4_sub(j, magic);
  v128_t p = exp_poly(x, n);
  v128_t e = wasm_i32x4_shl(wasm_i32x4_add(wasm_i32x4_sub(j, magic), wasm_i32x4_splat(127)), 23);
  return wasm_f32x4_mul(p, e);
}

static v128_t sigmoid4(v128_t g) { // 1 / (1 + e^-g), as tfjs's sigmoid
  const v128_t one = wasm_f32x4_splat(1.0f);
  return wasm_f32x4_div(one, wasm_f32x4_add(one, exp4s(wasm_f32x4_neg(g))));
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

// ln x for the row sums below (x >= 1 there; NaN and +inf pass through): Cephes' logf, x =
// 2^e m with m in [sqrt(1/2), sqrt(2)), a degree-8 polynomial in m - 1, ~1 ulp.
static float logf1(float x) {
  if (!(x < __builtin_inff())) return x;
  u32 i = __builtin_bit_cast(u32, x);
  int e = (int)((i >> 23) & 255) - 126;
  float m = __builtin_bit_cast(float, (i & 0x7fffffu) | 0x3f000000u); // [0.5, 1)
  if (m < 0.707106781186547524f) e -= 1, m = m + m - 1.0f;
  else m = m - 1.0f;
  float z = m * m;
  float p = 7.0376836292e-2f;
  p = p * m - 1.1514610310e-1f, p = p * m + 1.1676998740e-1f, p = p * m - 1.2420140846e-1f;
  p = p * m + 1.4249322787e-1f, p = p * m - 1.6668057665e-1f, p = p * m + 2.0000714765e-1f;
  p = p * m - 2.4999993993e-1f, p = p * m + 3.3333331174e-1f;
  float y = p * m * z + (float)e * -2.12194440e-4f - 0.5f * z;
  return m + y + (float)e * 0.693359375f;
}

static float hsum(v128_t v) {
  return (wasm_f32x4_extract_lane(v, 0) + wasm_f32x4_extract_lane(v, 1)) +
         (wasm_f32x4_extract_lane(v, 2) + wasm_f32x4_extract_lane(v, 3));
}

#define MASKED -1.0e30f // masked (-inf) logits clamped here, as tokenStatsStock does

// Per row of logits x [rows, V] with ids [rows]: out[r] = (log p(id), entropy H), p = softmax of
// max(x, -1e30): with m the row's max, s = sum e^(x - m), log p(id) = x[id] - m - ln s and
// H = ln s - sum e^(x - m) (x - m) / s; aux[r] = (m, s) for the backward. An id outside [0, V)
// gives NaN.
__attribute__((export_name("token_stats"))) void token_stats(u32 x, u32 ids, u32 out, u32 aux,
                                                             u32 rows, u32 V) {
  const int *I = (const int *)ids;
  float *O = (float *)out, *A = (float *)aux;
  const v128_t lo = wasm_f32x4_splat(MASKED), lane = wasm_i32x4_make(0, 1, 2, 3);
  for (u32 r = 0; r < rows; r++) {
    const float *X = (const float *)x + r * V;
    v128_t mv = lo;
    for (u32 j = 0; j < V; j += 4) {
      u32 k = V - j < 4 ? V - j : 4;
      v128_t v = wasm_f32x4_pmax(loadp(X + j, k), lo);
      mv = wasm_f32x4_max(mv, k == 4 ? v : wasm_v128_bitselect(v, lo, wasm_i32x4_lt(lane, wasm_i32x4_splat(k))));
    }
    float m = wasm_f32x4_extract_lane(mv, 0);
    for (int l = 1; l < 4; l++) {
      float c = l == 1 ? wasm_f32x4_extract_lane(mv, 1) : l == 2 ? wasm_f32x4_extract_lane(mv, 2) : wasm_f32x4_extract_lane(mv, 3);
      m = c > m || c != c ? c : m;
    }
    v128_t sv = wasm_f32x4_splat(0), tv = sv, M = wasm_f32x4_splat(m);
    for (u32 j = 0; j < V; j += 4) {
      u32 k = V - j < 4 ? V - j : 4;
      v128_t d = wasm_f32x4_sub(wasm_f32x4_pmax(loadp(X + j, k), lo), M);
      v128_t e = exp4(d);
      if (k < 4) e = wasm_v128_and(e, wasm_i32x4_lt(lane, wasm_i32x4_splat(k)));
      sv = wasm_f32x4_add(sv, e);
      tv = wasm_f32x4_add(tv, wasm_f32x4_mul(e, d));
    }
    float s = hsum(sv), t = hsum(tv), ls = logf1(s);
    u32 id = (u32)I[r];
    float xi = X[id < V ? id : 0];
    O[2 * r] = id < V ? ((xi > MASKED ? xi : MASKED) - m) - ls : __builtin_nanf("");
    O[2 * r + 1] = ls - t / s;
    A[2 * r] = m, A[2 * r + 1] = s;
  }
}

// Its backward for dy [rows, 2]: dx_j = dy0 ([j = id] - p_j) - dy1 p_j (log p_j + H), with
// p_j = e^(x_j - m) / s and log p_j = (x_j - m) - ln s from the forward's aux (x clamped at
// -1e30 as there); 0 where x_j is masked (<= -1e30).
__attribute__((export_name("token_stats_bwd"))) void token_stats_bwd(u32 x, u32 ids, u32 stats,
                                                                     u32 aux, u32 dy, u32 dx,
                                                                     u32 rows, u32 V) {
  const int *I = (const int *)ids;
  const float *S = (const float *)stats, *A = (const float *)aux, *D = (const float *)dy;
  const v128_t lo = wasm_f32x4_splat(MASKED), zero = wasm_f32x4_splat(0);
  const v128_t lane = wasm_i32x4_make(0, 1, 2, 3), one = wasm_i32x4_splat(1);
  for (u32 r = 0; r < rows; r++) {
    const float *X = (const float *)x + r * V;
    float *DX = (float *)dx + r * V;
    v128_t id = wasm_i32x4_splat(I[r]), M = wasm_f32x4_splat(A[2 * r]);
    v128_t Sv = wasm_f32x4_splat(A[2 * r + 1]), LS = wasm_f32x4_splat(logf1(A[2 * r + 1]));
    v128_t H = wasm_f32x4_splat(S[2 * r + 1]);
    v128_t d0 = wasm_f32x4_splat(D[2 * r]), d1 = wasm_f32x4_splat(D[2 * r + 1]);
    for (u32 j = 0; j < V; j += 4) {
      u32 k = V - j < 4 ? V - j : 4;
      v128_t xv = loadp(X + j, k);
      v128_t d = wasm_f32x4_sub(wasm_f32x4_pmax(xv, lo), M);
      v128_t p = wasm_f32x4_div(exp4(d), Sv), lp = wasm_f32x4_sub(d, LS);
      v128_t hot = wasm_f32x4_convert_i32x4(
          wasm_v128_and(wasm_i32x4_eq(wasm_i32x4_add(lane, wasm_i32x4_splat((int)j)), id), one));
      v128_t g = wasm_f32x4_sub(wasm_f32x4_mul(d0, wasm_f32x4_sub(hot, p)),
                                wasm_f32x4_mul(wasm_f32x4_mul(d1, p), wasm_f32x4_add(lp, H)));
      storep(DX + j, wasm_v128_bitselect(zero, g, wasm_f32x4_le(xv, lo)), k);
    }
  }
}

// One row of attention scores s[0, n) to softmax weights in place: s scale + m (the mask), max,
// e^(s - max), times 1 / sum; whole vectors, then the last 1-3 values as one (loadp).
static void softmax_row(float *s, const float *m, u32 n, v128_t sc) {
  const v128_t lane = wasm_i32x4_make(0, 1, 2, 3);
  u32 full = n & ~3u, tail = n - full;
  v128_t mv = wasm_f32x4_splat(-__builtin_inff());
  for (u32 j = 0; j < full; j += 4) {
    v128_t x = wasm_f32x4_add(wasm_f32x4_mul(wasm_v128_load(s + j), sc), wasm_v128_load(m + j));
    wasm_v128_store(s + j, x);
    mv = wasm_f32x4_max(mv, x);
  }
  v128_t keep = wasm_i32x4_lt(lane, wasm_i32x4_splat(tail));
  if (tail) {
    v128_t x = wasm_f32x4_add(wasm_f32x4_mul(loadp(s + full, tail), sc), loadp(m + full, tail));
    storep(s + full, x, tail);
    mv = wasm_f32x4_max(mv, wasm_v128_bitselect(x, mv, keep));
  }
  float mx = wasm_f32x4_extract_lane(mv, 0);
  for (int l = 1; l < 4; l++) {
    float c = l == 1 ? wasm_f32x4_extract_lane(mv, 1) : l == 2 ? wasm_f32x4_extract_lane(mv, 2) : wasm_f32x4_extract_lane(mv, 3);
    mx = c > mx || c != c ? c : mx;
  }
  v128_t M = wasm_f32x4_splat(mx), sv = wasm_f32x4_splat(0);
  for (u32 j = 0; j < full; j += 4) {
    v128_t e = exp4(wasm_f32x4_sub(wasm_v128_load(s + j), M));
    wasm_v128_store(s + j, e);
    sv = wasm_f32x4_add(sv, e);
  }
  if (tail) {
    v128_t e = exp4(wasm_f32x4_sub(loadp(s + full, tail), M));
    storep(s + full, e, tail);
    sv = wasm_f32x4_add(sv, wasm_v128_and(e, keep));
  }
  v128_t S = wasm_f32x4_splat(1.0f / hsum(sv)); // one division a row, not one a value
  for (u32 j = 0; j < full; j += 4) wasm_v128_store(s + j, wasm_f32x4_mul(wasm_v128_load(s + j), S));
  if (tail) storep(s + full, wasm_f32x4_mul(loadp(s + full, tail), S), tail);
}

// Softmax's and the scale's gradient over one row's first n columns, in place on dp: ds =
// (dp - sum(dp p)) p scale.
static void softmax_grad_row(float *ds, const float *pr, u32 n, v128_t sc) {
  v128_t acc = wasm_f32x4_splat(0);
  for (u32 j = 0; j < n; j += 4) {
    u32 k = n - j < 4 ? n - j : 4;
    acc = wasm_f32x4_add(acc, wasm_f32x4_mul(loadp(ds + j, k), loadp(pr + j, k)));
  }
  v128_t t = wasm_f32x4_splat(hsum(acc));
  for (u32 j = 0; j < n; j += 4) {
    u32 k = n - j < 4 ? n - j : 4;
    v128_t x = wasm_f32x4_mul(wasm_f32x4_sub(loadp(ds + j, k), t), loadp(pr + j, k));
    storep(ds + j, wasm_f32x4_mul(x, sc), k);
  }
}

static void zero(float *x, u32 n) {
  for (u32 j = 0; j < n; j++) x[j] = 0;
}

// X [C, D] turned into X^T [D, C] in the pack where it fits (the blocks of rows then run
// panel() on it), else the whole product A X^T [rows, C] into S.
static void turn_or_whole(const float *A, const float *X, float *S, float *pack, u32 rows, u32 C,
                          u32 D, u32 fits) {
  if (fits)
    for (u32 c = 0; c < C; c++)
      for (u32 d = 0; d < D; d++) pack[d * C + c] = X[c * D + d];
  else
    gemm1(A, D, 1, X, 1, D, S, C, rows, C, D, pack, 0);
}

#define MASKED_AT -1.0e8f // a mask value at or below it masks its column (llama.ts uses -1e9)

// Grouped-query attention (llama.ts's attention(), its products and order): q [B, nH, L, D],
// k, v [B, nKV, C, D], mask [B, L, C] (additive), G = nH / nKV query heads per kv head, whose
// rows form one [G L, D] block of q. Per (b, kv head): S = q_g k^T [G L, C], times `scale`, plus
// the mask (row i of each head), softmax over C into p [B, nH, L, C] (kept for the backward),
// then each head's p v into out [B, L, nH, D]. Where k^T fits the scratch (C D <= PANEL), a
// block of 4 rows stops at its rows' last unmasked column (a causal mask: half the products):
// the masked columns past it have weight e^(-1e8 ...) = 0 exactly, so p and out are the same
// values. `scratch`: PANEL + L floats.
__attribute__((export_name("attn_fwd"))) void attn_fwd(u32 q, u32 k, u32 v, u32 mask, u32 p,
                                                       u32 out, u32 scratch, u32 B, u32 nH,
                                                       u32 nKV, u32 L, u32 C, u32 D, float scale) {
  const float *Q = (const float *)q, *K = (const float *)k, *V = (const float *)v;
  const float *MK = (const float *)mask;
  float *P = (float *)p, *O = (float *)out, *pack = (float *)scratch;
  u32 *W = (u32 *)(pack + PANEL), G = nH / nKV, GL = G * L, fits = C * D <= PANEL;
  const v128_t sc = wasm_f32x4_splat(scale);
  for (u32 b = 0; b < B; b++) {
    // each query row's width: 1 + its last unmasked column (C where there is none)
    for (u32 i = 0; i < L; i++) {
      const float *m = MK + (b * L + i) * C;
      u32 j = C;
      while (j > 0 && m[j - 1] <= MASKED_AT) j--;
      W[i] = fits && j ? j : C;
    }
    for (u32 h = 0; h < nKV; h++) {
      const float *Qg = Q + (b * nH + h * G) * L * D, *Kb = K + (b * nKV + h) * C * D;
      const float *Vb = V + (b * nKV + h) * C * D;
      float *Pg = P + (b * nH + h * G) * L * C;
      turn_or_whole(Qg, Kb, Pg, pack, GL, C, D, fits);
      for (u32 r0 = 0; r0 < GL; r0 += 4) {
        u32 rb = GL - r0 < 4 ? GL - r0 : 4, w = 0;
        for (u32 t = 0; t < rb; t++) w = W[(r0 + t) % L] > w ? W[(r0 + t) % L] : w;
        if (fits) panel(Qg + r0 * D, D, 1, pack, C, Pg + r0 * C, C, rb, w, D, 0);
        for (u32 t = 0; t < rb; t++) {
          float *s = Pg + (r0 + t) * C;
          softmax_row(s, MK + (b * L + (r0 + t) % L) * C, w, sc);
          zero(s + w, C - w);
        }
      }
      for (u32 g = 0; g < G; g++)
        for (u32 i0 = 0; i0 < L; i0 += 4) {
          u32 ib = L - i0 < 4 ? L - i0 : 4, w = 0;
          for (u32 t = 0; t < ib; t++) w = W[i0 + t] > w ? W[i0 + t] : w;
          panel(Pg + (g * L + i0) * C, C, 1, Vb, D, O + ((b * L + i0) * nH + h * G + g) * D, nH * D, ib, D, w, 0);
        }
    }
  }
}

// Its backward for dout [B, L, nH, D], from the saved p: per (b, kv head), with the group's
// dout rows copied to a [G L, D] block o: dp = o v^T, ds = (dp - rowsum(dp p)) p scale (softmax's
// and the scale's gradients; the mask has none), dq = ds k [B, nH, L, D], dk = ds^T q_g and
// dv = p^T o [B, nKV, C, D]. Where v^T fits the scratch, dp and dq of a block of 4 rows stop at
// its rows' last column of nonzero p (ds is 0 exactly past it). `scratch`: PANEL + G L D + G L C
// floats.
__attribute__((export_name("attn_bwd"))) void attn_bwd(u32 dout, u32 q, u32 k, u32 v, u32 p,
                                                       u32 dq, u32 dk, u32 dv, u32 scratch,
                                                       u32 B, u32 nH, u32 nKV, u32 L, u32 C,
                                                       u32 D, float scale) {
  const float *DO = (const float *)dout, *Q = (const float *)q, *K = (const float *)k;
  const float *V = (const float *)v, *P = (const float *)p;
  float *DQ = (float *)dq, *DK = (float *)dk, *DV = (float *)dv, *pack = (float *)scratch;
  u32 G = nH / nKV, GL = G * L, fits = C * D <= PANEL;
  float *Og = pack + PANEL, *DS = Og + GL * D;
  const v128_t sc = wasm_f32x4_splat(scale);
  for (u32 b = 0; b < B; b++)
    for (u32 h = 0; h < nKV; h++) {
      const float *Qg = Q + (b * nH + h * G) * L * D, *Kb = K + (b * nKV + h) * C * D;
      const float *Vb = V + (b * nKV + h) * C * D, *Pg = P + (b * nH + h * G) * L * C;
      float *DQg = DQ + (b * nH + h * G) * L * D;
      for (u32 g = 0; g < G; g++)
        for (u32 i = 0; i < L; i++) {
          const float *src = DO + ((b * L + i) * nH + h * G + g) * D;
          float *dst = Og + (g * L + i) * D;
          for (u32 d = 0; d < D; d++) dst[d] = src[d];
        }
      turn_or_whole(Og, Vb, DS, pack, GL, C, D, fits);
      for (u32 r0 = 0; r0 < GL; r0 += 4) {
        u32 rb = GL - r0 < 4 ? GL - r0 : 4, w = fits ? 0 : C;
        for (u32 t = 0; t < rb && w < C; t++) {
          const float *pr = Pg + (r0 + t) * C;
          u32 j = C;
          while (j > w && pr[j - 1] == 0) j--;
          w = j > w ? j : w;
        }
        if (fits) panel(Og + r0 * D, D, 1, pack, C, DS + r0 * C, C, rb, w, D, 0);
        for (u32 t = 0; t < rb; t++) {
          softmax_grad_row(DS + (r0 + t) * C, Pg + (r0 + t) * C, w, sc);
          zero(DS + (r0 + t) * C + w, C - w);
        }
        if (fits) panel(DS + r0 * C, C, 1, Kb, D, DQg + r0 * D, D, rb, D, w, 0);
      }
      if (!fits) gemm1(DS, C, 1, Kb, D, 1, DQg, D, GL, D, C, pack, 0);
      gemm1(DS, 1, C, Qg, D, 1, DK + (b * nKV + h) * C * D, D, C, D, GL, pack, 0);
      gemm1(Pg, 1, C, Og, D, 1, DV + (b * nKV + h) * C * D, D, C, D, GL, pack, 0);
    }
}

// AdamW's update of one variable (optim.ts's adamwHost, every operation rounded to float32 in
// the same order, so the same values bit for bit): m' = b1 m + a1 g, v' = b2 v + a2 g^2,
// p' = p keep - step m' / (sqrt(v' / bc2) + eps), into new buffers np, nm, nv.
__attribute__((export_name("adamw"))) void adamw(u32 p, u32 m, u32 v, u32 g, u32 np, u32 nm,
                                                 u32 nv, u32 n, float b1, float a1, float b2,
                                                 float a2, float keep, float eps, float bc2,
                                                 float step) {
  const float *P = (const float *)p, *M = (const float *)m, *V = (const float *)v;
  const float *G = (const float *)g;
  float *NP = (float *)np, *NM = (float *)nm, *NV = (float *)nv;
  for (u32 i = 0; i < n; i++) {
    float gi = G[i];
    float mi = b1 * M[i] + a1 * gi;
    float vi = b2 * V[i] + a2 * (gi * gi);
    float denom = __builtin_sqrtf(vi / bc2) + eps;
    NM[i] = mi, NV[i] = vi;
    NP[i] = P[i] * keep - step * (mi / denom);
  }
}

// Sum of x^2 over n floats, each square rounded to float32 and the sum kept in float64 in order
// (optim.ts's clipByGlobalNorm on the host, the same value), and y = x s (float32 products).
__attribute__((export_name("sumsq_f32"))) double sumsq_f32(u32 x, u32 n) {
  const float *X = (const float *)x;
  double acc = 0;
  for (u32 i = 0; i < n; i++) acc += (double)(X[i] * X[i]);
  return acc;
}

__attribute__((export_name("scale_f32"))) void scale_f32(u32 x, u32 y, u32 n, float s) {
  const float *X = (const float *)x;
  float *Y = (float *)y;
  for (u32 i = 0; i < n; i++) Y[i] = X[i] * s;
}
