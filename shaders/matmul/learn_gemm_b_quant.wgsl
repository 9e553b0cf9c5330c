// Learn GEMM: bAt(base, k, n), the B operand from a quantised weight W [rows, wK] decoded per
// element by its format's weight_decode_<kind>.wgsl (WPW weights per word), one scale per GS
// inputs: B(k, n) = W[n, k] when wT (x W^T), else W[k, n]. After the format's decode; precedes
// learn_gemm_quant.wgsl, learn_gemm_packed.wgsl or the tiled loop.
fn bAt(base : u32, k : u32, n : u32) -> f32 {
  var r = k;
  var c = n;
  if (U.wT == 1u) {
    r = n;
    c = k;
  }
  let word = Bm[r * ((U.wK + WPW - 1u) / WPW) + c / WPW];
  return weightAt(word, c % WPW) * S[r * (U.wK / GS) + c / GS];
}
