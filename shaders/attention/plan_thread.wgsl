// attention/plan.wgsl's variant for software adapters: one thread per (query head, row), no
// workgroup memory and no barrier (a barrier is a thread switch on a CPU driver), the online
// softmax over the valid slots [0, len) kept in registers. The query and the output accumulator
// are D/4 named vec4 registers (q0.., o0..), because a CPU driver keeps only constant-indexed
// values in registers: the host's prelude declares them with the four helpers this body calls
// (qLoad, qDotK, accUpdate, accStore), unrolled for the head size. Keys and values are read as vec4.
// Prefill chunks (A.seq > 0) and windows (A.win) as in attention/plan.wgsl; a query with no valid slot writes 0.
// Host-prepended: WG, the Att and Tok structs, the bindings (A, tok, work, aux, kc, vc as
// array<vec4<f32>>) and the unrolled registers and helpers above.

const MASKED : f32 = -3.0e38;

@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(workgroup_id) wid : vec3<u32>, @builtin(local_invocation_index) tid : u32) {
  let t = wid.x * WG + tid;
  if (t >= A.nH * A.rows) {
    return;
  }
  let h = t % A.nH;
  let qrow = t / A.nH;
  var b = qrow;
  var len = tok.kvLen;
  if (A.seq > 0u) {
    b = qrow / A.seq;
    len = tok.slot + qrow % A.seq + 1u;
  }
  let kvh = h / (A.nH / A.nKV);
  let qb = A.qOff + (qrow * A.nH + h) * A.D;
  let kv4 = (b * A.nKV + kvh) * A.cap * (A.D / 4u);
  qLoad(qb);
  var m = MASKED;
  var l = 0.0;
  for (var slot = 0u; slot < len; slot++) {
    if (aux[A.validOff + b * A.cap + slot] == 0.0 || (A.win != 0u && slot + A.win < len)) {
      continue;
    }
    let at = kv4 + slot * (A.D / 4u);
    let s = qDotK(at) * A.scale;
    let mNew = max(m, s);
    let alpha = exp(m - mNew);
    let p = exp(s - mNew);
    l = l * alpha + p;
    accUpdate(at, alpha, p);
    m = mNew;
  }
  var inv = 0.0;
  if (l > 0.0) {
    inv = 1.0 / l;
  }
  let ob = A.aOff + (qrow * A.nH + h) * A.D;
  accStore(ob, inv);
}
