// Softmax backward, one thread per row: dS = P (dP - sum_j P dP), in place over dP. Learn plan (src/engine/plan/learnKernels.ts); bindings declared there.
// The host prepends WG, the threads per workgroup.
struct Sm { rows : u32, L : u32, nH : u32, p0 : u32 }
fn run(r : u32) {
  if (r >= U.rows) {
    return;
  }
  let base = r * U.L;
  var dot = 0.0;
  for (var j = 0u; j < U.L; j++) {
    dot += P[base + j] * DP[base + j];
  }
  for (var j = 0u; j < U.L; j++) {
    DP[base + j] = P[base + j] * (DP[base + j] - dot);
  }
}
@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(global_invocation_id) gid : vec3<u32>, @builtin(num_workgroups) nwg : vec3<u32>) {
  let idx = gid.x + gid.y * nwg.x * WG;
  run(idx);
}
