// plan_gemv.wgsl's variant for software adapters (SwiftShader, llvmpipe), where a workgroup
// barrier is a thread switch: one thread per output unit and no barrier at all. A unit is one
// output (PLAIN, CACHE_V, HEAD), a RoPE pair (j, j + D/2) of one head (ROPE_Q, ROPE_K), or one
// column of gate and up together (GATEUP). Each thread streams its weight row(s) once for up to
// MAXB rows of x, and takes the RMS of each row in the same pass:
//   norm(x)·w = inverseSqrt(mean(x^2) + eps) * sum_k x_k n_k w_k.
// Same bindings, uniforms, modes and host-prepended pieces as plan_gemv.wgsl.

fn unitOutputs(u : u32) -> vec2<u32> {
  if (MODE == 1u || MODE == 2u) {
    let hd = G.headDim / 2u;
    let o = (u / hd) * G.headDim + u % hd;
    return vec2<u32>(o, o + hd);
  }
  return vec2<u32>(u, u);
}

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
    let row = b0 + b;
    var scaleRow = 1.0;
    if (NORM) {
      scaleRow = inverseSqrt(ss[b] / f32(G.K) + G.eps);
    }
    var y = acc[b] * scaleRow;
    var y2 = acc2[b] * scaleRow;
    if (G.biasOff >= 0) {
      y += params[u32(G.biasOff) + outs.x];
    }
    y += loraDelta(G.tOff, G.bOff, G.r, G.scale, row, outs.x);
    if (MODE == 4u) {
      if (G.bias2Off >= 0) {
        y2 += params[u32(G.bias2Off) + outs.x];
      }
      y2 += loraDelta(G.t2Off, G.b2Off, G.r2, G.scale2, row, outs.x);
      work[G.outOff + row * G.outStride + outs.x] = y / (1.0 + exp(-y)) * y2;
      continue;
    }
    if (two) {
      if (G.biasOff >= 0) {
        y2 += params[u32(G.biasOff) + outs.y];
      }
      y2 += loraDelta(G.tOff, G.bOff, G.r, G.scale, row, outs.y);
      // rope(x)[j] = x[j] cos - x[j + D/2] sin;  rope(x)[j + D/2] = x[j + D/2] cos + x[j] sin
      let hd = G.headDim / 2u;
      let jf = u % hd;
      let pos = rowPos(row);
      let cs = auxAt(G.cosOff + pos * hd + jf);
      let sn = auxAt(G.sinOff + pos * hd + jf);
      let r1 = y * cs - y2 * sn;
      let r2 = y2 * cs + y * sn;
      if (MODE == 2u) {
        let h = outs.x / G.headDim;
        let base = cacheBase(row, h);
        cacheStore(base + outs.x % G.headDim, r1);
        cacheStore(base + outs.y % G.headDim, r2);
      } else {
        work[G.outOff + row * G.outStride + outs.x] = r1;
        work[G.outOff + row * G.outStride + outs.y] = r2;
      }
      continue;
    }
    if (MODE == 3u) {
      let h = outs.x / G.headDim;
      cacheStore(cacheBase(row, h) + outs.x % G.headDim, y);
      continue;
    }
    if (MODE == 5u) {
      headStore(G.outOff + row * G.outStride + outs.x, y, y / tok.statT);
      continue;
    }
    let at = G.outOff + row * G.outStride + outs.x;
    if (G.resid != 0u) {
      work[at] = work[at] + y;
    } else {
      work[at] = y;
    }
  }
}
