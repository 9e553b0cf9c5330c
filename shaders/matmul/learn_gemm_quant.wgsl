// Learn GEMM through a quantised weight decoded per element (bAt, learn_gemm_b_quant.wgsl),
// for groups that split a packed word. After learn_gemm_common.wgsl, the format's decode and bAt.
@compute @workgroup_size(WG, WG, 1)
fn main(@builtin(global_invocation_id) gid : vec3<u32>) {
  let t = threadOf(gid);
  if (!t.live) {
    return;
  }
  // Indices advance by a stride per k instead of being recomputed.
  let m0 = t.m0;
  let n0 = t.n0;
  let ms = t.ms;
  let ns = t.ns;
  var ai = vec4<u32>(t.aBase) + ms * U.aS0;
  var acc0 = vec4<f32>(0.0);
  var acc1 = vec4<f32>(0.0);
  var acc2 = vec4<f32>(0.0);
  var acc3 = vec4<f32>(0.0);
  
  for (var k = 0u; k < U.K; k++) {
    let av = vec4<f32>(Am[ai.x], Am[ai.y], Am[ai.z], Am[ai.w]);
    let bv = vec4<f32>(bAt(t.bBase, k, ns.x), bAt(t.bBase, k, ns.y), bAt(t.bBase, k, ns.z), bAt(t.bBase, k, ns.w));
    acc0 += av.x * bv;
    acc1 += av.y * bv;
    acc2 += av.z * bv;
    acc3 += av.w * bv;
    ai += vec4<u32>(U.aS1);
  }
  storeTile(array<vec4<f32>, 4>(acc0, acc1, acc2, acc3), m0, n0, t.cBase);
}
