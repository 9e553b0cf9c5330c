// One weight of a quantised matrix W [wOut, wIn], as float: q * scale.
//  BITS 8: packed [wOut, ceil(wIn / 4)], byte (k % 4) of word k / 4, signed, low byte first.
//  BITS 4: packed [wOut, wIn / 8], nibble (k % 8) of word k / 8, stored as q + 8, low nibble first.
// scales [wOut, wIn / groupSize]. Reads uniforms.packedShape (tfjs) and uniforms.wIn/groupSize.

fn wAt(o : i32, k : i32) -> f32 {
  let words = uniforms.packedShape[1];
  let nGroups = uniforms.wIn / uniforms.groupSize;
  let s = scales[o * nGroups + k / uniforms.groupSize];
  if (BITS == 8) {
    let word = packed[o * words + (k >> 2)];
    return f32(extractBits(word, u32(k & 3) * 8u, 8u)) * s;
  }
  let word = bitcast<u32>(packed[o * words + (k >> 3)]);
  return (f32(extractBits(word, u32(k & 7) * 4u, 4u)) - 8.0) * s;
}
