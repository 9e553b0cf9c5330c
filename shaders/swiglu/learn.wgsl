// SwiGLU forward, one thread per element: act = silu(g) u. Learn plan (src/engine/plan/learnKernels.ts); bindings declared there.
// The host prepends WG, the threads per workgroup.
struct Cnt { n : u32, p0 : u32, p1 : u32, p2 : u32 }
fn run(i : u32) {
  if (i >= U.n) {
    return;
  }
  let g = G[i];
  Act[i] = g / (1.0 + exp(-g)) * Up[i];
}
@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(global_invocation_id) gid : vec3<u32>, @builtin(num_workgroups) nwg : vec3<u32>) {
  let idx = gid.x + gid.y * nwg.x * WG;
  run(idx);
}
