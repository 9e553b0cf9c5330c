// Seeded randomness for the model layer. Every random choice of a run flows from its seed.
//
// Two generators:
//  - uniformAt(seed, stream, counter): counter-based (stateless). The value is a hash of the three
//    integers, so draw n of stream s is the same whatever else was drawn: a prompt sampled alone
//    or as row s of a batch gets the same random numbers, and a resumed run needs no saved state.
//    Hash: the murmur3 32-bit finaliser (fmix32) applied in a chain, mixing in one word at a time
//    with distinct odd constants; 32 bits of output, so u has a resolution of 2^-32.
//  - mulberry32(seed): a tiny sequential generator (Tommy Ettinger's mulberry32, 32-bit state,
//    period 2^32) for initialisation (LoRA A matrices, dropout masks).

/** murmur3 fmix32: a bijective avalanche mix of a 32-bit integer. */
export function mix32(x: number): number {
  x >>>= 0;
  x ^= x >>> 16;
  x = Math.imul(x, 0x85ebca6b);
  x ^= x >>> 13;
  x = Math.imul(x, 0xc2b2ae35);
  x ^= x >>> 16;
  return x >>> 0;
}

/** 32-bit hash of (seed, stream, counter). */
export function hash3(seed: number, stream: number, counter: number): number {
  let h = mix32((seed >>> 0) ^ 0x9e3779b9);
  h = mix32(h ^ Math.imul((stream >>> 0) + 0x7f4a7c15, 0x27d4eb2f));
  h = mix32(h ^ Math.imul((counter >>> 0) + 0x165667b1, 0x94d049bb));
  return h;
}

/** mulberry32: returns a function giving uniforms in [0, 1). */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
