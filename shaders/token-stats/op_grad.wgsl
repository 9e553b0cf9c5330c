// Gradient of token statistics with respect to the logits, one thread per logit:
//   d logp / d x_j = [j == id] - p_j
//   d H    / d x_j = -p_j (log p_j + H)
// so grad_j = dLogp * ([j == id] - p_j) - dH * p_j * (log p_j + H).
// log-sum-exp is recovered from the forward output as x[id] - logp, so nothing else is saved.
// Inputs (tfjs header): logits [rows, vocab], ids [rows], stats [rows, 2] = (logp, H), dy [rows, 2].

const MASKED : f32 = -1.0e30;

fn main(index : i32) {
  if (index >= uniforms.size) {
    return;
  }
  let vocab = uniforms.logitsShape[1];
  let row = index / vocab;
  let col = index - row * vocab;
  let x = logits[index];
  if (x <= MASKED) {
    result[index] = 0.0;
    return;
  }
  let chosen = ids[row];
  let logp = stats[row * 2];
  let h = stats[row * 2 + 1];
  let lse = logits[row * vocab + chosen] - logp;
  let lp = x - lse;
  let p = exp(lp);
  var onehot = 0.0;
  if (col == chosen) {
    onehot = 1.0;
  }
  result[index] = dy[row * 2] * (onehot - p) - dy[row * 2 + 1] * p * (lp + h);
}
