// x[t] = E[ids[t]] for the embedding rows [rowStart, rowStart + rowCount) (one dispatch per row
// block), times U.scale (1, or Gemma 3's sqrt(hidden)), one thread per element. Learn plan (src/engine/plan/learnKernels.ts); bindings declared there.
// The host prepends WG, the threads per workgroup.
struct Emb { tokens : u32, H : u32, rowStart : u32, rowCount : u32, scale : f32, p0 : u32, p1 : u32, p2 : u32 }
fn run(i : u32) {
  if (i >= U.tokens * U.H) {
    return;
  }
  let t = i / U.H;
  let r = u32(Ids[t]) - U.rowStart;
  if (u32(Ids[t]) >= U.rowStart && r < U.rowCount) {
    X[i] = E[r * U.H + i % U.H] * U.scale;
  }
}
@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(global_invocation_id) gid : vec3<u32>, @builtin(num_workgroups) nwg : vec3<u32>) {
  let idx = gid.x + gid.y * nwg.x * WG;
  run(idx);
}
