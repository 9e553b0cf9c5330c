// Decode-time GEMV against a weight-only-quantised W [wOut, wIn]: result[n, o] = sum_k x[n, k] W[o, k]
// for a few rows n < rows <= NMAX (the G rollouts of a step share every weight load).
// One thread per output o, no workgroup barriers: each thread streams its row of packed words,
// unpacks 4 (int8) or 8 (int4) weights per word, applies the group's scale once per word and
// feeds every row's accumulator from that one load.
// Host-prepended: `const WG : i32`, `const NMAX : i32`, the format's decode
// (weight_decode_<kind>.wgsl), matmul/op_gemv_word.wgsl.
// Inputs (tfjs header): x [rows, wIn], packed (i32 words), scales. Uniforms: wIn, groupSize.

fn main(index : i32) {
  let o = index;
  let outs = uniforms.outShape[1];
  if (o >= outs) {
    return;
  }
  let rows = uniforms.xShape[0];
  var acc : array<f32, NMAX>;
  for (var n = 0; n < NMAX; n++) {
    acc[n] = 0.0;
  }
  for (var w = 0; w < uniforms.packedShape[1]; w++) {
    gemvWord(o, w, &acc);
  }
  for (var n = 0; n < rows; n++) {
    result[n * outs + o] = acc[n];
  }
}
