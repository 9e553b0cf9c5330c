// Seeded randomness for the model layer. Every random choice of a run flows from its seed.
//
// Two generators:
//  - hash3(seed, stream, counter): counter-based (stateless) 32-bit hash for seeds derived per
//    (run, layer, call): the murmur3 finaliser (fmix32) applied in a chain, one word at a time
//    with distinct odd constants. (Sampling draws use Philox: src/engine/rng/philox.ts.)
//  - mulberry32(seed): a tiny sequential generator (Tommy Ettinger's mulberry32, 32-bit state,
//    period 2^32) for initialisation (LoRA A matrices, dropout masks).

import { mix32 } from '../engine/index';

export { mix32, mulberry32 } from '../engine/index';

/** 32-bit hash of (seed, stream, counter). */
export function hash3(seed: number, stream: number, counter: number): number {
  let h = mix32((seed >>> 0) ^ 0x9e3779b9);
  h = mix32(h ^ Math.imul((stream >>> 0) + 0x7f4a7c15, 0x27d4eb2f));
  h = mix32(h ^ Math.imul((counter >>> 0) + 0x165667b1, 0x94d049bb));
  return h;
}
