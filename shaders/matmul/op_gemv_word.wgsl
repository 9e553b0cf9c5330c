// Shared by both decode GEMVs: unpack packed word w of W's row o (2 f16, 4 int8 or 8 int4 weights),
// apply its group's scale, and add x[n, k] * W[o, k] into acc[n] for every row n: one weight load
// feeds all the rows (the G rollouts of a step).
// Needs NMAX and the format's decode (weight_decode_<kind>.wgsl: WPW, weightAt); reads x, packed,
// scales and uniforms wIn, groupSize, xShape, packedShape.

fn gemvWord(o : i32, w : i32, acc : ptr<function, array<f32, NMAX>>) {
  let rows = uniforms.xShape[0];
  let inF = uniforms.wIn;
  let per = i32(WPW);  // weights per word
  let word = packed[o * uniforms.packedShape[1] + w];
  let k0 = w * per;
  let s = scales[o * (inF / uniforms.groupSize) + k0 / uniforms.groupSize];
  for (var j = 0; j < per; j++) {
    let k = k0 + j;
    if (k < inF) {
      let wq = weightAt(word, u32(j)) * s;
      for (var n = 0; n < rows; n++) {
        (*acc)[n] += x[n * inF + k] * wq;
      }
    }
  }
}
