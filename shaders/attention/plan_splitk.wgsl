// Split-K (flash-decoding) decode attention, pass 1: one workgroup per (query head, row, segment
// of SEG cache slots), so a long cache spreads over heads x rows x segments workgroups instead of
// one workgroup walking it per (head, row). Each segment of the filled slots [0, tok.kvLen)
// writes its max score m, its sum of exp(s - m) l and its unnormalised weighted V
// sum_j exp(s_j - m) v_j to the partials buffer; attention/plan_combine.wgsl merges the segments.
// A segment at or past tok.kvLen does nothing (the combine reads only the filled ones), so one
// plan serves every token. GQA, invalid (left-pad) slots and windows as in attention/plan.wgsl; a segment
// with no valid slot writes m = MASKED, l = 0 and a zero sum, which the combine weighs as nothing.
// Decode steps only (one query per row).
// Host-prepended: WG (>= D, a power of two), SEG, MAXD, the Att and Tok structs and the bindings
// (A, tok, work, aux, kc, vc, part). Partials: [row, head, segment] records of D + 2 floats
// (m, l, then the D sums), ceil(cap / SEG) segments per (row, head).

var<workgroup> sc : array<f32, SEG>;
var<workgroup> red : array<f32, WG>;
var<workgroup> qs : array<f32, MAXD>;

const MASKED : f32 = -3.0e38;

@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(workgroup_id) wid : vec3<u32>, @builtin(local_invocation_index) tid : u32) {
  let h = wid.x;
  let b = wid.y;
  let s0 = wid.z * SEG;
  if (s0 >= tok.kvLen) {
    return;
  }
  let n = min(SEG, tok.kvLen - s0);
  let kvh = h / (A.nH / A.nKV);
  let qBase = A.qOff + (b * A.nH + h) * A.D;
  let kvBase = (b * A.nKV + kvh) * A.cap * A.D;
  for (var d = tid; d < A.D; d += WG) {
    qs[d] = work[qBase + d];
  }
  workgroupBarrier();

  var lmax = MASKED;
  for (var j = tid; j < n; j += WG) {
    let slot = s0 + j;
    var s = MASKED;
    if (aux[A.validOff + b * A.cap + slot] != 0.0 && (A.win == 0u || slot + A.win >= tok.kvLen)) {
      var dotqk = 0.0;
      for (var d = 0u; d < A.D; d++) {
        dotqk += qs[d] * kc[kvBase + slot * A.D + d];
      }
      s = dotqk * A.scale;
    }
    sc[j] = s;
    lmax = max(lmax, s);
  }
  red[tid] = lmax;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s / 2u) {
    if (tid < s) {
      red[tid] = max(red[tid], red[tid + s]);
    }
    workgroupBarrier();
  }
  let m = red[0];
  if (tid < A.D) {
    var l = 0.0;
    var acc = 0.0;
    for (var j = 0u; j < n; j++) {
      let s = sc[j];
      if (s > MASKED) {
        let p = exp(s - m);
        l += p;
        acc += p * vc[kvBase + (s0 + j) * A.D + tid];
      }
    }
    let segs = (A.cap + SEG - 1u) / SEG;
    let pb = ((b * A.nH + h) * segs + wid.z) * (A.D + 2u);
    part[pb + 2u + tid] = acc;
    if (tid == 0u) {
      part[pb] = m;
      part[pb + 1u] = l;
    }
  }
}
