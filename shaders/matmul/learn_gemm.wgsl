// Learn GEMM, B an f32 buffer. After learn_gemm_common.wgsl.
fn bAt(base : u32, k : u32, n : u32) -> f32 {
  return Bm[base + k * U.bS0 + n * U.bS1];
}
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
  var bi = vec4<u32>(bBase) + ns * U.bS1;
  for (var k = 0u; k < U.K; k++) {
    let av = vec4<f32>(Am[ai.x], Am[ai.y], Am[ai.z], Am[ai.w]);
    let bv = vec4<f32>(Bm[bi.x], Bm[bi.y], Bm[bi.z], Bm[bi.w]);
    bi += vec4<u32>(U.bS0);
    acc0 += av.x * bv;
    acc1 += av.y * bv;
    acc2 += av.z * bv;
    acc3 += av.w * bv;
    ai += vec4<u32>(U.aS1);
  }
  storeTile(array<vec4<f32>, 4>(acc0, acc1, acc2, acc3), m0, n0, cBase);
}
