// GeGLU forward (Gemma 3's MLP), one thread per element: act = gelu_tanh(g) u, the formula of
// swiglu/op_geglu.wgsl (tanh argument clamped to +-15). Learn plan (src/engine/plan/learnKernels.ts);
// bindings declared there.
// The host prepends WG, the threads per workgroup.
struct Cnt { n : u32, p0 : u32, p1 : u32, p2 : u32 }
fn run(i : u32) {
  if (i >= U.n) {
    return;
  }
  let a = G[i];
  let t = tanh(clamp(0.7978845608028654 * (a + 0.044715 * a * a * a), -15.0, 15.0));
  Act[i] = 0.5 * a * (1.0 + t) * Up[i];
}
@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(global_invocation_id) gid : vec3<u32>, @builtin(num_workgroups) nwg : vec3<u32>) {
  let idx = gid.x + gid.y * nwg.x * WG;
  run(idx);
}
