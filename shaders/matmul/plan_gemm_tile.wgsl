// The one-thread layout's tiled form for many rows of x (a prefill chunk, a large decode batch) on
// software adapters: each thread computes TU units (matmul/plan_gemv_unit.wgsl) x 4 TQ rows of x, so one
// chunk of 4 inputs costs 4 TQ loads of x and TU (or 2 TU) of weights for 4 TQ TU (or twice as
// many) dot products, where the one-thread-per-unit layout loads x once per unit: on a CPU driver
// every load is a per-lane gather, so loads, not multiply-adds, bound it. No workgroup memory, no
// barrier; the sums stay in named variables, written out for TU = 4 units and TQ = 1 quad of rows
// (TILE_TU, TILE_TQ in decodeKernels.ts must match; a<u>_<q>: W's row of
// unit u for row quad q, b<u>_<q>: the second weight row of a RoPE pair or W2's), because a CPU
// driver keeps only constant-indexed values out of memory.
// Grid: x walks groups of TU units, y groups of 4 TQ rows. K, the x offsets and strides must be multiples of
// 4 (the host checks); work and f32 weights are bound as vec4 arrays, one load per 4 floats.
// Host-prepended: WG, MODE, NORM, TWO, wload (wload2), rowPos / cacheBase, loraDelta, the Gemv and
// Tok structs, the bindings and accessors of matmul/plan_gemv.wgsl, and matmul/plan_gemv_unit.wgsl.

// work is bound as array<vec4<f32>> here: x rows start at multiples of 4 (the host checks).
fn xrow(base : u32, k : u32) -> vec4<f32> {
  return work[(base + k) / 4u];
}

fn dots(w : vec4<f32>, x0 : vec4<f32>, x1 : vec4<f32>, x2 : vec4<f32>, x3 : vec4<f32>) -> vec4<f32> {
  return vec4<f32>(dot(w, x0), dot(w, x1), dot(w, x2), dot(w, x3));
}

fn finishQuad(u : u32, units : u32, r0 : u32, a : vec4<f32>, b : vec4<f32>, inv : vec4<f32>) {
  if (u >= units) {
    return;
  }
  let outs = unitOutputs(u);
  for (var j = 0u; j < 4u; j++) {
    if (r0 + j < G.rows) {
      finish(u, outs, r0 + j, a[j] * inv[j], b[j] * inv[j]);
    }
  }
}

@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(workgroup_id) wid : vec3<u32>, @builtin(local_invocation_index) tid : u32) {
  var units = G.N;
  if (MODE == 1u || MODE == 2u) {
    units = G.N / 2u;
  }
  let u0 = (wid.x * WG + tid) * TU;
  if (u0 >= units) {
    return;
  }
  let r0 = wid.y * 4u * TQ;
  // Rows and units past the end are clamped to real ones (their sums are dropped in finishQuad).
  let last = G.rows - 1u;
  let x0b = G.xOff + min(r0 + 0u, last) * G.xStride;
  let x1b = G.xOff + min(r0 + 1u, last) * G.xStride;
  let x2b = G.xOff + min(r0 + 2u, last) * G.xStride;
  let x3b = G.xOff + min(r0 + 3u, last) * G.xStride;
  let o0 = unitOutputs(min(u0 + 0u, units - 1u));
  let o1 = unitOutputs(min(u0 + 1u, units - 1u));
  let o2 = unitOutputs(min(u0 + 2u, units - 1u));
  let o3 = unitOutputs(min(u0 + 3u, units - 1u));
  var a0_0 = vec4<f32>(0.0);
  var b0_0 = vec4<f32>(0.0);
  var a1_0 = vec4<f32>(0.0);
  var b1_0 = vec4<f32>(0.0);
  var a2_0 = vec4<f32>(0.0);
  var b2_0 = vec4<f32>(0.0);
  var a3_0 = vec4<f32>(0.0);
  var b3_0 = vec4<f32>(0.0);
  var ss0 = vec4<f32>(0.0);
  let chunks = G.K / 4u;
  for (var c = 0u; c < chunks; c++) {
    let k = c * 4u;
    var x0 = xrow(x0b, k);
    var x1 = xrow(x1b, k);
    var x2 = xrow(x2b, k);
    var x3 = xrow(x3b, k);
    if (NORM) {
      let n0 = u32(G.normOff) + k;
      let nw = vec4<f32>(params[n0], params[n0 + 1u], params[n0 + 2u], params[n0 + 3u]);
      ss0 += vec4<f32>(dot(x0, x0), dot(x1, x1), dot(x2, x2), dot(x3, x3));
      x0 *= nw;
      x1 *= nw;
      x2 *= nw;
      x3 *= nw;
    }
    let v0 = wload(o0.x, c);
    let v1 = wload(o1.x, c);
    let v2 = wload(o2.x, c);
    let v3 = wload(o3.x, c);
    a0_0 += dots(v0, x0, x1, x2, x3);
    a1_0 += dots(v1, x0, x1, x2, x3);
    a2_0 += dots(v2, x0, x1, x2, x3);
    a3_0 += dots(v3, x0, x1, x2, x3);
    if (MODE == 4u) {
      let w0 = wload2(o0.x, c);
      let w1 = wload2(o1.x, c);
      let w2 = wload2(o2.x, c);
      let w3 = wload2(o3.x, c);
      b0_0 += dots(w0, x0, x1, x2, x3);
      b1_0 += dots(w1, x0, x1, x2, x3);
      b2_0 += dots(w2, x0, x1, x2, x3);
      b3_0 += dots(w3, x0, x1, x2, x3);
    } else if (MODE == 1u || MODE == 2u) {
      let w0 = wload(o0.y, c);
      let w1 = wload(o1.y, c);
      let w2 = wload(o2.y, c);
      let w3 = wload(o3.y, c);
      b0_0 += dots(w0, x0, x1, x2, x3);
      b1_0 += dots(w1, x0, x1, x2, x3);
      b2_0 += dots(w2, x0, x1, x2, x3);
      b3_0 += dots(w3, x0, x1, x2, x3);
    }
  }
  var inv0 = vec4<f32>(1.0);
  if (NORM) {
    inv0 = inverseSqrt(ss0 / f32(G.K) + G.eps);
  }
  finishQuad(u0 + 0u, units, r0 + 0u, a0_0, b0_0, inv0);
  finishQuad(u0 + 1u, units, r0 + 0u, a1_0, b1_0, inv0);
  finishQuad(u0 + 2u, units, r0 + 0u, a2_0, b2_0, inv0);
  finishQuad(u0 + 3u, units, r0 + 0u, a3_0, b3_0, inv0);
}
