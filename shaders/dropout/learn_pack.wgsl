// A dropout multiplier [n] (0 or 1 / (1 - p)) packed to one bit per element, one thread per word;
// its nonzero value goes to Scale. Learn plan (src/engine/plan/learnKernels.ts); bindings declared there.
// The host prepends WG, the threads per workgroup.
struct Cnt { n : u32, p0 : u32, p1 : u32, p2 : u32 }
fn run(w : u32) {
  if (w >= (U.n + 31u) / 32u) {
    return;
  }
  var bits = 0u;
  for (var j = 0u; j < 32u; j++) {
    let i = w * 32u + j;
    if (i < U.n && M[i] != 0.0) {
      bits = bits | (1u << j);
      // Every kept element holds the same value: racing writes agree.
      Scale[0] = M[i];
    }
  }
  Bits[w] = bits;
}
@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(global_invocation_id) gid : vec3<u32>, @builtin(num_workgroups) nwg : vec3<u32>) {
  let idx = gid.x + gid.y * nwg.x * WG;
  run(idx);
}
