// LoRA dropout: Out = X M, or Out += X M (`acc`), M = Scale where the mask's bit is set, else 0
// (the multiplier tf.dropout draws: 0 or 1 / (1 - p), its value kept in Scale by learn_pack). Learn plan (src/engine/plan/learnKernels.ts); bindings declared there.
// The host prepends WG, the threads per workgroup.
struct Cnt { n : u32, acc : u32, p1 : u32, p2 : u32 }
fn run(i : u32) {
  if (i >= U.n) {
    return;
  }
  var y = 0.0;
  if (((Bits[i / 32u] >> (i % 32u)) & 1u) == 1u) {
    y = X[i] * Scale[0];
  }
  if (U.acc == 1u) {
    y = Out[i] + y;
  }
  Out[i] = y;
}
@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(global_invocation_id) gid : vec3<u32>, @builtin(num_workgroups) nwg : vec3<u32>) {
  let idx = gid.x + gid.y * nwg.x * WG;
  run(idx);
}
