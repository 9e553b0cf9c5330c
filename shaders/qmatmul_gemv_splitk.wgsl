// Decode-time GEMV for hardware GPUs: result[n, o] = sum_k x[n, k] W[o, k], one workgroup per
// output o with its WG threads splitting the packed words of W's row (neighbouring threads read
// neighbouring words), then a tree reduction per row n in workgroup memory. The one-thread-per-
// output kernel (qmatmul_gemv.wgsl) launches too few threads to hide memory latency on a GPU;
// this one is slower on a software adapter, where every barrier costs a thread switch.
// Host-prepended: `const WG : i32`, `const NMAX : i32`, `const BITS : i32`.
// Inputs (tfjs header): x [rows, wIn], packed (i32 words), scales. Uniforms: wIn, groupSize.

var<workgroup> part : array<f32, WG * NMAX>;

fn main(index : i32) {
  let o = index / WG;
  let tid = index % WG;
  let outs = uniforms.outShape[1];
  let rows = uniforms.xShape[0];
  let inF = uniforms.wIn;
  let words = uniforms.packedShape[1];
  let nGroups = inF / uniforms.groupSize;
  let per = 32 / BITS;  // weights per word
  var acc : array<f32, NMAX>;
  for (var n = 0; n < NMAX; n++) {
    acc[n] = 0.0;
  }
  if (o < outs) {
    for (var w = tid; w < words; w += WG) {
      let word = bitcast<u32>(packed[o * words + w]);
      let k0 = w * per;
      let s = scales[o * nGroups + k0 / uniforms.groupSize];
      for (var j = 0; j < per; j++) {
        let k = k0 + j;
        if (k < inF) {
          var q : f32;
          if (BITS == 8) {
            q = f32(extractBits(bitcast<i32>(word), u32(j) * 8u, 8u));
          } else {
            q = f32(extractBits(word, u32(j) * 4u, 4u)) - 8.0;
          }
          let wq = q * s;
          for (var n = 0; n < rows; n++) {
            acc[n] += x[n * inF + k] * wq;
          }
        }
      }
    }
  }
  for (var n = 0; n < NMAX; n++) {
    part[n * WG + tid] = acc[n];
  }
  workgroupBarrier();
  for (var stride = WG / 2; stride > 0; stride = stride / 2) {
    if (tid < stride) {
      for (var n = 0; n < NMAX; n++) {
        part[n * WG + tid] += part[n * WG + tid + stride];
      }
    }
    workgroupBarrier();
  }
  if (o < outs && tid < rows) {
    result[tid * outs + o] = part[tid * WG];
  }
}
