// Learn GEMM through a quantised weight decoded per element (bAt, learn_gemm_b_quant.wgsl),
// for groups that split a packed word. After learn_gemm_common.wgsl, the format's decode and bAt.
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
  
  for (var k = 0u; k < U.K; k++) {
    let av = vec4<f32>(Am[ai.x], Am[ai.y], Am[ai.z], Am[ai.w]);
    let bv = vec4<f32>(bAt(bBase, k, ns.x), bAt(bBase, k, ns.y), bAt(bBase, k, ns.z), bAt(bBase, k, ns.w));
    acc0 += av.x * bv;
    acc1 += av.y * bv;
    acc2 += av.z * bv;
    acc3 += av.w * bv;
    ai += vec4<u32>(U.aS1);
  }
  storeTile(array<vec4<f32>, 4>(acc0, acc1, acc2, acc3), m0, n0, cBase);
}
