// Tiled matmul against a frozen weight-only-quantised matrix W [wOut, wIn], dequantised tile by
// tile in workgroup memory (never as a whole float32 copy):
//   FORWARD (prefill, training): result[m, o] = sum_k a[m, k] * W[o, k]     (a = x [M, wIn])
//   BACKWARD (grad of x):        result[m, k] = sum_o a[m, o] * W[o, k]     (a = dy [M, wOut])
// Host-prepended constants: `const TRANS : bool` (true = FORWARD) and `const BITS : i32` (8 or 4),
// plus the dequantiser `fn wAt(o : i32, k : i32) -> f32` from qmatmul_dequant.wgsl.
// Inputs (tfjs header): a, packed (i32 words), scales (f32 [wOut, wIn / groupSize]).
// Uniforms: wIn, groupSize, reduceDim. 8 x 8 threads per 32 x 32 output tile, 4 x 4 outputs per
// thread held in registers, so each value loaded into workgroup memory feeds 4 multiply-adds and
// the barriers are paid once per 32-wide slice of the reduction.

const T : i32 = 32;  // tile edge (outputs and reduction slice)
const R : i32 = 4;   // outputs per thread along each axis
var<workgroup> tileA : array<array<f32, 32>, 32>;  // [row in tile][r]
var<workgroup> tileB : array<array<f32, 32>, 32>;  // [r][col in tile]

fn main(index : i32) {
  let rows = uniforms.outShape[0];
  let cols = uniforms.outShape[1];
  let reduce = uniforms.reduceDim;
  let tx = i32(localId.x);
  let ty = i32(localId.y);
  let tid = ty * 8 + tx;
  let row0 = i32(workgroupId.y) * T;
  let col0 = i32(workgroupId.x) * T;
  var acc : array<array<f32, 4>, 4>;
  for (var i = 0; i < R; i++) {
    for (var j = 0; j < R; j++) {
      acc[i][j] = 0.0;
    }
  }
  for (var r0 = 0; r0 < reduce; r0 += T) {
    // 64 threads fill 32 x 32 of each tile: 16 elements apiece.
    for (var e = tid; e < T * T; e += 64) {
      let i = e / T;
      let j = e % T;
      let ar = row0 + i;
      let ak = r0 + j;
      var va = 0.0;
      if (ar < rows && ak < reduce) {
        va = a[ar * reduce + ak];
      }
      tileA[i][j] = va;
      // B(r, c): the weight at (o = c, k = r) going forward, (o = r, k = c) going back.
      let br = r0 + i;
      let bc = col0 + j;
      var vb = 0.0;
      if (br < reduce && bc < cols) {
        if (TRANS) {
          vb = wAt(bc, br);
        } else {
          vb = wAt(br, bc);
        }
      }
      tileB[i][j] = vb;
    }
    workgroupBarrier();
    for (var r = 0; r < T; r++) {
      var bv : array<f32, 4>;
      for (var j = 0; j < R; j++) {
        bv[j] = tileB[r][tx * R + j];
      }
      for (var i = 0; i < R; i++) {
        let av = tileA[ty * R + i][r];
        for (var j = 0; j < R; j++) {
          acc[i][j] += av * bv[j];
        }
      }
    }
    workgroupBarrier();
  }
  for (var i = 0; i < R; i++) {
    let row = row0 + ty * R + i;
    for (var j = 0; j < R; j++) {
      let col = col0 + tx * R + j;
      if (row < rows && col < cols) {
        result[row * cols + col] = acc[i][j];
      }
    }
  }
}
