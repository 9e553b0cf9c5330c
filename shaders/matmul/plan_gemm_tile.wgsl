// The one-thread layout's tiled form for many rows of x (a prefill chunk, a large decode batch) on
// software adapters: each thread computes TU units (matmul/plan_gemv_unit.wgsl) x 4 TQ rows of x, so one
// chunk of 4 inputs costs 4 TQ loads of x and TU (or 2 TU) of weights for 4 TQ TU (or twice as
// many) dot products, where the one-thread-per-unit layout loads x once per unit: on a CPU driver
// every load is a per-lane gather, so loads, not multiply-adds, bound it. No workgroup memory, no
// barrier; the sums stay in named variables the host unrolls ({{...}} marks; a<u>_<q>: W's row of
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
  {{SETUP}}
  let chunks = G.K / 4u;
  for (var c = 0u; c < chunks; c++) {
    let k = c * 4u;
    {{XLOAD}}
    if (NORM) {
      let n0 = u32(G.normOff) + k;
      let nw = vec4<f32>(params[n0], params[n0 + 1u], params[n0 + 2u], params[n0 + 3u]);
      {{NORM}}
    }
    {{DOTS}}
    if (MODE == 4u) {
      {{DOTS_W2}}
    } else if (MODE == 1u || MODE == 2u) {
      {{DOTS_PAIR}}
    }
  }
  {{FINISH}}
}
