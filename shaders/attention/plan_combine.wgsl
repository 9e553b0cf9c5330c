// Split-K decode attention, pass 2: one workgroup per (query head, row) merges the partials of the
// filled segments (ceil(tok.kvLen / SEG) of them) of attention/plan_splitk.wgsl with the
// log-sum-exp rescale: with M the largest segment max, out = sum_s e^(m_s - M) acc_s /
// sum_s e^(m_s - M) l_s. A segment with no valid slot (m = MASKED, l = 0) weighs nothing; a query
// with no valid slot at all writes 0, as attention/plan.wgsl does. Thread d < D writes component d.
// Host-prepended: WG (>= D), SEG, the Att and Tok structs and the bindings (A, tok, part, work).

const MASKED : f32 = -3.0e38;

@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(workgroup_id) wid : vec3<u32>, @builtin(local_invocation_index) tid : u32) {
  if (tid >= A.D) {
    return;
  }
  let h = wid.x;
  let b = wid.y;
  let rec = A.D + 2u;
  let segs = (A.cap + SEG - 1u) / SEG;
  let used = (tok.kvLen + SEG - 1u) / SEG;
  let pb = (b * A.nH + h) * segs * rec;
  var mMax = MASKED;
  for (var s = 0u; s < used; s++) {
    mMax = max(mMax, part[pb + s * rec]);
  }
  var l = 0.0;
  var acc = 0.0;
  for (var s = 0u; s < used; s++) {
    let at = pb + s * rec;
    let w = exp(part[at] - mMax);
    l += w * part[at + 1u];
    acc += w * part[at + 2u + tid];
  }
  work[A.aOff + (b * A.nH + h) * A.D + tid] = select(0.0, acc / l, l > 0.0);
}
