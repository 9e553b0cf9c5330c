// Token statistics backward (the function of op_grad.wgsl), one workgroup per row:
// d logits = (dlogp (onehot - p) - dH p (log p + H)) / T. After learn_common.wgsl. Learn plan (src/engine/plan/learnKernels.ts); bindings declared there.
@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(workgroup_id) wid : vec3<u32>, @builtin(local_invocation_index) lid : u32) {
  let row = wid.x;
  let base = row * U.V;
  let ent = Stats[row * COLS + 1u];
  let lse = Stats[row * COLS + 3u];
  let dlp = DStats[row * 2u];
  let dent = DStats[row * 2u + 1u];
  let id = u32(Ids[row]);
  for (var v = lid; v < U.V; v += WG) {
    let lp = Z[base + v] * U.invT - lse;
    let p = exp(lp);
    var d = -dlp * p - dent * p * (lp + ent);
    if (v == id) {
      d += dlp;
    }
    DZ[base + v] = d * U.invT;
  }
}
