// Token statistics of the planned learning step, one workgroup per row of the logits (the
// function of op.wgsl): z = logits / T, logp = z_id - lse, entropy = lse - sum p z; the reference
// pass writes column 2 only. After learn_common.wgsl. Learn plan (src/engine/plan/learnKernels.ts); bindings declared there.
@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(workgroup_id) wid : vec3<u32>, @builtin(local_invocation_index) lid : u32) {
  let row = wid.x;
  let base = row * U.V;
  var mx = -3.0e38;
  for (var v = lid; v < U.V; v += WG) {
    mx = max(mx, Z[base + v] * U.invT);
  }
  mx = reduceMax(mx, lid);
  var se = 0.0;
  var sez = 0.0;
  for (var v = lid; v < U.V; v += WG) {
    let z = Z[base + v] * U.invT;
    let e = exp(z - mx);
    se += e;
    sez += e * z;
  }
  se = reduceSum(se, lid);
  sez = reduceSum(sez, lid);
  if (lid == 0u) {
    let lse = mx + log(se);
    let lp = Z[base + u32(Ids[row])] * U.invT - lse;
    if (U.isRef == 1u) {
      Out[row * COLS + 2u] = lp;
    } else {
      Out[row * COLS] = lp;
      Out[row * COLS + 1u] = lse - sez / se;
      Out[row * COLS + 3u] = lse;
    }
  }
}
