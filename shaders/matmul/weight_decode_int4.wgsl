// The int4 weight format's decode: eight nibbles per i32 word holding q + 8, the first in the low
// nibble, one float32 scale per group of GS inputs along a row (W_SCALED; the group size is the
// format's int4-gN). The one place the format's bits are read: every kernel that reads int4
// weights includes it (weightDecodeWgsl, src/engine/kernels/matmul/weightDecode.ts); the kernel
// does the addressing, rows of whole words of WPW weights.
const WPW : u32 = 8u;

// Weight j (0 .. WPW - 1) of a packed word, unscaled.
fn weightAt(word : i32, j : u32) -> f32 {
  return f32(((word >> (4u * j)) & 15) - 8);
}

// Weight j[l] of words[l] in each lane l.
fn weightsAt(words : vec4<i32>, j : vec4<u32>) -> vec4<f32> {
  return vec4<f32>(((words >> (4u * j)) & vec4<i32>(15)) - vec4<i32>(8));
}

// Four consecutive weights from weight j0 (0 or 4) of word lo (the run starts at a multiple of 4
// weights, so it lies in lo; hi is not read).
fn weightRun4(lo : i32, hi : i32, j0 : u32) -> vec4<f32> {
  return weightsAt(vec4<i32>(lo), vec4<u32>(j0) + vec4<u32>(0u, 1u, 2u, 3u));
}
