// Sum of one value per thread over a workgroup of WG threads (a power of two), by halving: every
// thread gets the total. Call it from uniform control flow (it holds barriers).

var<workgroup> acc : array<f32, WG>;

fn treeSum(tid : u32, x : f32) -> f32 {
  acc[tid] = x;
  workgroupBarrier();
  for (var k = WG / 2u; k > 0u; k = k >> 1u) {
    if (tid < k) {
      acc[tid] = acc[tid] + acc[tid + k];
    }
    workgroupBarrier();
  }
  return acc[0];
}
