// AdamW over the flat parameter buffer (torch.optim.AdamW, as src/rl/optim.ts): one thread per
// parameter, the gradient scaled by the clip coefficient of pass 2; nothing is written when the
// step is skipped, so a NaN gradient leaves parameters and both moments as they were.
// The host folds the step count into decay = 1 - lr wd, stepSize = lr / (1 - b1^t) and
// bc2 = 1 - b2^t (computed in float64 there, as the reference does).
// Host-prepended: WG, the Hyper struct and the bindings (H, stats, grads, params, m, v).

@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(workgroup_id) wid : vec3<u32>, @builtin(local_invocation_index) tid : u32) {
  let i = (wid.y * H.wx + wid.x) * WG + tid;
  if (i >= H.n || stats[2] != 0.0) {
    return;
  }
  let g = grads[i] * stats[1];
  // m <- b1 m + (1 - b1) g;  v <- b2 v + (1 - b2) g^2
  let m1 = H.b1 * m[i] + H.omb1 * g;
  let v1 = H.b2 * v[i] + H.omb2 * (g * g);
  m[i] = m1;
  v[i] = v1;
  // p <- p (1 - lr wd) - lr / bc1 * m / (sqrt(v / bc2) + eps)
  let denom = sqrt(v1 / H.bc2) + H.eps;
  params[i] = params[i] * H.decay - H.stepSize * (m1 / denom);
}
