// Decode-time GEMV against a weight-only-quantised W [wOut, wIn]: result[n, o] = sum_k x[n, k] W[o, k]
// for a few rows n < rows <= NMAX (the G rollouts of a step share every weight load).
// One thread per output o, no workgroup barriers: each thread streams its row of packed words,
// unpacks 4 (int8) or 8 (int4) weights per word, applies the group's scale once per word and
// feeds every row's accumulator from that one load.
// Host-prepended: `const WG : i32`, `const NMAX : i32`, `const BITS : i32`.
// Inputs (tfjs header): x [rows, wIn], packed (i32 words), scales. Uniforms: wIn, groupSize.

fn main(index : i32) {
  let o = index;
  let outs = uniforms.outShape[1];
  if (o >= outs) {
    return;
  }
  let rows = uniforms.xShape[0];
  let inF = uniforms.wIn;
  let words = uniforms.packedShape[1];
  let nGroups = inF / uniforms.groupSize;
  let per = 32 / BITS;  // weights per word
  var acc : array<f32, NMAX>;
  for (var n = 0; n < NMAX; n++) {
    acc[n] = 0.0;
  }
  for (var w = 0; w < words; w++) {
    let word = bitcast<u32>(packed[o * words + w]);
    let k0 = w * per;
    let s = scales[o * nGroups + k0 / uniforms.groupSize];
    for (var j = 0; j < per; j++) {
      let k = k0 + j;
      if (k < inF) {
        var q : f32;
        if (BITS == 8) {
          q = f32(extractBits(bitcast<i32>(word), u32(j) * 8u, 8u));
        } else {
          q = f32(extractBits(word, u32(j) * 4u, 4u)) - 8.0;
        }
        let wq = q * s;
        for (var n = 0; n < rows; n++) {
          acc[n] += x[n * inF + k] * wq;
        }
      }
    }
  }
  for (var n = 0; n < rows; n++) {
    result[n * outs + o] = acc[n];
  }
}
