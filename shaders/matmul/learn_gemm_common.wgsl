// The planned learning step's one GEMM: C(m, n) = alpha sum_k A(m, k) B(k, n) [+ C(m, n)]
// [+ bias(n)] [+ R(m, n)], batched over z, every product of the step by strides alone (see
// Operand in learnKernels.ts). This is its uniform record; each variant (learn_gemm*.wgsl: f32,
// or a quantised weight decoded per element or per packed word) follows it, after the host's
// prelude: T (outputs per thread along m and n), WG (threads per workgroup along each), and for a
// quantised weight GS (its group size). Learn plan (src/engine/plan/learnKernels.ts); bindings declared there.
struct Gemm {
  M : u32, N : u32, K : u32, Z1 : u32,
  aOff : u32, aS0 : u32, aS1 : u32, aSb : u32, aSh : u32, aDiv : u32,
  bOff : u32, bS0 : u32, bS1 : u32, bSb : u32, bSh : u32, bDiv : u32,
  cOff : u32, cS0 : u32, cS1 : u32, cSb : u32, cSh : u32, cDiv : u32,
  alpha : f32, acc : u32, biasOff : i32, res : u32, wK : u32, wT : u32,
}
