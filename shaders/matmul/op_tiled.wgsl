// Tiled matmul against a frozen weight-only-quantised matrix W [wOut, wIn], dequantised tile by
// tile in workgroup memory (never as a whole float32 copy):
//   FORWARD (prefill, training): result[m, o] = sum_k a[m, k] * W[o, k]     (a = x [M, wIn])
//   BACKWARD (grad of x):        result[m, k] = sum_o a[m, o] * W[o, k]     (a = dy [M, wOut])
// Host-prepended: `const TRANS : bool` (true = FORWARD), `const WORD_IN_GROUP : bool` (groupSize
// is a multiple of the weights per packed word) and the format's decode (weight_decode_<kind>.wgsl).
// Inputs (tfjs header): a, packed (i32 words), scales (f32 [wOut, wIn / groupSize]).
// Uniforms: wIn, groupSize, reduceDim. 8 x 8 threads per 32 x 32 output tile, 4 x 4 outputs per
// thread held in registers, so each value loaded into workgroup memory feeds 4 multiply-adds and
// the barriers are paid once per 32-wide slice of the reduction.

const T : i32 = 32;  // tile edge (outputs and reduction slice)
const R : i32 = 4;   // outputs per thread along each axis
const PER : i32 = i32(WPW);  // weights per packed word: 2 (f16), 4 (int8) or 8 (int4)
const WPR : i32 = T / PER;    // packed words per 32-weight line of a tile
var<workgroup> tileA : array<array<f32, 32>, 32>;  // [row in tile][r]
// [r][col in tile], one column of padding: the forward fill writes a column of 4-8 rows per word.
var<workgroup> tileB : array<array<f32, 33>, 32>;

// Dequantises the weight tile word by word: each thread reads whole packed words (and one scale
// per word where WORD_IN_GROUP: groupSize is a multiple of PER), not one weight per read, and
// consecutive threads read consecutive words of a weight row.
fn fillB(r0 : i32, col0 : i32, tid : i32, reduce : i32, cols : i32) {
  let words = uniforms.packedShape[1];
  let nGroups = uniforms.wIn / uniforms.groupSize;
  for (var w = tid; w < T * WPR; w += 64) {
    let line = w / WPR;         // the weight row o inside the tile
    let kw = (w % WPR) * PER;   // first k of the word inside the tile
    var o : i32;
    var k0 : i32;
    var ok : bool;
    if (TRANS) {  // B(r, c) = W[o = c, k = r]
      o = col0 + line;
      k0 = r0 + kw;
      ok = o < cols && k0 < reduce;
    } else {      // B(r, c) = W[o = r, k = c]
      o = r0 + line;
      k0 = col0 + kw;
      ok = o < reduce && k0 < cols;
    }
    var word = 0;
    var s = 0.0;
    if (ok) {
      word = packed[o * words + k0 / PER];
      s = scales[o * nGroups + k0 / uniforms.groupSize];
    }
    for (var p = 0; p < PER; p++) {
      let k = k0 + p;
      var v = 0.0;
      if (ok && k < uniforms.wIn) {
        var sc = s;
        if (!WORD_IN_GROUP) {
          sc = scales[o * nGroups + k / uniforms.groupSize];
        }
        v = weightAt(word, u32(p)) * sc;
      }
      if (TRANS) {
        tileB[kw + p][line] = v;
      } else {
        tileB[line][kw + p] = v;
      }
    }
  }
}

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
    // 64 threads fill 32 x 32 of the activation tile (16 values apiece) and the weight tile.
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
    }
    fillB(r0, col0, tid, reduce, cols);
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
