// Decode-time GEMV for hardware GPUs: result[n, o] = sum_k x[n, k] W[o, k], one workgroup per
// output o with its WG threads splitting the packed words of W's row (neighbouring threads read
// neighbouring words), then a tree reduction per row n in workgroup memory. The one-thread-per-
// output kernel (matmul/op_gemv.wgsl) launches too few threads to hide memory latency on a GPU;
// this one is slower on a software adapter, where every barrier costs a thread switch.
// Host-prepended: `const WG : i32`, `const NMAX : i32`, the format's decode
// (weight_decode_<kind>.wgsl), matmul/op_gemv_word.wgsl.
// Inputs (tfjs header): x [rows, wIn], packed (i32 words), scales. Uniforms: wIn, groupSize.

var<workgroup> part : array<f32, WG * NMAX>;

fn main(index : i32) {
  let o = index / WG;
  let tid = index % WG;
  let outs = uniforms.outShape[1];
  let rows = uniforms.xShape[0];
  var acc : array<f32, NMAX>;
  for (var n = 0; n < NMAX; n++) {
    acc[n] = 0.0;
  }
  if (o < outs) {
    for (var w = tid; w < uniforms.packedShape[1]; w += WG) {
      gemvWord(o, w, &acc);
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
