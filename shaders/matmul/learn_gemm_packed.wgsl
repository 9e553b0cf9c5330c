// Learn GEMM through a quantised weight whose groups hold whole words: the k loop over packed
// words of WPW weights (the format's weight_decode_<kind>.wgsl). x W^T reads, per block of a
// word's inputs, one word and one scale per output row and decodes the block in registers; dy W
// reads the thread's four consecutive columns of a row from one word (two for f16) and one scale
// per k. No element is decoded twice and no matrix is dequantised. After learn_gemm_common.wgsl,
// the format's decode and learn_gemm_b_quant.wgsl.
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

  let wpr = (U.wK + WPW - 1u) / WPW;
  let spr = U.wK / GS;
  if (U.wT == 1u) {
    // x W^T: rows ns of W along k
    let kFull = U.K / WPW * WPW;
    for (var kb = 0u; kb < kFull; kb += WPW) {
      let wi = kb / WPW;
      let wv = vec4<i32>(Bm[ns.x * wpr + wi], Bm[ns.y * wpr + wi], Bm[ns.z * wpr + wi], Bm[ns.w * wpr + wi]);
      let g = kb / GS;
      let sc = vec4<f32>(S[ns.x * spr + g], S[ns.y * spr + g], S[ns.z * spr + g], S[ns.w * spr + g]);
      for (var j = 0u; j < WPW; j++) {
        let av = vec4<f32>(Am[ai.x], Am[ai.y], Am[ai.z], Am[ai.w]);
        let bv = weightsAt(wv, vec4<u32>(j)) * sc;
        acc0 += av.x * bv;
        acc1 += av.y * bv;
        acc2 += av.z * bv;
        acc3 += av.w * bv;
        ai += vec4<u32>(U.aS1);
      }
    }
    for (var k = kFull; k < U.K; k++) {
      let av = vec4<f32>(Am[ai.x], Am[ai.y], Am[ai.z], Am[ai.w]);
      let bv = vec4<f32>(bAt(0u, k, ns.x), bAt(0u, k, ns.y), bAt(0u, k, ns.z), bAt(0u, k, ns.w));
      acc0 += av.x * bv;
      acc1 += av.y * bv;
      acc2 += av.z * bv;
      acc3 += av.w * bv;
      ai += vec4<u32>(U.aS1);
    }
  } else {
    // dy W: columns n0 .. n0 + 3 of row k (n0 a multiple of 4) sit in one group and one word
    // (int8, int4) or two (f16)
    for (var k = 0u; k < U.K; k++) {
      let av = vec4<f32>(Am[ai.x], Am[ai.y], Am[ai.z], Am[ai.w]);
      let at = k * wpr + n0 / WPW;
      var hi = 0;
      if (WPW < 4u) {
        hi = Bm[at + 1u];
      }
      let bv = weightRun4(Bm[at], hi, n0 % WPW) * S[k * spr + n0 / GS];
      acc0 += av.x * bv;
      acc1 += av.y * bv;
      acc2 += av.z * bv;
      acc3 += av.w * bv;
      ai += vec4<u32>(U.aS1);
    }
  }
  storeTile(array<vec4<f32>, 4>(acc0, acc1, acc2, acc3), m0, n0, t.cBase);
}
