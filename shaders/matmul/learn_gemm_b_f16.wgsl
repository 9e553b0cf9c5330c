// Learn GEMM: bAt(base, k, n), the B operand from a quantised weight W [rows, wK] of IEEE halves, two per word (unpack2x16float),
// one scale per GS inputs: B(k, n) = W[n, k] when wT (x W^T), else W[k, n]. Precedes
// learn_gemm_quant.wgsl or learn_gemm_packed_f16.wgsl.
fn bAt(base : u32, k : u32, n : u32) -> f32 {
  var r = k;
  var c = n;
  if (U.wT == 1u) {
    r = n;
    c = k;
  }
  let word = bitcast<u32>(Bm[r * ((U.wK + 1u) / 2u) + c / 2u]);
  return unpack2x16float(word)[c % 2u] * S[r * (U.wK / GS) + c / GS];
}
