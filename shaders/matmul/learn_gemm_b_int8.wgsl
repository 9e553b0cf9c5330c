// Learn GEMM: bAt(base, k, n), the B operand from a quantised weight W [rows, wK] of int8, four per word,
// one scale per GS inputs: B(k, n) = W[n, k] when wT (x W^T), else W[k, n]. Precedes
// learn_gemm_quant.wgsl or learn_gemm_packed_int8.wgsl.
fn bAt(base : u32, k : u32, n : u32) -> f32 {
  var r = k;
  var c = n;
  if (U.wT == 1u) {
    r = n;
    c = k;
  }
  let word = Bm[r * ((U.wK + 3u) / 4u) + c / 4u];
  let q = (word << (24u - 8u * (c % 4u))) >> 24u;
  return f32(q) * S[r * (U.wK / GS) + c / GS];
}
