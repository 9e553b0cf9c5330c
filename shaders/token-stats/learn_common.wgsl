// The planned learning step's token statistics, shared by learn.wgsl and learn_grad.wgsl: the
// uniform record and workgroup reductions (one workgroup of WG threads per row). The host prepends
// WG and COLS (floats per row of the statistics buffer). Learn plan (src/engine/plan/learnKernels.ts); bindings declared there.
struct St { rows : u32, V : u32, isRef : u32, invT : f32 }
var<workgroup> red : array<f32, WG>;
fn reduceMax(v : f32, lid : u32) -> f32 {
  red[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s /= 2u) {
    if (lid < s) {
      red[lid] = max(red[lid], red[lid + s]);
    }
    workgroupBarrier();
  }
  let r = red[0];
  workgroupBarrier();
  return r;
}
fn reduceSum(v : f32, lid : u32) -> f32 {
  red[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s /= 2u) {
    if (lid < s) {
      red[lid] = red[lid] + red[lid + s];
    }
    workgroupBarrier();
  }
  let r = red[0];
  workgroupBarrier();
  return r;
}
