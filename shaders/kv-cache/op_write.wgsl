// KV-cache write: result = cache with slots [start, start + L) of every (batch, head) replaced by
// the new keys (or values) [B, H, L, D]. One pass instead of stock pad-to-capacity + add.
// Bindings from tfjs's header: cache [B, H, C, D], fresh [B, H, L, D], uniforms start, size.

fn main(index : i32) {
  if (index >= uniforms.size) {
    return;
  }
  let D = uniforms.cacheShape[3];
  let C = uniforms.cacheShape[2];
  let L = uniforms.freshShape[2];
  let d = index % D;
  let slot = (index / D) % C;
  let bh = index / (D * C);
  let j = slot - uniforms.start;
  if (j >= 0 && j < L) {
    result[index] = fresh[(bh * L + j) * D + d];
  } else {
    result[index] = cache[index];
  }
}
