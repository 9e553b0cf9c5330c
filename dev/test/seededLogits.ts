// Deterministic test inputs shared by unit tests, the browser self-test and the e2e suite, so a
// page and a Node process can build the same logits from the same seed.

import { mulberry32 } from '../../src/contract/mulberry32';

export { mulberry32 };

export interface LogitsCase {
  rows: number;
  vocab: number;
  logits: Float32Array;
  ids: Int32Array;
}

/** Logits spread over [-scale, scale] with a few spikes and masked (-inf) entries. */
export function seededLogits(rows: number, vocab: number, seed: number, scale = 8): LogitsCase {
  const rand = mulberry32(seed);
  const logits = new Float32Array(rows * vocab);
  for (let i = 0; i < logits.length; i++) logits[i] = (rand() * 2 - 1) * scale;
  const ids = new Int32Array(rows);
  for (let r = 0; r < rows; r++) {
    logits[r * vocab + Math.floor(rand() * vocab)] += 3 * scale; // a confident peak
    if (vocab > 2) logits[r * vocab + Math.floor(rand() * vocab)] = -Infinity; // a masked id
    let id = Math.floor(rand() * vocab);
    if (logits[r * vocab + id] === -Infinity) id = (id + 1) % vocab;
    ids[r] = id;
  }
  return { rows, vocab, logits, ids };
}

/** Upstream gradient weights [rows, 2] for (logp, entropy), seeded like the logits. */
export function seededUpstream(rows: number, seed: number): Float32Array {
  const rand = mulberry32(seed ^ 0x5bd1e995);
  const dy = new Float32Array(rows * 2);
  for (let i = 0; i < dy.length; i++) dy[i] = rand() * 2 - 1;
  return dy;
}
