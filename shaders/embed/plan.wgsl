// The planned path's token step tail: the sampled ids' embedding rows become the next input x
// (one dispatch per row block of the table; each writes the ids it holds), and the first block's
// dispatch records (id, log-prob, entropy) of every row at the run's token index tok.rec, so a
// run of several tokens reads back once. A prefill chunk (E.seq > 0) embeds prompt columns:
// row = b * seq + j takes ids[b * cap + tok.slot + j] from the prompt table. Rows are multiplied by
// E.scale (1, or Gemma 3's float32 sqrt(hidden)).
// Host-prepended: WG, the Emb and Tok structs and the bindings (E, tok, work, ids, table, stats,
// record).

@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(workgroup_id) wid : vec3<u32>, @builtin(local_invocation_index) tid : u32) {
  let b = wid.x;
  var id = ids[b];
  if (E.seq > 0u) {
    id = ids[(b / E.seq) * E.cap + tok.slot + b % E.seq];
  }
  let local = id - i32(E.rowStart);
  if (local >= 0 && local < i32(E.rowCount)) {
    for (var k = tid; k < E.H; k += WG) {
      work[E.xOff + b * E.H + k] = table[u32(local) * E.H + k] * E.scale;
    }
  }
  if (E.rec != 0u && tid == 0u) {
    let at = (tok.rec * E.B + b) * 3u;
    record[at] = f32(id);  // ids < 2^24 are exact in f32
    record[at + 1u] = stats[2u * b];
    record[at + 2u] = stats[2u * b + 1u];
  }
}
