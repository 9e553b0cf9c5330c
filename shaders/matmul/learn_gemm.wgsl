// Learn GEMM, B an f32 buffer. After learn_gemm_common.wgsl.
fn bAt(base : u32, k : u32, n : u32) -> f32 {
  return Bm[base + k * U.bS0 + n * U.bS1];
}
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
  var bi = vec4<u32>(t.bBase) + ns * U.bS1;
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
  storeTile(array<vec4<f32>, 4>(acc0, acc1, acc2, acc3), m0, n0, t.cBase);
}
