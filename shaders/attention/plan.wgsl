// The planned path's decode attention: one workgroup per (query head, row) over the row's filled
// cache slots [0, tok.kvLen), in chunks of SCH slots with an online softmax across chunks, so any
// cache length runs in fixed workgroup memory. GQA: query head h reads kv head h / (nH / nKV).
// Scores of invalid slots (left padding) are dropped, as the tfjs path's -1e9 mask drops them, and
// with a window (A.win > 0, Gemma 3's sliding layers) so are slots below query slot - win + 1.
// Thread d < D accumulates output component d. A prefill chunk (A.seq > 0) has a query row per
// (batch row, prompt column): row = b * seq + j sits at slot tok.slot + j and sees slots up to
// its own. A query with no valid slot (a left pad's) writes 0: nothing reads it.
// Host-prepended: WG (>= D, a power of two), SCH, MAXD, the Att and Tok structs and the bindings
// (A, tok, work, aux, kc, vc).

var<workgroup> sc : array<f32, SCH>;
var<workgroup> red : array<f32, WG>;
var<workgroup> qs : array<f32, MAXD>;

const MASKED : f32 = -3.0e38;

@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(workgroup_id) wid : vec3<u32>, @builtin(local_invocation_index) tid : u32) {
  let h = wid.x;
  var b = wid.y;
  var len = tok.kvLen;
  if (A.seq > 0u) {
    b = wid.y / A.seq;
    len = tok.slot + wid.y % A.seq + 1u;
  }
  let kvh = h / (A.nH / A.nKV);
  let qBase = A.qOff + (wid.y * A.nH + h) * A.D;
  let kvBase = (b * A.nKV + kvh) * A.cap * A.D;
  for (var d = tid; d < A.D; d += WG) {
    qs[d] = work[qBase + d];
  }
  workgroupBarrier();

  var m = MASKED;
  var l = 0.0;
  var acc = 0.0;
  for (var c0 = 0u; c0 < len; c0 += SCH) {
    let n = min(SCH, len - c0);
    var lmax = MASKED;
    for (var j = tid; j < n; j += WG) {
      let slot = c0 + j;
      var s = MASKED;
      if (aux[A.validOff + b * A.cap + slot] != 0.0 && (A.win == 0u || slot + A.win >= len)) {
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
    let mNew = max(m, red[0]);
    if (tid < A.D) {
      let alpha = exp(m - mNew);
      acc *= alpha;
      l *= alpha;
      for (var j = 0u; j < n; j++) {
        let s = sc[j];
        if (s > MASKED) {
          let p = exp(s - mNew);
          l += p;
          acc += p * vc[kvBase + (c0 + j) * A.D + tid];
        }
      }
    }
    m = mNew;
    workgroupBarrier();  // sc and red are rewritten by the next chunk
  }
  if (tid < A.D) {
    work[A.aOff + (wid.y * A.nH + h) * A.D + tid] = select(0.0, acc / l, l > 0.0);
  }
}
