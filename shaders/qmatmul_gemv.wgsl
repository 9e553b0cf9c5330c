// Decode-time GEMV against a weight-only-quantised W [wOut, wIn]: result[n, o] = sum_k x[n, k] W[o, k]
// for a few rows n < rows <= NMAX (the G rollouts of a step share every weight load).
// One workgroup of WG threads per output o; each thread walks packed words with stride WG,
// unpacks 4 (int8) or 8 (int4) weights per word and applies the group's scale once per word.
// Host-prepended: `const WG : i32`, `const NMAX : i32`, `const BITS : i32`.
// Inputs (tfjs header): x [rows, wIn], packed (i32 words), scales. Uniforms: wIn, groupSize.

var<workgroup> red : array<f32, WG * NMAX>;

fn main(index : i32) {
  let flatGroup = i32(workgroupId.z * numWorkgroups.x * numWorkgroups.y + workgroupId.y * numWorkgroups.x + workgroupId.x);
  let o = flatGroup;
  let tid = i32(localId.x);
  let rows = uniforms.xShape[0];
  let outs = uniforms.outShape[1];
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
          for (var n = 0; n < NMAX; n++) {
            if (n < rows) {
              acc[n] += x[n * inF + k] * wq;
            }
          }
        }
      }
    }
  }
  for (var n = 0; n < NMAX; n++) {
    red[n * WG + tid] = acc[n];
  }
  workgroupBarrier();
  for (var stride = WG / 2; stride > 0; stride = stride / 2) {
    if (tid < stride) {
      for (var n = 0; n < NMAX; n++) {
        red[n * WG + tid] += red[n * WG + tid + stride];
      }
    }
    workgroupBarrier();
  }
  if (tid == 0 && o < outs) {
    for (var n = 0; n < NMAX; n++) {
      if (n < rows) {
        result[n * outs + o] = red[n * WG];
      }
    }
  }
}
