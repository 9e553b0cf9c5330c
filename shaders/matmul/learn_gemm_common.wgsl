// The planned learning step's one GEMM: C(m, n) = alpha sum_k A(m, k) B(k, n) [+ C(m, n)]
// [+ bias(n)] [+ R(m, n)], batched over z, every product of the step by strides alone (see
// Operand in learnKernels.ts). This is its uniform record and its epilogue (storeTile); each
// variant (learn_gemm*.wgsl: f32, tiled, or a quantised weight decoded per element or per packed
// word) follows it, after the host's prelude: T (outputs per thread along m and n), WG (threads per
// workgroup along each), and for a quantised weight GS (its group size). Learn plan
// (src/engine/plan/learnKernels.ts); bindings declared there.
struct Gemm {
  M : u32, N : u32, K : u32, Z1 : u32,
  aOff : u32, aS0 : u32, aS1 : u32, aSb : u32, aSh : u32, aDiv : u32,
  bOff : u32, bS0 : u32, bS1 : u32, bSb : u32, bSh : u32, bDiv : u32,
  cOff : u32, cS0 : u32, cS1 : u32, cSb : u32, cSh : u32, cDiv : u32,
  alpha : f32, acc : u32, biasOff : i32, res : u32, wK : u32, wT : u32,
}

// Where a thread of the direct variants starts: batch z's operand bases, its T x T outputs' first
// row m0 and column n0, and the rows ms and columns ns it reads, clamped at the edge (rows and
// columns past it read the last one: in bounds, no branch in the k loop; their sums are never
// stored). `live` is false for a thread wholly past M or N.
struct Thread {
  aBase : u32, bBase : u32, cBase : u32, m0 : u32, n0 : u32,
  ms : vec4<u32>, ns : vec4<u32>, live : bool,
}

fn threadOf(gid : vec3<u32>) -> Thread {
  let zb = gid.z / U.Z1;
  let zh = gid.z % U.Z1;
  let m0 = gid.y * T;
  let n0 = gid.x * T;
  return Thread(
    U.aOff + zb * U.aSb + (zh / U.aDiv) * U.aSh,
    U.bOff + zb * U.bSb + (zh / U.bDiv) * U.bSh,
    U.cOff + zb * U.cSb + (zh / U.cDiv) * U.cSh,
    m0,
    n0,
    min(vec4<u32>(m0) + vec4<u32>(0u, 1u, 2u, 3u), vec4<u32>(U.M - 1u)),
    min(vec4<u32>(n0) + vec4<u32>(0u, 1u, 2u, 3u), vec4<u32>(U.N - 1u)),
    m0 < U.M && n0 < U.N,
  );
}

// The epilogue every variant shares: the thread's T x T outputs from (m0, n0), clipped at M and N,
// written as C = alpha acc [+ C] [+ bias(n)] [+ R] (acc[i][j]: row m0 + i, column n0 + j).
fn storeTile(tile : array<vec4<f32>, 4>, m0 : u32, n0 : u32, cBase : u32) {
  var acc = tile;  // a var: indexed by loop counters below
  for (var i = 0u; i < T; i++) {
    let m = m0 + i;
    if (m >= U.M) {
      break;
    }
    for (var j = 0u; j < T; j++) {
      let n = n0 + j;
      if (n >= U.N) {
        break;
      }
      let at = cBase + m * U.cS0 + n * U.cS1;
      var y = U.alpha * acc[i][j];
      if (U.acc == 1u) {
        y += Cm[at];
      }
      if (U.biasOff >= 0) {
        y += bias[u32(U.biasOff) + n];
      }
      if (U.res == 1u) {
        y += Rm[at];
      }
      Cm[at] = y;
    }
  }
}
