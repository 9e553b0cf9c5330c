// Tiled matmul against a frozen weight-only-quantised matrix W [wOut, wIn], dequantised tile by
// tile in workgroup memory (never as a whole float32 copy):
//   FORWARD (prefill, training): result[m, o] = sum_k a[m, k] * W[o, k]     (a = x [M, wIn])
//   BACKWARD (grad of x):        result[m, k] = sum_o a[m, o] * W[o, k]     (a = dy [M, wOut])
// Host-prepended constants: `const TRANS : bool` (true = FORWARD) and `const BITS : i32` (8 or 4),
// plus the dequantiser `fn wAt(o : i32, k : i32) -> f32` from qmatmul_dequant.wgsl.
// Inputs (tfjs header): a, packed (i32 words), scales (f32 [wOut, wIn / groupSize]).
// Uniforms: wIn, groupSize, reduceDim. 16 x 16 threads, one output each.

const TILE : i32 = 16;
var<workgroup> tileA : array<array<f32, 16>, 16>;
var<workgroup> tileB : array<array<f32, 16>, 16>;

fn main(index : i32) {
  let rows = uniforms.outShape[0];
  let cols = uniforms.outShape[1];
  let reduce = uniforms.reduceDim;
  let lx = i32(localId.x);
  let ly = i32(localId.y);
  let row = i32(workgroupId.y) * TILE + ly;
  let col = i32(workgroupId.x) * TILE + lx;
  var acc = 0.0;
  for (var r0 = 0; r0 < reduce; r0 += TILE) {
    let ra = r0 + lx;
    var va = 0.0;
    if (row < rows && ra < reduce) {
      va = a[row * reduce + ra];
    }
    tileA[ly][lx] = va;
    // B(r, c): the weight at (o = c, k = r) going forward, (o = r, k = c) going back.
    let rb = r0 + ly;
    let cb = i32(workgroupId.x) * TILE + lx;
    var vb = 0.0;
    if (rb < reduce && cb < cols) {
      if (TRANS) {
        vb = wAt(cb, rb);
      } else {
        vb = wAt(rb, cb);
      }
    }
    tileB[ly][lx] = vb;
    workgroupBarrier();
    for (var i = 0; i < TILE; i++) {
      acc += tileA[ly][i] * tileB[i][lx];
    }
    workgroupBarrier();
  }
  if (row < rows && col < cols) {
    result[row * cols + col] = acc;
  }
}
