// matmul/plan_gemv.wgsl's variant for software adapters (SwiftShader, llvmpipe), where a workgroup
// barrier is a thread switch: one thread per output unit (matmul/plan_gemv_unit.wgsl) and no barrier at
// all. Each thread streams its weight row(s) once for up to
// MAXB rows of x, and takes the RMS of each row in the same pass:
//   norm(x)·w = inverseSqrt(mean(x^2) + eps) * sum_k x_k n_k w_k.
// Same bindings, uniforms, modes and host-prepended pieces as matmul/plan_gemv.wgsl, plus matmul/plan_gemv_unit.wgsl.

@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(workgroup_id) wid : vec3<u32>, @builtin(local_invocation_index) tid : u32) {
  let u = wid.x * WG + tid;
  var units = G.N;
  if (MODE == 1u || MODE == 2u) {
    units = G.N / 2u;
  }
  if (u >= units) {
    return;
  }
  let b0 = wid.y * MAXB;
  let nb = min(MAXB, G.rows - b0);
  let outs = unitOutputs(u);
  let two = MODE == 1u || MODE == 2u || MODE == 4u;

  var acc : array<f32, MAXB>;
  var acc2 : array<f32, MAXB>;
  var ss : array<f32, MAXB>;
  let chunks = (G.K + 3u) / 4u;
  for (var c = 0u; c < chunks; c++) {
    let w = wload(outs.x, c);
    var w2 = vec4<f32>(0.0);
    if (MODE == 4u) {
      w2 = wload2(outs.x, c);
    } else if (two) {
      w2 = wload(outs.y, c);
    }
    let k = c * 4u;
    var nw = vec4<f32>(1.0);
    if (NORM && k + 3u < G.K) {
      let n0 = u32(G.normOff) + k;
      nw = vec4<f32>(params[n0], params[n0 + 1u], params[n0 + 2u], params[n0 + 3u]);
    } else if (NORM) {
      for (var i = 0u; i < 4u; i++) {
        if (k + i < G.K) {
          nw[i] = params[u32(G.normOff) + k + i];
        }
      }
    }
    let full = k + 3u < G.K;
    for (var b = 0u; b < nb; b++) {
      let base = G.xOff + (b0 + b) * G.xStride + k;
      var x = vec4<f32>(0.0);
      if (full) {
        x = vec4<f32>(work[base], work[base + 1u], work[base + 2u], work[base + 3u]);
      } else {
        for (var i = 0u; i < 4u; i++) {
          if (k + i < G.K) {
            x[i] = work[base + i];
          }
        }
      }
      if (NORM) {
        ss[b] += dot(x, x);
        x = x * nw;
      }
      acc[b] += dot(w, x);
      if (two) {
        acc2[b] += dot(w2, x);
      }
    }
  }

  for (var b = 0u; b < nb; b++) {
    var scaleRow = 1.0;
    if (NORM) {
      scaleRow = inverseSqrt(ss[b] / f32(G.K) + G.eps);
    }
    finish(u, outs, b0 + b, acc[b] * scaleRow, acc2[b] * scaleRow);
  }
}
