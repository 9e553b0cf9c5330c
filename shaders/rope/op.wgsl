// Rotate-half RoPE (Hugging Face), one thread per element of x [B, H, L, D]:
//   result = x * cos + rotate_half(x) * sinSigned,  rotate_half([x1, x2]) = [x2, x1]
// with the sign of rotate_half folded into sinSigned = [-sin, sin] by the host; cos and
// sinSigned are [B, 1, L, D], shared by all heads. The backward pass is the same kernel with
// -sinSigned (the rotation's transpose). Five stock kernels (split, concat, mul, mul, add) -> one.
// Bindings from tfjs's header: x, cos, sinS, uniforms.xShape, uniforms.size.

fn main(index : i32) {
  if (index >= uniforms.size) {
    return;
  }
  let D = uniforms.xShape[3];
  let L = uniforms.xShape[2];
  let H = uniforms.xShape[1];
  let half = D / 2;
  let d = index % D;
  let l = (index / D) % L;
  let b = index / (D * L * H);
  let partner = select(index - half, index + half, d < half);
  let t = (b * L + l) * D + d;
  result[index] = x[index] * cos[t] + x[partner] * sinS[t];
}
