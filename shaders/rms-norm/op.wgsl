// RMSNorm, one workgroup per row of x [rows, hidden]:
//   result[r, :] = x[r, :] * inverseSqrt(mean(x[r, :]^2) + eps) * w
// Six stock kernels (square, mean, add, rsqrt, mul, mul) become one pass: on a decode step the
// model is dispatch-bound, and this runs twice per layer.
// Prepended by the host: `const WG : i32 = <power of two>;`. Uniform: eps.
// Bindings from tfjs's header: x, w, uniforms.xShape.

var<workgroup> red : array<f32, WG>;

fn main(index : i32) {
  let row = index / WG;
  let tid = index % WG;
  let hidden = uniforms.xShape[1];
  let base = row * hidden;
  var ss = 0.0;
  for (var c = tid; c < hidden; c += WG) {
    let v = x[base + c];
    ss += v * v;
  }
  red[tid] = ss;
  workgroupBarrier();
  for (var stride = WG / 2; stride > 0; stride = stride / 2) {
    if (tid < stride) {
      red[tid] = red[tid] + red[tid + stride];
    }
    workgroupBarrier();
  }
  let scale = inverseSqrt(red[0] / f32(hidden) + uniforms.eps);
  for (var c = tid; c < hidden; c += WG) {
    result[base + c] = x[base + c] * scale * w[c];
  }
}
