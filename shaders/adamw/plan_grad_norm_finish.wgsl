// Global gradient norm, pass 2 of 2 (one workgroup): sums the partials, and writes
// stats = [norm, clip coefficient, skipped]. coef = min(maxNorm / (norm + 1e-6), 1) as torch's
// clip_grad_norm_; skipped = 1 when the norm is not finite (a NaN or Inf gradient) or the host
// asks for a skip (a non-finite loss): the update pass then changes nothing.
// Host-prepended: WG, the Hyper struct, treeSum (adamw/plan_tree_sum.wgsl) and the bindings (H,
// partials, stats).

// WGSL has no isnan / isinf, and a compiler may fold x != x away: test the exponent bits.
fn nonFinite(x : f32) -> bool {
  return (bitcast<u32>(x) & 0x7f800000u) == 0x7f800000u;
}

@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(local_invocation_index) tid : u32) {
  var s = 0.0;
  if (tid < H.parts) {
    s = partials[tid];
  }
  let total = treeSum(tid, s);
  if (tid == 0u) {
    let norm = sqrt(total);
    stats[0] = norm;
    stats[1] = min(H.maxNorm / (norm + 1e-6), 1.0);
    stats[2] = select(0.0, 1.0, nonFinite(norm) || H.forceSkip != 0u);
  }
}
