// Where a GEMV row's token sits. Decode (G.seq = 0): row b is batch row b at the token's slot
// and position. Prefill (G.seq > 0): row = b * seq + j is prompt column tok.slot + j of batch
// row b, its RoPE position read from the (row, slot) table at G.posOff.
// Prepended to every planned GEMV (decodeKernels.ts gemvKernel).
fn rowBatch(row : u32) -> u32 {
  if (G.seq == 0u) {
    return row;
  }
  return row / G.seq;
}
fn rowSlot(row : u32) -> u32 {
  if (G.seq == 0u) {
    return tok.slot;
  }
  return tok.slot + row % G.seq;
}
fn rowPos(row : u32) -> u32 {
  if (G.seq == 0u) {
    return u32(auxAt(G.posOff + row)) + tok.step;
  }
  return u32(auxAt(G.posOff + rowBatch(row) * G.cap + rowSlot(row)));
}
fn cacheBase(row : u32, h : u32) -> u32 {
  return ((rowBatch(row) * G.nKV + h) * G.cap + rowSlot(row)) * G.headDim;
}
