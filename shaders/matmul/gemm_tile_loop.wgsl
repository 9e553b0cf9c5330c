// The workgroup-tiled GEMM's k loop, shared by the learning step (matmul/learn_gemm_tiled.wgsl) and
// the planned prefill / large-batch decode (matmul/plan_gemm_tiled.wgsl): the 8 x 8 threads of a
// workgroup own a 32 x 32 tile of C (T x T = 4 x 4 sums per thread, in registers) and walk K in
// steps of KT: each step the 64 threads load the A tile [32 x KT] and the B tile [KT x 32] once into
// workgroup memory (16 elements each per thread), then every thread reads its 4 rows of A and 4
// columns of B there as vec4s. Each element of A and B is read from memory once per workgroup
// instead of once per thread (8x fewer loads than a thread reading its own operands), and a
// quantised B is decoded once per workgroup. Sums run over k in order.
// Host-prepended: T (4), WG (8), KT; B_ALONG_K (consecutive threads load consecutive k of a B
// column: coalesced where B is a row-major weight read as W^T; else consecutive n); and
//   fn aAt(base, m, k) -> f32   A(m, k), called in range only (the loop zeroes past M and K);
//   fn bAt(base, k, n) -> f32   B(k, n), likewise in range;
//   fn aSeen(av : vec4<f32>)    sees every A vector a thread multiplies (rows m0 .. m0 + 3 at one k).

const TILE : u32 = T * WG;
var<workgroup> As : array<vec4<f32>, KT * TILE / 4u>;  // [k][m / 4]
var<workgroup> Bs : array<vec4<f32>, KT * TILE / 4u>;  // [k][n / 4]

// The thread's T x T sums of the tile at (tm, tn): result[i][j] is row tm + lid.y T + i, column
// tn + lid.x T + j. Every thread of the workgroup must call it (it holds barriers), in range or not.
fn tileSums(
  aBase : u32,
  bBase : u32,
  tm : u32,
  tn : u32,
  M : u32,
  N : u32,
  K : u32,
  lid : vec3<u32>,
  li : u32,
) -> array<vec4<f32>, 4> {
  var acc0 = vec4<f32>(0.0);
  var acc1 = vec4<f32>(0.0);
  var acc2 = vec4<f32>(0.0);
  var acc3 = vec4<f32>(0.0);
  for (var k0 = 0u; k0 < K; k0 += KT) {
    for (var e = li; e < KT * TILE; e += WG * WG) {
      // A(tm + r, k0 + c): element e = r * KT + c; zero past the edges.
      let r = e / KT;
      let c = e % KT;
      var a = 0.0;
      if (tm + r < M && k0 + c < K) {
        a = aAt(aBase, tm + r, k0 + c);
      }
      As[c * (TILE / 4u) + r / 4u][r % 4u] = a;
      // B(k0 + kb, tn + nb)
      var kb = e / TILE;
      var nb = e % TILE;
      if (B_ALONG_K) {
        kb = e % KT;
        nb = e / KT;
      }
      var b = 0.0;
      if (k0 + kb < K && tn + nb < N) {
        b = bAt(bBase, k0 + kb, tn + nb);
      }
      Bs[kb * (TILE / 4u) + nb / 4u][nb % 4u] = b;
    }
    workgroupBarrier();
    let steps = min(KT, K - k0);
    for (var kk = 0u; kk < steps; kk++) {
      let av = As[kk * (TILE / 4u) + lid.y];
      let bv = Bs[kk * (TILE / 4u) + lid.x];
      aSeen(av);
      acc0 += av.x * bv;
      acc1 += av.y * bv;
      acc2 += av.z * bv;
      acc3 += av.w * bv;
    }
    workgroupBarrier();  // the tiles are rewritten by the next step
  }
  return array<vec4<f32>, 4>(acc0, acc1, acc2, acc3);
}
