// The planned path's per-head q/k norm and RoPE (Qwen3, Gemma 3: q_norm / k_norm over head_dim
// before apply_rotary_pos_emb): one workgroup per (head, row) of a projection already in work
// (bias and LoRA included), thread j < D/2 holding the RoPE pair (j, j + D/2):
//   y = RMSNorm(x_head) * w;  rope(y)[j] = y[j] cos - y[j + D/2] sin, rope(y)[j + D/2] = y[j + D/2] cos + y[j] sin
// q is written back in place; k (CACHE) goes into the key cache at the token's slot. Positions,
// slots and the cache layout are the GEMV epilogue's (matmul/plan_gemv_rows.wgsl), read from G.
// Host-prepended: WG (a power of two >= D/2), CACHE, the HeadNorm and Tok structs, the bindings
// (G, tok, work, params, aux[, cache]), auxAt and cacheStore.

var<workgroup> red : array<f32, WG>;

@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(workgroup_id) wid : vec3<u32>, @builtin(local_invocation_index) tid : u32) {
  let h = wid.x;
  let row = wid.y;
  let hd = G.headDim / 2u;
  let base = G.inOff + row * G.inStride + h * G.headDim;
  var x1 = 0.0;
  var x2 = 0.0;
  if (tid < hd) {
    x1 = work[base + tid];
    x2 = work[base + tid + hd];
  }
  red[tid] = x1 * x1 + x2 * x2;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s / 2u) {
    if (tid < s) {
      red[tid] += red[tid + s];
    }
    workgroupBarrier();
  }
  if (tid >= hd) {
    return;
  }
  let inv = inverseSqrt(red[0] / f32(G.headDim) + G.eps);
  let a = x1 * inv * params[G.normOff + tid];
  let b = x2 * inv * params[G.normOff + tid + hd];
  let pos = rowPos(row);
  let cs = auxAt(G.cosOff + pos * hd + tid);
  let sn = auxAt(G.sinOff + pos * hd + tid);
  let y1 = a * cs - b * sn;
  let y2 = b * cs + a * sn;
  if (CACHE) {
    let at = cacheBase(row, h);
    cacheStore(at + tid, y1);
    cacheStore(at + tid + hd, y2);
  } else {
    work[base + tid] = y1;
    work[base + tid + hd] = y2;
  }
}
