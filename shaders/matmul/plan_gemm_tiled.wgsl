// The planned projection for many rows of x on GPUs (a prefill chunk, a large decode batch):
// matmul/gemm_tile_loop.wgsl's 32 x 32 tiles, C = x W^T with A = the x rows in work and B(k, n) =
// W's row for tile column n, dequantised once per workgroup by the host's scalar `wat(o, k)`
// (`wat2` for W2), so each weight is read once per 32 rows of x where the split GEMV
// (plan_gemv.wgsl) reads it once per 8. The epilogue is the one-thread layouts' `finish`
// (plan_gemv_unit.wgsl) per unit and row: bias, LoRA, and the write by MODE.
// Tile columns: PLAIN, CACHE_V, HEAD: column n is unit n. The pair modes (ROPE_Q, ROPE_K: a RoPE
// pair of one head; GATEUP: gate and up of one output) need both rows of a unit in one thread, so
// a thread's 4 columns n0 .. n0 + 3 (n0 a multiple of 4) are units n0 / 2 and n0 / 2 + 1, first
// halves then second halves: column n is unit (n / 4) 2 + n % 2, half (n % 4) / 2.
// RMSNorm fused: B carries the norm weight (B(k, n) = nw[k] W[o, k]), each thread sums the squares
// of its 4 rows as it multiplies them (aSeen) and scales its sums by the inverse RMS at the end.
// Host-prepended: gemm_tile_loop's constants (B_ALONG_K true: consecutive threads read consecutive
// k of a weight row), MODE, NORM, wat (wat2), rowPos / cacheBase, loraDelta, the Gemv and Tok
// structs, the bindings and accessors, matmul/plan_gemv_unit.wgsl and gemm_tile_loop.wgsl.

const PAIRS : bool = MODE == 1u || MODE == 2u || MODE == 4u;
var<private> ssq : vec4<f32>;

fn units() -> u32 {
  if (MODE == 1u || MODE == 2u) {
    return G.N / 2u;
  }
  return G.N;
}

fn colUnit(n : u32) -> u32 {
  if (PAIRS) {
    return (n / 4u) * 2u + n % 2u;
  }
  return n;
}

fn aAt(base : u32, m : u32, k : u32) -> f32 {
  return wget(G.xOff + m * G.xStride + k);
}

fn bAt(base : u32, k : u32, n : u32) -> f32 {
  let u = colUnit(n);
  if (u >= units()) {
    return 0.0;
  }
  let second = PAIRS && (n % 4u) >= 2u;
  let outs = unitOutputs(u);
  var w = 0.0;
  if (MODE == 4u && second) {
    w = wat2(outs.x, k);
  } else if (second) {
    w = wat(outs.y, k);
  } else {
    w = wat(outs.x, k);
  }
  if (NORM) {
    w *= params[u32(G.normOff) + k];
  }
  return w;
}

fn aSeen(av : vec4<f32>) {
  if (NORM) {
    ssq += av * av;
  }
}

@compute @workgroup_size(WG, WG, 1)
fn main(
  @builtin(workgroup_id) wid : vec3<u32>,
  @builtin(local_invocation_id) lid : vec3<u32>,
  @builtin(local_invocation_index) li : u32,
) {
  var cols = units();
  if (PAIRS) {
    cols = (units() + 1u) / 2u * 4u;
  }
  let tm = wid.y * TILE;
  let tn = wid.x * TILE;
  var acc = tileSums(0u, 0u, tm, tn, G.rows, cols, G.K, lid, li);  // a var: indexed by loop counters
  var inv = vec4<f32>(1.0);
  if (NORM) {
    inv = inverseSqrt(ssq / f32(G.K) + G.eps);
  }
  let m0 = tm + lid.y * T;
  let n0 = tn + lid.x * T;
  for (var i = 0u; i < T; i++) {
    let row = m0 + i;
    if (row >= G.rows) {
      break;
    }
    if (PAIRS) {
      for (var j = 0u; j < 2u; j++) {
        let u = colUnit(n0 + j);
        if (u < units()) {
          finish(u, unitOutputs(u), row, acc[i][j] * inv[i], acc[i][j + 2u] * inv[i]);
        }
      }
    } else {
      for (var j = 0u; j < T; j++) {
        let u = n0 + j;
        if (u < units()) {
          finish(u, unitOutputs(u), row, acc[i][j] * inv[i], 0.0);
        }
      }
    }
  }
}
