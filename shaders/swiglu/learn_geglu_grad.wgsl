// GeGLU backward: dg = d u gelu_tanh'(g), du = d gelu_tanh(g), with
// gelu_tanh'(a) = (1 + t) / 2 + a / 2 (1 - t^2) c (1 + 3 k a^2), t = tanh(c (a + k a^3)),
// c = sqrt(2 / pi), k = 0.044715 (where the forward's clamp holds, dt = 0). Learn plan
// (src/engine/plan/learnKernels.ts); bindings declared there.
// The host prepends WG, the threads per workgroup.
struct Cnt { n : u32, p0 : u32, p1 : u32, p2 : u32 }
fn run(i : u32) {
  if (i >= U.n) {
    return;
  }
  let a = G[i];
  let z = 0.7978845608028654 * (a + 0.044715 * a * a * a);
  let t = tanh(clamp(z, -15.0, 15.0));
  var dt = 0.0;
  if (abs(z) < 15.0) {
    dt = (1.0 - t * t) * 0.7978845608028654 * (1.0 + 3.0 * 0.044715 * a * a);
  }
  let d = DAct[i];
  DG[i] = d * Up[i] * (0.5 * (1.0 + t) + 0.5 * a * dt);
  DU[i] = d * 0.5 * a * (1.0 + t);
}
@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(global_invocation_id) gid : vec3<u32>, @builtin(num_workgroups) nwg : vec3<u32>) {
  let idx = gid.x + gid.y * nwg.x * WG;
  run(idx);
}
