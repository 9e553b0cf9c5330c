// The int8 weight format's decode: four signed bytes per i32 word, the first in the low byte
// (WGSL unpack4xI8 order), one float32 scale per group of GS inputs along a row. The
// one place the format's bits are read: every kernel that reads int8 weights includes it
// (weightDecodeWgsl, src/engine/kernels/matmul/weightDecode.ts); the kernel does the addressing,
// rows zero-padded to whole words of WPW weights.
const WPW : u32 = 4u;

// Weight j (0 .. WPW - 1) of a packed word, unscaled: byte j moved to the top, shifted back with
// its sign.
fn weightAt(word : i32, j : u32) -> f32 {
  return f32((word << (24u - 8u * j)) >> 24u);
}

// Weight j[l] of words[l] in each lane l.
fn weightsAt(words : vec4<i32>, j : vec4<u32>) -> vec4<f32> {
  return vec4<f32>((words << (vec4<u32>(24u) - 8u * j)) >> vec4<u32>(24u));
}

// Four consecutive weights from weight j0 of word lo (the run starts at a multiple of 4 weights:
// j0 is 0 and the run is all of lo; hi is not read).
fn weightRun4(lo : i32, hi : i32, j0 : u32) -> vec4<f32> {
  return weightsAt(vec4<i32>(lo), vec4<u32>(j0) + vec4<u32>(0u, 1u, 2u, 3u));
}
