// What the one-thread-per-unit GEMV layouts (matmul/plan_gemv_thread.wgsl, matmul/plan_gemm_tile.wgsl) share:
// a unit's outputs and its epilogue. A unit is one output (PLAIN, CACHE_V, HEAD), a RoPE pair
// (j, j + D/2) of one head (ROPE_Q, ROPE_K), or one column of gate and up together (GATEUP).
// `finish` takes the unit's finished sums for one row of x (y for W's row outs.x, y2 for W's
// row outs.y or W2's row outs.x), adds bias and LoRA and writes by MODE. The work buffer is read
// and written through the host's wget / wput (scalar or vec4-typed binding).

fn unitOutputs(u : u32) -> vec2<u32> {
  if (MODE == 1u || MODE == 2u) {
    let hd = G.headDim / 2u;
    let o = (u / hd) * G.headDim + u % hd;
    return vec2<u32>(o, o + hd);
  }
  return vec2<u32>(u, u);
}

fn finish(u : u32, outs : vec2<u32>, row : u32, acc : f32, acc2 : f32) {
  var y = acc;
  var y2 = acc2;
  if (G.biasOff >= 0) {
    y += params[u32(G.biasOff) + outs.x];
  }
  y += loraDelta(G.tOff, G.bOff, G.r, G.scale, row, outs.x);
  if (MODE == 4u) {
    if (G.bias2Off >= 0) {
      y2 += params[u32(G.bias2Off) + outs.x];
    }
    y2 += loraDelta(G.t2Off, G.b2Off, G.r2, G.scale2, row, outs.x);
    wput(G.outOff + row * G.outStride + outs.x, gateAct(y) * y2);
    return;
  }
  if (MODE == 1u || MODE == 2u) {
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
      // outOff: the block's first output (a weight in row blocks of whole heads), else 0
      let base = cacheBase(row, (G.outOff + outs.x) / G.headDim);
      cacheStore(base + outs.x % G.headDim, r1);
      cacheStore(base + outs.y % G.headDim, r2);
    } else {
      wput(G.outOff + row * G.outStride + outs.x, r1);
      wput(G.outOff + row * G.outStride + outs.y, r2);
    }
    return;
  }
  if (MODE == 3u) {
    cacheStore(cacheBase(row, (G.outOff + outs.x) / G.headDim) + outs.x % G.headDim, y);
    return;
  }
  if (MODE == 5u) {
    headStore(G.outOff + row * G.outStride + outs.x, y, y / tok.statT);
    return;
  }
  let at = G.outOff + row * G.outStride + outs.x;
  if (G.resid != 0u) {
    wput(at, wget(at) + y);
  } else {
    wput(at, y);
  }
}
