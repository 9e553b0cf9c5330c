// SwiGLU backward: dg = d u silu'(g), du = d silu(g); silu'(g) = sig(g) (1 + g (1 - sig(g))). Learn plan (src/engine/plan/learnKernels.ts); bindings declared there.
// The host prepends WG, the threads per workgroup.
struct Cnt { n : u32, p0 : u32, p1 : u32, p2 : u32 }
fn run(i : u32) {
  if (i >= U.n) {
    return;
  }
  let g = G[i];
  let sg = 1.0 / (1.0 + exp(-g));
  let d = DAct[i];
  DG[i] = d * Up[i] * sg * (1.0 + g * (1.0 - sg));
  DU[i] = d * g * sg;
}
@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(global_invocation_id) gid : vec3<u32>, @builtin(num_workgroups) nwg : vec3<u32>) {
  let idx = gid.x + gid.y * nwg.x * WG;
  run(idx);
}
