// The planned path's post-branch norm and residual add (Gemma 3's post_attention_layernorm and
// post_feedforward_layernorm, applied to the branch before `residual + hidden_states`):
//   x[row] += RMSNorm(h[row]) * w
// one workgroup per row; the branch h is a GEMV's output in work.
// Host-prepended: WG (a power of two), the NormAdd struct and the bindings (N, work, params).

var<workgroup> red : array<f32, WG>;

@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(workgroup_id) wid : vec3<u32>, @builtin(local_invocation_index) tid : u32) {
  let hb = N.hOff + wid.x * N.H;
  let xb = N.xOff + wid.x * N.H;
  var ss = 0.0;
  for (var k = tid; k < N.H; k += WG) {
    let e = work[hb + k];
    ss += e * e;
  }
  red[tid] = ss;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s / 2u) {
    if (tid < s) {
      red[tid] += red[tid + s];
    }
    workgroupBarrier();
  }
  let inv = inverseSqrt(red[0] / f32(N.H) + N.eps);
  for (var k = tid; k < N.H; k += WG) {
    work[xb + k] = work[xb + k] + work[hb + k] * inv * params[N.normOff + k];
  }
}
