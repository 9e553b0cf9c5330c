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
