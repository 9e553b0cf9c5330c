// Second reduction of token-stats/op.wgsl's OUT = 3 variant: the log-prob of the chosen token under
// refLogits [rows, vocab] (the reference policy), for KL without a [rows, vocab] log-softmax.
// Only the log-sum-exp is needed here, so one online (max, sum-exp) pair per thread, merged by the
// same reduceRow as the first reduction (its third sum unused).
// Called by every thread of the workgroup (it contains barriers).

fn refLogp(row : i32, tid : i32, vocab : i32) -> f32 {
  let base = row * vocab;
  var m = -3.4e38;
  var s = 0.0;
  for (var col = tid; col < vocab; col += WG) {
    let x = refLogits[base + col];
    if (x > MASKED) {
      if (x > m) {
        s = s * exp(m - x) + 1.0;
        m = x;
      } else {
        s += exp(x - m);
      }
    }
  }
  let total = reduceRow(vec3<f32>(m, s, 0.0), tid);
  let chosen = ids[row];
  if (chosen < 0 || chosen >= vocab) {
    return uniforms.NAN;
  }
  return refLogits[base + chosen] - (total.x + log(total.y));
}
