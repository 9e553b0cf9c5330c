// Fused token statistics, one workgroup per row of logits [rows, vocab]:
//   result[row * OUT + 0] = log softmax(logits[row])[ids[row]]     (log-prob of the chosen token)
//   result[row * OUT + 1] = -sum_v p_v log p_v                      (entropy of the full distribution)
//   result[row * OUT + 2] = log softmax(refLogits[row])[ids[row]]  (OUT = 3: the reference policy's
//                           log-prob for KL, from token-stats/ref.wgsl's second reduction)
// One pass over the row with an online (max, sum-exp, sum x*exp) triple per thread, merged by
// reduceRow (row-reduce/tree.wgsl, or row-reduce/subgroup.wgsl where the adapter has subgroups):
// no [rows, vocab] probability tensor is ever written.
// Prepended by the host: `const WG : i32 = <workgroup size>;` (a power of two), `const OUT : i32`
// (2 or 3), reduceRow, and `fn refLogp(row, tid, vocab) -> f32` (token-stats/ref.wgsl when
// OUT = 3, a stub returning 0 otherwise, so this file never names a binding the variant does not
// have).
// Bindings come from tfjs's generated header: result, logits, ids[, refLogits], uniforms.logitsShape.

// Logits at or below this are treated as masked (-inf): they add nothing, and never NaN.
const MASKED : f32 = -1.0e30;

fn main(index : i32) {
  let row = index / WG;
  let tid = index % WG;
  let vocab = uniforms.logitsShape[1];
  let base = row * vocab;

  var m = -3.4e38;  // running max
  var s = 0.0;      // sum of exp(x - m)
  var t = 0.0;      // sum of x * exp(x - m)
  for (var col = tid; col < vocab; col += WG) {
    let x = logits[base + col];
    if (x > MASKED) {
      if (x > m) {
        let scale = exp(m - x);
        s = s * scale + 1.0;
        t = t * scale + x;
        m = x;
      } else {
        let e = exp(x - m);
        s += e;
        t += x * e;
      }
    }
  }
  let total = reduceRow(vec3<f32>(m, s, t), tid);
  let lse = total.x + log(total.y);
  // H = lse - E_p[x]; E_p[x] = t / s with both sums taken relative to the same max.
  let entropy = lse - total.z / total.y;
  let refLp = refLogp(row, tid, vocab);

  if (tid == 0) {
    let chosen = ids[row];
    var logp = uniforms.NAN;  // an id outside the row is a caller bug: make it loud
    if (chosen >= 0 && chosen < vocab) {
      logp = logits[base + chosen] - lse;
    }
    result[row * OUT] = logp;
    result[row * OUT + 1] = entropy;
    if (OUT == 3) {
      result[row * OUT + 2] = refLp;
    }
  }
}
