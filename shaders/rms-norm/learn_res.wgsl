// RMSNorm of a branch added to the residual (Gemma 3's post_attention_layernorm and
// post_feedforward_layernorm before `residual + hidden_states`), one thread per row:
// y = res + x inv w, inv = (mean x^2 + eps)^-1/2 kept for the backward (rms-norm/learn_grad.wgsl,
// whose dX is the branch's gradient; the residual's passes through). Learn plan
// (src/engine/plan/learnKernels.ts); bindings declared there.
// The host prepends WG, the threads per workgroup.
struct Row { rows : u32, H : u32, eps : f32, acc : u32 }
fn run(r : u32) {
  if (r >= U.rows) {
    return;
  }
  let base = r * U.H;
  var ss = 0.0;
  for (var i = 0u; i < U.H; i++) {
    ss += X[base + i] * X[base + i];
  }
  let inv = inverseSqrt(ss / f32(U.H) + U.eps);
  Inv[r] = inv;
  for (var i = 0u; i < U.H; i++) {
    Y[base + i] = Res[base + i] + X[base + i] * inv * W[i];
  }
}
@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(global_invocation_id) gid : vec3<u32>, @builtin(num_workgroups) nwg : vec3<u32>) {
  let idx = gid.x + gid.y * nwg.x * WG;
  run(idx);
}
