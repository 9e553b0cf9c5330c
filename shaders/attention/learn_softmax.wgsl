// Attention probabilities in place over S [B, nH, L, L] (scores already scaled), one thread per
// row: key j is seen by query i iff j <= i, j is a real token and (a window, U.win > 0) j > i - win; masked scores get -1e9 as the
// tfjs path adds, so a row with nothing to see is uniform there too. Learn plan (src/engine/plan/learnKernels.ts); bindings declared there.
// The host prepends WG, the threads per workgroup.
struct Sm { rows : u32, L : u32, nH : u32, win : u32 }
fn run(r : u32) {
  if (r >= U.rows) {
    return;
  }
  let i = r % U.L;
  let b = r / (U.L * U.nH);
  let base = r * U.L;
  var mx = -3.0e38;
  for (var j = 0u; j < U.L; j++) {
    var s = S[base + j];
    if (j > i || Valid[b * U.L + j] == 0.0 || (U.win != 0u && j + U.win <= i)) {
      s += -1e9;
    }
    S[base + j] = s;
    mx = max(mx, s);
  }
  var sum = 0.0;
  for (var j = 0u; j < U.L; j++) {
    let e = exp(S[base + j] - mx);
    S[base + j] = e;
    sum += e;
  }
  for (var j = 0u; j < U.L; j++) {
    S[base + j] = S[base + j] / sum;
  }
}
@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(global_invocation_id) gid : vec3<u32>, @builtin(num_workgroups) nwg : vec3<u32>) {
  let idx = gid.x + gid.y * nwg.x * WG;
  run(idx);
}
