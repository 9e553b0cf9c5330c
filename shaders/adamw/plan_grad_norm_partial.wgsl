// Global gradient norm, pass 1 of 2: each of H.parts workgroups sums g^2 over a grid-strided share
// of the flat gradient buffer (Kahan-compensated per thread, so millions of small squares do not
// vanish into a large running sum) and tree-reduces its threads into partials[workgroup].
// Host-prepended: WG, the Hyper struct, treeSum (adamw/plan_tree_sum.wgsl) and the bindings (H, grads,
// partials).

@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(workgroup_id) wid : vec3<u32>, @builtin(local_invocation_index) tid : u32) {
  var s = 0.0;
  var c = 0.0;
  let stride = H.parts * WG;
  for (var i = wid.x * WG + tid; i < H.n; i += stride) {
    let g = grads[i];
    let y = g * g - c;
    let t = s + y;
    c = (t - s) - y;
    s = t;
  }
  let total = treeSum(tid, s);
  if (tid == 0u) {
    partials[wid.x] = total;
  }
}
