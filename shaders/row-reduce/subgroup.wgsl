enable subgroups;
// row-reduce/tree.wgsl's reduceRow with subgroup operations: each level merges a subgroup's
// partials in registers (subgroupMax, subgroupAdd) and passes one partial per subgroup on through
// workgroup memory, so a 256-thread row takes 2 barrier pairs on a 32-wide GPU instead of 8
// barriers. Only used where the subgroup probe found subgroups laid out contiguously (subgroup k
// holds local indices k*n .. k*n + n-1), which the slot index tid / n relies on. Summation order
// is fixed by that layout, so results repeat exactly run to run on one device.
// Prepended by the host: `const WG : i32`, `const LEVELS : i32` (enough levels for the adapter's
// smallest subgroup size s: s^LEVELS >= WG) and `const SLOTS : i32` (WG / s).

var<workgroup> sgSlots : array<vec3<f32>, SLOTS>;

const NO_VALUES = vec3<f32>(-3.4e38, 0.0, 0.0);

fn subgroupMerge(p : vec3<f32>) -> vec3<f32> {
  let m = subgroupMax(p.x);
  let a = exp(p.x - m);
  return vec3<f32>(m, subgroupAdd(p.y * a), subgroupAdd(p.z * a));
}

fn reduceRow(p0 : vec3<f32>, tid : i32) -> vec3<f32> {
  let n = i32(subgroupAdd(1u));
  var p = subgroupMerge(p0);
  var count = WG;  // partials alive before this level's merge
  for (var level = 1; level < LEVELS; level++) {
    count = (count + n - 1) / n;
    workgroupBarrier();  // the slots' previous contents have been read
    if (tid % n == 0) {
      sgSlots[min(tid / n, SLOTS - 1)] = p;
    }
    workgroupBarrier();
    p = select(NO_VALUES, sgSlots[min(tid, SLOTS - 1)], tid < count);
    p = subgroupMerge(p);
  }
  return p;
}
