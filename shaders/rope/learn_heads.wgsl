// Token-major [B L, n D] <-> head-major [B, n, L, D] with RoPE (sgn +1), its transpose (sgn -1) or
// none (sgn 0). toHeads: read token-major, write head-major; else the other way. One thread per
// (token, head, j < D / 2) rotates the pair (j, j + D / 2). Learn plan (src/engine/plan/learnKernels.ts); bindings declared there.
// The host prepends WG, the threads per workgroup.
struct Heads { tokens : u32, L : u32, n : u32, D : u32, toHeads : u32, sgn : f32, p0 : u32, p1 : u32 }
fn run(idx : u32) {
  let half = U.D / 2u;
  if (idx >= U.tokens * U.n * half) {
    return;
  }
  let j = idx % half;
  let h = (idx / half) % U.n;
  let t = idx / (half * U.n);
  let b = t / U.L;
  let i = t % U.L;
  let tok = t * U.n * U.D + h * U.D + j;
  let hd = ((b * U.n + h) * U.L + i) * U.D + j;
  var src = hd;
  var dst = tok;
  if (U.toHeads == 1u) {
    src = tok;
    dst = hd;
  }
  var c = 1.0;
  var s = 0.0;
  if (U.sgn != 0.0) {
    c = Cos[t * half + j];
    s = U.sgn * Sin[t * half + j];
  }
  let x1 = Src[src];
  let x2 = Src[src + half];
  // y1 = x1 cos - x2 sin, y2 = x2 cos + x1 sin (rotate_half); sin negated for the transpose
  Dst[dst] = x1 * c - x2 * s;
  Dst[dst + half] = x2 * c + x1 * s;
}
@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(global_invocation_id) gid : vec3<u32>, @builtin(num_workgroups) nwg : vec3<u32>) {
  let idx = gid.x + gid.y * nwg.x * WG;
  run(idx);
}
