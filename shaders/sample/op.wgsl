// Token sampling on the GPU, one workgroup per row of logits [rows, vocab] -> result[row] = id.
// temperature (0 = greedy) -> top-k -> top-p -> one Philox4x32-10 uniform per (stream, step),
// where streams[row] names the row's random stream (so a sequence draws the same numbers alone
// or in any batch).
// Thresholds are exact: the k-th largest order-key by a 4-pass radix select (top-k), and the
// largest order-key t with mass(key >= t) >= topP * mass(top-k set) built bit by bit (top-p):
// over the compacted top-k set when it has at most 256 members (plain top-p speculates on the
// top 256), else one pass over the row per bit. Only the ids leave the GPU. Mirrors src/engine/kernels/sample/sampleReference.ts.
// Prepended by the host: `const WG : i32 = <power of two>;`.
// Uniforms (host-declared): temperature f32, topK i32, topP f32, seedLo u32, seedHi u32, step u32.

var<workgroup> redF : array<f32, WG>;
var<workgroup> redU : array<u32, WG>;
var<workgroup> redI : array<i32, WG>;
var<workgroup> picked : i32;
var<workgroup> hist : array<atomic<u32>, 256>;
// The top-k set, compacted in vocabulary order (when it has at most 256 members).
var<workgroup> keptKey : array<u32, 256>;
var<workgroup> keptW : array<f32, 256>;
var<workgroup> keptIdx : array<i32, 256>;
var<workgroup> keptTotal : u32;

fn orderKey(x : f32) -> u32 {
  let b = bitcast<u32>(x);
  if ((b & 0x80000000u) != 0u) {
    return ~b;
  }
  return b | 0x80000000u;
}

// High and low words of a 32x32-bit product from 16-bit halves (WGSL has no mulhi).
fn mulhilo(a : u32, b : u32) -> vec2<u32> {
  let aLo = a & 0xffffu;
  let aHi = a >> 16u;
  let bLo = b & 0xffffu;
  let bHi = b >> 16u;
  let t = aHi * bLo + ((aLo * bLo) >> 16u);
  let w1 = (t & 0xffffu) + aLo * bHi;
  let hi = aHi * bHi + (t >> 16u) + (w1 >> 16u);
  return vec2<u32>(hi, a * b);
}

fn philox(counter : vec4<u32>, key : vec2<u32>) -> vec4<u32> {
  var c = counter;
  var k = key;
  for (var r = 0; r < 10; r++) {
    if (r > 0) {
      k = k + vec2<u32>(0x9e3779b9u, 0xbb67ae85u);
    }
    let p0 = mulhilo(0xd2511f53u, c.x);
    let p1 = mulhilo(0xcd9e8d57u, c.z);
    c = vec4<u32>(p1.x ^ c.y ^ k.x, p1.y, p0.x ^ c.w ^ k.y, p0.y);
  }
  return c;
}

fn sumU(tid : i32, v : u32) -> u32 {
  redU[tid] = v;
  workgroupBarrier();
  for (var s = WG / 2; s > 0; s = s / 2) {
    if (tid < s) {
      redU[tid] = redU[tid] + redU[tid + s];
    }
    workgroupBarrier();
  }
  let total = workgroupUniformLoad(&redU[0]);
  workgroupBarrier();
  return total;
}

fn sumF(tid : i32, v : f32) -> f32 {
  redF[tid] = v;
  workgroupBarrier();
  for (var s = WG / 2; s > 0; s = s / 2) {
    if (tid < s) {
      redF[tid] = redF[tid] + redF[tid + s];
    }
    workgroupBarrier();
  }
  let total = workgroupUniformLoad(&redF[0]);
  workgroupBarrier();
  return total;
}

fn main(index : i32) {
  let row = index / WG;
  let tid = index % WG;
  let vocab = uniforms.logitsShape[1];
  let base = row * vocab;

  // Row max and its first index (greedy answer, and the fallback pick).
  var bm = -3.4e38;
  var bi = vocab;
  for (var col = tid; col < vocab; col += WG) {
    let x = logits[base + col];
    if (x > bm) {
      bm = x;
      bi = col;
    }
  }
  redF[tid] = bm;
  redI[tid] = bi;
  workgroupBarrier();
  for (var s = WG / 2; s > 0; s = s / 2) {
    if (tid < s) {
      let om = redF[tid + s];
      let oi = redI[tid + s];
      if (om > redF[tid] || (om == redF[tid] && oi < redI[tid])) {
        redF[tid] = om;
        redI[tid] = oi;
      }
    }
    workgroupBarrier();
  }
  let m = workgroupUniformLoad(&redF[0]);
  let argmax = redI[0];
  workgroupBarrier();
  if (uniforms.temperature <= 0.0) {
    if (tid == 0) {
      result[row] = argmax;
    }
    return;
  }
  let invT = 1.0 / uniforms.temperature;

  // top-k: the k-th largest order-key by radix select, 8 bits a pass over a 256-bin histogram
  // (4 passes, exact counts, so the cut is the same on every run and on the CPU reference).
  // Plain top-p on a large row speculates that the nucleus lies inside the 256 most likely tokens
  // (true for peaked LM distributions): select them like a top-k of 256, and if they hold the
  // goal mass, finish from workgroup memory (the cut is then the same as over the whole row);
  // otherwise fall back to the full-row bisection below.
  let userK = uniforms.topK > 0 && uniforms.topK < vocab;
  let speculate = !userK && uniforms.topP < 1.0 && vocab > 256;
  var selectK = 0;
  if (userK) {
    selectK = uniforms.topK;
  } else if (speculate) {
    selectK = 256;
  }
  var tauK = 0u;
  if (selectK > 0) {
    var prefix = 0u;
    var mask = 0u;
    var remaining = u32(selectK);
    for (var round = 0; round < 4; round++) {
      let shift = u32(24 - 8 * round);
      for (var b = tid; b < 256; b += WG) {
        atomicStore(&hist[b], 0u);
      }
      workgroupBarrier();
      for (var col = tid; col < vocab; col += WG) {
        let key = orderKey(logits[base + col]);
        if ((key & mask) == prefix) {
          atomicAdd(&hist[(key >> shift) & 255u], 1u);
        }
      }
      workgroupBarrier();
      if (tid == 0) {
        // Walk digits from the top: `above` keys beat this digit; stop where the k-th one lands.
        var above = 0u;
        var digit = 0u;
        for (var b = 255; b >= 0; b--) {
          let c = atomicLoad(&hist[b]);
          if (above + c >= remaining) {
            digit = u32(b);
            break;
          }
          above += c;
        }
        redU[0] = prefix | (digit << shift);
        redU[1] = remaining - above;
      }
      prefix = workgroupUniformLoad(&redU[0]);
      remaining = redU[1];
      workgroupBarrier();
      mask = mask | (255u << shift);
    }
    tauK = prefix;
  }

  // With a small top-k set, compact it (in vocabulary order, so sums run in the reference's
  // order) and finish top-p and the draw from workgroup memory instead of 32 more row passes.
  if (selectK > 0 && selectK <= 256) {
    // Speculating, the top-p goal is a share of the whole row's mass, not of the kept set's.
    var zRow = 0.0;
    if (speculate) {
      var zt = 0.0;
      for (var col = tid; col < vocab; col += WG) {
        zt += exp((logits[base + col] - m) * invT);
      }
      zRow = sumF(tid, zt);
    }
    let chunk = (vocab + WG - 1) / WG;
    let start = tid * chunk;
    let end = min(start + chunk, vocab);
    var cnt = 0u;
    for (var col = start; col < end; col++) {
      if (orderKey(logits[base + col]) >= tauK) {
        cnt += 1u;
      }
    }
    redU[tid] = cnt;
    workgroupBarrier();
    if (tid == 0) {
      var acc = 0u;
      for (var t = 0; t < WG; t++) {
        let c = redU[t];
        redU[t] = acc;
        acc += c;
      }
      keptTotal = acc;
    }
    let total = workgroupUniformLoad(&keptTotal);
    var fits = total <= 256u;
    if (fits && speculate) {
      var zt = 0.0;
      for (var col = start; col < end; col++) {
        let x = logits[base + col];
        if (orderKey(x) >= tauK) {
          zt += exp((x - m) * invT);
        }
      }
      fits = sumF(tid, zt) >= uniforms.topP * zRow;
    }
    if (fits) {
      var off = redU[tid];
      for (var col = start; col < end; col++) {
        let x = logits[base + col];
        let key = orderKey(x);
        if (key >= tauK) {
          keptKey[off] = key;
          keptW[off] = exp((x - m) * invT);
          keptIdx[off] = col;
          off += 1u;
        }
      }
      workgroupBarrier();
      if (tid == 0) {
        let n = i32(total);
        var zk = 0.0;
        for (var i = 0; i < n; i++) {
          zk += keptW[i];
        }
        var cut = tauK;
        var goal = uniforms.topP * zk;
        if (speculate) {
          goal = uniforms.topP * zRow;
        }
        if (uniforms.topP < 1.0) {
          var tau = 0u;
          for (var bit = 31; bit >= 0; bit--) {
            let cand = max(tau | (1u << u32(bit)), tauK);
            var mass = 0.0;
            for (var i = 0; i < n; i++) {
              if (keptKey[i] >= cand) {
                mass += keptW[i];
              }
            }
            if (mass >= goal) {
              tau = tau | (1u << u32(bit));
            }
          }
          cut = max(tau, tauK);
        }
        var z = 0.0;
        for (var i = 0; i < n; i++) {
          if (keptKey[i] >= cut) {
            z += keptW[i];
          }
        }
        let bits = philox(vec4<u32>(u32(streams[row]), uniforms.step, 0u, 0u), vec2<u32>(uniforms.seedLo, uniforms.seedHi)).x;
        let u = f32(bits >> 8u) * (1.0 / 16777216.0) * z;
        var pick = argmax;
        var acc = 0.0;
        for (var i = 0; i < n; i++) {
          if (keptKey[i] >= cut) {
            acc += keptW[i];
            if (acc > u) {
              pick = keptIdx[i];
              break;
            }
          }
        }
        result[row] = pick;
      }
      return;
    }
    workgroupBarrier();
    if (speculate) {
      tauK = 0u; // the nucleus spills past the 256 selected: plain top-p over the whole row
    }
  }

  var thr = tauK;
  if (uniforms.topP < 1.0) {
    var zk = 0.0;
    for (var col = tid; col < vocab; col += WG) {
      let x = logits[base + col];
      if (orderKey(x) >= tauK) {
        zk += exp((x - m) * invT);
      }
    }
    let goal = uniforms.topP * sumF(tid, zk);
    var tau = 0u;
    for (var bit = 31; bit >= 0; bit--) {
      let cand = max(tau | (1u << u32(bit)), tauK);
      var mass = 0.0;
      for (var col = tid; col < vocab; col += WG) {
        let x = logits[base + col];
        if (orderKey(x) >= cand) {
          mass += exp((x - m) * invT);
        }
      }
      if (sumF(tid, mass) >= goal) {
        tau = tau | (1u << u32(bit));
      }
    }
    thr = max(tau, tauK);
  }

  // Inverse-CDF draw in vocabulary order: each thread owns a contiguous chunk; a scan of the
  // chunk sums tells which chunk holds u, and that thread walks its chunk.
  let chunk = (vocab + WG - 1) / WG;
  let start = tid * chunk;
  let end = min(start + chunk, vocab);
  var mine = 0.0;
  for (var col = start; col < end; col++) {
    let x = logits[base + col];
    if (orderKey(x) >= thr) {
      mine += exp((x - m) * invT);
    }
  }
  redF[tid] = mine;
  if (tid == 0) {
    picked = argmax;
  }
  workgroupBarrier();
  if (tid == 0) {
    var acc = 0.0;
    for (var t = 0; t < WG; t++) {
      let v = redF[t];
      redF[t] = acc;
      acc += v;
    }
    redU[0] = bitcast<u32>(acc);
  }
  workgroupBarrier();
  let total = bitcast<f32>(redU[0]);
  let bits = philox(vec4<u32>(u32(streams[row]), uniforms.step, 0u, 0u), vec2<u32>(uniforms.seedLo, uniforms.seedHi)).x;
  let u = f32(bits >> 8u) * (1.0 / 16777216.0) * total;
  let prefix = redF[tid];
  if (mine > 0.0 && u >= prefix && u < prefix + mine) {
    var acc = prefix;
    var last = start;
    for (var col = start; col < end; col++) {
      let x = logits[base + col];
      if (orderKey(x) >= thr) {
        acc += exp((x - m) * invT);
        last = col;
        if (acc > u) {
          break;
        }
      }
    }
    picked = last;
  }
  workgroupBarrier();
  if (tid == 0) {
    result[row] = picked;
  }
}
