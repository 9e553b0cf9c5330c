// Learn GEMM, workgroup-tiled (GPUs): matmul/gemm_tile_loop.wgsl's 32 x 32 tiles of C over the
// learn GEMM's strided operands. Loads take any strides (transposed views, heads), so they are
// scalar; consecutive threads read consecutive k of A and consecutive n of B (coalesced for
// row-major operands). After learn_gemm_common.wgsl, a `fn bAt(base, k, n) -> f32`
// (learn_gemm_b_f32 in learnKernels.ts, or a quantised format's) and gemm_tile_loop.wgsl.
// Host-prepended: T (4), WG (8), KT, B_ALONG_K (false).

fn aAt(base : u32, m : u32, k : u32) -> f32 {
  return Am[base + m * U.aS0 + k * U.aS1];
}

fn aSeen(av : vec4<f32>) {
}

@compute @workgroup_size(WG, WG, 1)
fn main(
  @builtin(workgroup_id) wid : vec3<u32>,
  @builtin(local_invocation_id) lid : vec3<u32>,
  @builtin(local_invocation_index) li : u32,
) {
  let zb = wid.z / U.Z1;
  let zh = wid.z % U.Z1;
  let aBase = U.aOff + zb * U.aSb + (zh / U.aDiv) * U.aSh;
  let bBase = U.bOff + zb * U.bSb + (zh / U.bDiv) * U.bSh;
  let cBase = U.cOff + zb * U.cSb + (zh / U.cDiv) * U.cSh;
  let tm = wid.y * TILE;  // the tile's first row and column
  let tn = wid.x * TILE;
  let sums = tileSums(aBase, bBase, tm, tn, U.M, U.N, U.K, lid, li);
  storeTile(sums, tm + lid.y * T, tn + lid.x * T, cBase);
}
