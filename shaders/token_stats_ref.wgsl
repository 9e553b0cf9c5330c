// Second reduction of token_stats.wgsl's OUT = 3 variant: the log-prob of the chosen token under
// refLogits [rows, vocab] (the reference policy), for KL without a [rows, vocab] log-softmax.
// Only the log-sum-exp is needed here, so one online (max, sum-exp) pair per thread, merged by a
// tree (token_stats.wgsl's mergeMaxSum) in the same workgroup arrays after the first reduction's
// totals have been read.
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
  workgroupBarrier();  // every thread has read the first reduction's totals
  wgMax[tid] = m;
  wgSum[tid] = s;
  workgroupBarrier();
  for (var stride = WG / 2; stride > 0; stride = stride / 2) {
    if (tid < stride) {
      _ = mergeMaxSum(tid, stride);
    }
    workgroupBarrier();
  }
  let chosen = ids[row];
  if (chosen < 0 || chosen >= vocab) {
    return uniforms.NAN;
  }
  return refLogits[base + chosen] - (wgMax[0] + log(wgSum[0]));
}
