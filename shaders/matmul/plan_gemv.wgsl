// The planned path's projection kernel: y = norm(x) W^T (+ b) (+ s (x A^T) B^T), and an epilogue
// by MODE, for up to MAXB rows of x per workgroup (grid y walks row blocks) and R outputs per
// workgroup (grid x). One kernel for every weight format: the host supplies `wload(o, c)`, the
// four weights W[o, 4c .. 4c+3] as float32 (dense, or dequantised from int8 / int4 words), so
// no dense copy of a quantised W exists.
//   MODE 0 PLAIN   out[b, o] = y, or += y when G.resid (o-proj and down-proj add the residual)
//   MODE 1 ROPE_Q  q rotated by RoPE at the row's position, written to work
//   MODE 2 ROPE_K  k rotated, written into the key cache at the token's slot
//   MODE 3 CACHE_V v written into the value cache at the token's slot
//   MODE 4 GATEUP  gate and up in one pass (W and W2): act = gateAct(g) * u (SiLU, or GELU-tanh)
//   MODE 5 HEAD    logits[b, o] = y and scaled[b, o] = y / temperature (token statistics read it)
// RoPE pairs (j, j + D/2) of one head land in one workgroup: R = 4 outputs are j, j+1, j+D/2,
// j+D/2+1, so the rotation needs no second pass.
// Threads split the input in chunks of 4; each keeps R x MAXB partial sums, merged once by a tree
// in workgroup memory. The tree's memory is laid out sum-major (red[j * WG + tid]): at each step
// consecutive threads touch consecutive words, so 32 threads hit 32 banks. Thread-major
// (red[tid * RM + j], RM = 32) put all 32 on one bank: a 32-way conflict per access.
// Host-prepended: WG, R, MAXB, MODE, NORM, gateAct, wload (and wload2 for GATEUP), the Gemv and Tok
// structs, the bindings (G, tok, work, params, lora, W[, S][, W2, S2], and per mode aux, cache or
// the logits pair) and the mode's accessors auxAt, cacheStore, headStore.

const RM : u32 = R * MAXB;
var<workgroup> red : array<f32, WG * RM>;
var<workgroup> inv : array<f32, MAXB>;
var<workgroup> res : array<f32, RM>;

fn outIndex(wg : u32, i : u32) -> u32 {
  if (MODE == 1u || MODE == 2u) {
    let hd = G.headDim / 2u;
    let pairs = hd / 2u;
    let head = wg / pairs;
    let j = (wg % pairs) * 2u;
    return head * G.headDim + j + (i & 1u) + select(0u, hd, i >= 2u);
  }
  return wg * R + i;
}

// Row `row` of x (its block-local index b picks the row's inverse RMS).
fn xload(row : u32, b : u32, c : u32) -> vec4<f32> {
  let k = c * 4u;
  let base = G.xOff + row * G.xStride + k;
  var v = vec4<f32>(0.0);
  for (var i = 0u; i < 4u; i++) {
    if (k + i < G.K) {
      var e = work[base + i];
      if (NORM) {
        e = e * inv[b] * params[u32(G.normOff) + k + i];
      }
      v[i] = e;
    }
  }
  return v;
}

@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(workgroup_id) wid : vec3<u32>, @builtin(local_invocation_index) tid : u32) {
  let b0 = wid.y * MAXB;
  let nb = min(MAXB, G.rows - b0);

  // RMSNorm of the input rows, fused: only the inverse RMS per row is needed up front.
  if (NORM) {
    for (var b = 0u; b < MAXB; b++) {
      var ss = 0.0;
      if (b < nb) {
        for (var k = tid; k < G.K; k += WG) {
          let e = work[G.xOff + (b0 + b) * G.xStride + k];
          ss += e * e;
        }
      }
      red[b * WG + tid] = ss;
    }
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s / 2u) {
      if (tid < s) {
        for (var b = 0u; b < MAXB; b++) {
          red[b * WG + tid] += red[b * WG + tid + s];
        }
      }
      workgroupBarrier();
    }
    if (tid < MAXB) {
      inv[tid] = inverseSqrt(red[tid * WG] / f32(G.K) + G.eps);
    }
    workgroupBarrier();
  }

  var acc : array<f32, RM>;
  let chunks = (G.K + 3u) / 4u;
  for (var c = tid; c < chunks; c += WG) {
    var xs : array<vec4<f32>, MAXB>;
    for (var b = 0u; b < nb; b++) {
      xs[b] = xload(b0 + b, b, c);
    }
    for (var i = 0u; i < R; i++) {
      var o = 0u;
      var w = vec4<f32>(0.0);
      if (MODE == 4u) {
        // GATEUP: slots 0 .. R/2-1 are gate outputs, R/2 .. R-1 the up outputs of the same columns.
        o = wid.x * (R / 2u) + (i % (R / 2u));
        if (o >= G.N) {
          continue;
        }
        if (i < R / 2u) {
          w = wload(o, c);
        } else {
          w = wload2(o, c);
        }
      } else {
        o = outIndex(wid.x, i);
        if (o >= G.N) {
          continue;
        }
        w = wload(o, c);
      }
      for (var b = 0u; b < nb; b++) {
        acc[i * MAXB + b] += dot(w, xs[b]);
      }
    }
  }
  workgroupBarrier();
  for (var j = 0u; j < RM; j++) {
    red[j * WG + tid] = acc[j];
  }
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s / 2u) {
    if (tid < s) {
      for (var j = 0u; j < RM; j++) {
        red[j * WG + tid] += red[j * WG + tid + s];
      }
    }
    workgroupBarrier();
  }

  // Epilogue: bias and LoRA per output, then the mode's write.
  if (tid < RM) {
    let i = tid / MAXB;
    let b = tid % MAXB;
    var o = 0u;
    if (MODE == 4u) {
      o = wid.x * (R / 2u) + (i % (R / 2u));
    } else {
      o = outIndex(wid.x, i);
    }
    var y = red[tid * WG];
    if (b < nb && o < G.N) {
      if (MODE == 4u && i >= R / 2u) {
        if (G.bias2Off >= 0) {
          y += params[u32(G.bias2Off) + o];
        }
        y += loraDelta(G.t2Off, G.b2Off, G.r2, G.scale2, b0 + b, o);
      } else {
        if (G.biasOff >= 0) {
          y += params[u32(G.biasOff) + o];
        }
        y += loraDelta(G.tOff, G.bOff, G.r, G.scale, b0 + b, o);
      }
    }
    res[tid] = y;
  }
  workgroupBarrier();
  if (tid >= RM) {
    return;
  }
  let i = tid / MAXB;
  let b = tid % MAXB;
  if (b >= nb) {
    return;
  }
  let row = b0 + b;
  var y = res[tid];

  if (MODE == 4u) {
    if (i >= R / 2u) {
      return;
    }
    let o = wid.x * (R / 2u) + i;
    if (o >= G.N) {
      return;
    }
    let g = y;
    let u = res[(i + R / 2u) * MAXB + b];
    work[G.outOff + row * G.outStride + o] = gateAct(g) * u;
    return;
  }

  let o = outIndex(wid.x, i);
  if (o >= G.N) {
    return;
  }
  if (MODE == 1u || MODE == 2u) {
    // rope(x)[j] = x[j] cos - x[j + D/2] sin;  rope(x)[j + D/2] = x[j + D/2] cos + x[j] sin
    let hd = G.headDim / 2u;
    let d = o % G.headDim;
    let jf = d % hd;
    let pos = rowPos(row);
    let cs = auxAt(G.cosOff + pos * hd + jf);
    let sn = auxAt(G.sinOff + pos * hd + jf);
    let partner = res[(i ^ 2u) * MAXB + b];
    if (d < hd) {
      y = y * cs - partner * sn;
    } else {
      y = y * cs + partner * sn;
    }
  }
  if (MODE == 2u || MODE == 3u) {
    // outOff: the block's first output (a weight in row blocks of whole heads), else 0
    let h = (G.outOff + o) / G.headDim;
    let d = o % G.headDim;
    cacheStore(cacheBase(row, h) + d, y);
    return;
  }
  if (MODE == 5u) {
    headStore(G.outOff + row * G.outStride + o, y, y / tok.statT);
    return;
  }
  let at = G.outOff + row * G.outStride + o;
  if (G.resid != 0u) {
    work[at] = work[at] + y;
  } else {
    work[at] = y;
  }
}
