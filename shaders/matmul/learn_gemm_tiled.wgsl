// Learn GEMM, workgroup-tiled (GPUs): the 8 x 8 threads of a workgroup own a 32 x 32 tile of C
// (T x T = 4 x 4 sums per thread, in registers), and walk K in steps of KT: each step the 64
// threads load the A tile [32 x KT] and the B tile [KT x 32] once into workgroup memory (16
// elements each per thread), then every thread reads its 4 rows of A and 4 columns of B there as
// vec4s. Each element of A and B is read from memory once per workgroup instead of once per
// thread (the direct kernel, learn_gemm.wgsl: 8x more loads), and a quantised B is decoded once
// per workgroup. Loads take any strides (transposed views, heads), so they are scalar; consecutive
// threads read consecutive k of A and consecutive n of B (coalesced for row-major operands). Sums
// run over k in order, as the direct kernel's. After learn_gemm_common.wgsl and a
// `fn bAt(base, k, n) -> f32` (learn_gemm_b_f32 in learnKernels.ts, or a quantised format's).
// Host-prepended: T (4), WG (8), KT.

const TILE : u32 = T * WG;
var<workgroup> As : array<vec4<f32>, KT * TILE / 4u>;  // [k][m / 4]
var<workgroup> Bs : array<vec4<f32>, KT * TILE / 4u>;  // [k][n / 4]

@compute @workgroup_size(WG, WG, 1)
fn main(
  @builtin(workgroup_id) wid : vec3<u32>,
  @builtin(local_invocation_id) lid : vec3<u32>,
  @builtin(local_invocation_index) li : u32,
) {
  let zb = wid.z / U.Z1;
  let zh = wid.z % U.Z1;
  let aBase = U.aOff + zb * U.aSb + (zh / U.aDiv) * U.aSh;
  let bBase = U.bOff + zb * U.bSb + (zh / U.bDiv) * U.bSh;
  let cBase = U.cOff + zb * U.cSb + (zh / U.cDiv) * U.cSh;
  let tm = wid.y * TILE;  // the tile's first row and column
  let tn = wid.x * TILE;
  let m0 = tm + lid.y * T;  // this thread's first row and column
  let n0 = tn + lid.x * T;
  var acc0 = vec4<f32>(0.0);
  var acc1 = vec4<f32>(0.0);
  var acc2 = vec4<f32>(0.0);
  var acc3 = vec4<f32>(0.0);
  // Every thread takes part in the loads and barriers, in range or not (workgroup-uniform loop).
  for (var k0 = 0u; k0 < U.K; k0 += KT) {
    for (var e = li; e < KT * TILE; e += WG * WG) {
      // A(tm + r, k0 + c): element e = r * KT + c; zero past the edges.
      let r = e / KT;
      let c = e % KT;
      var a = 0.0;
      if (tm + r < U.M && k0 + c < U.K) {
        a = Am[aBase + (tm + r) * U.aS0 + (k0 + c) * U.aS1];
      }
      As[c * (TILE / 4u) + r / 4u][r % 4u] = a;
      // B(k0 + kb, tn + nb): element e = kb * TILE + nb.
      let kb = e / TILE;
      let nb = e % TILE;
      var b = 0.0;
      if (k0 + kb < U.K && tn + nb < U.N) {
        b = bAt(bBase, k0 + kb, tn + nb);
      }
      Bs[kb * (TILE / 4u) + nb / 4u][nb % 4u] = b;
    }
    workgroupBarrier();
    let steps = min(KT, U.K - k0);
    for (var kk = 0u; kk < steps; kk++) {
      let av = As[kk * (TILE / 4u) + lid.y];
      let bv = Bs[kk * (TILE / 4u) + lid.x];
      acc0 += av.x * bv;
      acc1 += av.y * bv;
      acc2 += av.z * bv;
      acc3 += av.w * bv;
    }
    workgroupBarrier();  // the tiles are rewritten by the next step
  }
  storeTile(array<vec4<f32>, 4>(acc0, acc1, acc2, acc3), m0, n0, cBase);
}
