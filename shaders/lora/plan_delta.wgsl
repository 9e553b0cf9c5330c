// The LoRA epilogue both planned GEMV layouts share: s * (x A^T)[b] . B[o], from the x·A rows a
// small GEMV left in work (row stride G.tStride) and B [out, r] in the lora buffer; 0 while the
// adapters are off (tok.loraOn = 0: the reference policy on the same plan).

fn loraDelta(tOff : i32, bOff : u32, r : u32, scale : f32, b : u32, o : u32) -> f32 {
  if (tok.loraOn == 0u || r == 0u || tOff < 0) {
    return 0.0;
  }
  var d = 0.0;
  for (var j = 0u; j < r; j++) {
    d += wget(u32(tOff) + b * G.tStride + j) * lora[bOff + o * r + j];
  }
  return d * scale;
}
