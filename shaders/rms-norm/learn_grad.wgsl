// RMSNorm backward, one thread per row: dX (+)= inv g - x inv^3 / H sum(g x), g = dY w. Learn plan (src/engine/plan/learnKernels.ts); bindings declared there.
// The host prepends WG, the threads per workgroup.
struct Row { rows : u32, H : u32, eps : f32, acc : u32 }
fn run(r : u32) {
  if (r >= U.rows) {
    return;
  }
  let base = r * U.H;
  let inv = Inv[r];
  var dot = 0.0;
  for (var i = 0u; i < U.H; i++) {
    dot += DY[base + i] * W[i] * X[base + i];
  }
  let k = inv * inv * inv * dot / f32(U.H);
  for (var i = 0u; i < U.H; i++) {
    var d = inv * DY[base + i] * W[i] - X[base + i] * k;
    if (U.acc == 1u) {
      d += DX[base + i];
    }
    DX[base + i] = d;
  }
}
@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(global_invocation_id) gid : vec3<u32>, @builtin(num_workgroups) nwg : vec3<u32>) {
  let idx = gid.x + gid.y * nwg.x * WG;
  run(idx);
}
