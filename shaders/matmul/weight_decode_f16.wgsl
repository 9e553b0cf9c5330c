// The f16 weight format's decode: IEEE halves, two per i32 word, the first in the low 16 bits,
// read with core unpack2x16float (not `enable f16`: shader-f16 is optional, SwiftShader lacks
// it); arithmetic stays float32 and the format's scales are ones (the planned decode reads
// none). The one place the format's bits are read: every kernel that reads f16 weights includes
// it (weightDecodeWgsl, src/engine/kernels/matmul/weightDecode.ts); the kernel does the
// addressing, rows padded to whole words of WPW weights.
const WPW : u32 = 2u;

// Weight j (0 .. WPW - 1) of a packed word, unscaled.
fn weightAt(word : i32, j : u32) -> f32 {
  return unpack2x16float(bitcast<u32>(word))[j];
}

// Weight j[l] of words[l] in each lane l.
fn weightsAt(words : vec4<i32>, j : vec4<u32>) -> vec4<f32> {
  return vec4<f32>(weightAt(words.x, j.x), weightAt(words.y, j.y), weightAt(words.z, j.z), weightAt(words.w, j.w));
}

// Four consecutive weights from weight j0 of word lo, continuing into hi (the run starts at a
// multiple of 4 weights: j0 is 0 here, and the run fills lo and hi).
fn weightRun4(lo : i32, hi : i32, j0 : u32) -> vec4<f32> {
  return vec4<f32>(unpack2x16float(bitcast<u32>(lo)), unpack2x16float(bitcast<u32>(hi)));
}
