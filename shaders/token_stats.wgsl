// Fused token statistics, one workgroup per row of logits [rows, vocab]:
//   result[row * OUT + 0] = log softmax(logits[row])[ids[row]]     (log-prob of the chosen token)
//   result[row * OUT + 1] = -sum_v p_v log p_v                      (entropy of the full distribution)
//   result[row * OUT + 2] = log softmax(refLogits[row])[ids[row]]  (OUT = 3: the reference policy's
//                           log-prob for KL, from token_stats_ref.wgsl's second reduction)
// One pass over the row with an online (max, sum-exp, sum x*exp) triple per thread, merged by a
// tree in workgroup memory: no [rows, vocab] probability tensor is ever written.
// Prepended by the host: `const WG : i32 = <workgroup size>;` (a power of two), `const OUT : i32`
// (2 or 3) and `fn refLogp(row, tid, vocab) -> f32` (token_stats_ref.wgsl when OUT = 3, a stub
// returning 0 otherwise, so this file never names a binding the variant does not have).
// Bindings come from tfjs's generated header: result, logits, ids[, refLogits], uniforms.logitsShape.

var<workgroup> wgMax : array<f32, WG>;
var<workgroup> wgSum : array<f32, WG>;
var<workgroup> wgDot : array<f32, WG>;

// Logits at or below this are treated as masked (-inf): they add nothing, and never NaN.
const MASKED : f32 = -1.0e30;

// One step of the (max, sum-exp) tree: merges slot tid + stride into tid and returns the two
// rescale factors, so a caller can carry another sum along (main's sum of x * exp).
fn mergeMaxSum(tid : i32, stride : i32) -> vec2<f32> {
  let m1 = wgMax[tid];
  let m2 = wgMax[tid + stride];
  let mm = max(m1, m2);
  let a = exp(m1 - mm);
  let b = exp(m2 - mm);
  wgMax[tid] = mm;
  wgSum[tid] = wgSum[tid] * a + wgSum[tid + stride] * b;
  return vec2<f32>(a, b);
}

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
  wgMax[tid] = m;
  wgSum[tid] = s;
  wgDot[tid] = t;
  workgroupBarrier();

  for (var stride = WG / 2; stride > 0; stride = stride / 2) {
    if (tid < stride) {
      let ab = mergeMaxSum(tid, stride);
      wgDot[tid] = wgDot[tid] * ab.x + wgDot[tid + stride] * ab.y;
    }
    workgroupBarrier();
  }

  // Every thread reads the row's totals before refLogp reuses the workgroup arrays.
  let lse = wgMax[0] + log(wgSum[0]);
  // H = lse - E_p[x]; E_p[x] = t / s with both sums taken relative to the same max.
  let entropy = lse - wgDot[0] / wgSum[0];
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
