// Row reduction of per-thread online-softmax partials p = (max m, sum exp(x - m), sum x exp(x - m))
// over a workgroup of WG threads (a power of two), by a tree in workgroup memory. The result is
// valid in thread 0. Called by every thread (it contains barriers); the variant for adapters with
// subgroups is row-reduce/subgroup.wgsl, with the same signature.
// Prepended by the host: `const WG : i32`.

var<workgroup> wgMax : array<f32, WG>;
var<workgroup> wgSum : array<f32, WG>;
var<workgroup> wgDot : array<f32, WG>;

fn reduceRow(p : vec3<f32>, tid : i32) -> vec3<f32> {
  workgroupBarrier();  // thread 0 has read a previous reduction's result
  wgMax[tid] = p.x;
  wgSum[tid] = p.y;
  wgDot[tid] = p.z;
  workgroupBarrier();
  for (var stride = WG / 2; stride > 0; stride = stride / 2) {
    if (tid < stride) {
      let m1 = wgMax[tid];
      let m2 = wgMax[tid + stride];
      let mm = max(m1, m2);
      let a = exp(m1 - mm);
      let b = exp(m2 - mm);
      wgMax[tid] = mm;
      wgSum[tid] = wgSum[tid] * a + wgSum[tid + stride] * b;
      wgDot[tid] = wgDot[tid] * a + wgDot[tid + stride] * b;
    }
    workgroupBarrier();
  }
  return vec3<f32>(wgMax[0], wgSum[0], wgDot[0]);
}
