// Decode-step grouped-query attention over a KV cache, one workgroup per (batch row, query head):
//   result[b, h, :] = softmax_j(q[b,h]·k[b,g,j] * scale + bias[b, j]) @ v[b, g, :, :]
// for key slots j < uniforms.len only (slots past the cache's fill level cost nothing, where the
// stock path multiplies over the whole capacity); g = h / (nHeads / nKv) as HF repeat_kv.
// Scores live in workgroup memory (CMAX floats), so q·k is computed once per slot.
// Prepended by the host: `const WG : i32 = ...;` (power of two) and `const CMAX : i32 = ...;`.
// Bindings from tfjs's header: q [B, nH, D], k / v [B, nKv, C, D], bias [B, C] (0 or a large
// negative for padding), uniforms nHeads, nKv, headDim, capacity, len, scale.

var<workgroup> scores : array<f32, CMAX>;
var<workgroup> red : array<f32, WG>;

fn main(index : i32) {
  let wg = index / WG;
  let tid = index % WG;
  let nH = uniforms.nHeads;
  let D = uniforms.headDim;
  let C = uniforms.capacity;
  let len = uniforms.len;
  let b = wg / nH;
  let h = wg % nH;
  let g = h / (nH / uniforms.nKv);
  let qBase = (b * nH + h) * D;
  let kvBase = (b * uniforms.nKv + g) * C * D;

  var m = -3.4e38;
  for (var j = tid; j < len; j += WG) {
    var dot = 0.0;
    let kRow = kvBase + j * D;
    for (var d = 0; d < D; d++) {
      dot += q[qBase + d] * k[kRow + d];
    }
    let s = dot * uniforms.scale + bias[b * C + j];
    scores[j] = s;
    m = max(m, s);
  }
  red[tid] = m;
  workgroupBarrier();
  for (var stride = WG / 2; stride > 0; stride = stride / 2) {
    if (tid < stride) {
      red[tid] = max(red[tid], red[tid + stride]);
    }
    workgroupBarrier();
  }
  let mAll = red[0];
  workgroupBarrier();

  var sum = 0.0;
  for (var j = tid; j < len; j += WG) {
    let e = exp(scores[j] - mAll);
    scores[j] = e;
    sum += e;
  }
  red[tid] = sum;
  workgroupBarrier();
  for (var stride = WG / 2; stride > 0; stride = stride / 2) {
    if (tid < stride) {
      red[tid] = red[tid] + red[tid + stride];
    }
    workgroupBarrier();
  }
  let inv = 1.0 / red[0];

  // Threads over the head dimension: neighbouring threads read neighbouring v values.
  for (var d = tid; d < D; d += WG) {
    var acc = 0.0;
    for (var j = 0; j < len; j++) {
      acc += scores[j] * v[kvBase + j * D + d];
    }
    result[qBase + d] = acc * inv;
  }
}
