// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11): a
// counter-based generator, so draw n of stream (seed) is a pure function of (seed, n). The GPU
// sampler (shaders/sample/op.wgsl) runs the same rounds, which is what makes a run reproducible
// on one backend and lets the CPU reference check the GPU draw for draw.

const M0 = 0xd2511f53;
const M1 = 0xcd9e8d57;
const W0 = 0x9e3779b9;
const W1 = 0xbb67ae85;

/** High and low 32 bits of a 32x32-bit product, in exact integer arithmetic. */
function mulhilo(a: number, b: number): [number, number] {
  const p = BigInt(a >>> 0) * BigInt(b >>> 0);
  return [Number(p >> 32n) >>> 0, Number(p & 0xffffffffn) >>> 0];
}

export type Counter = [number, number, number, number];
export type Key = [number, number];

export function philox4x32(counter: Counter, key: Key, rounds = 10): Counter {
  let [c0, c1, c2, c3] = counter.map((v) => v >>> 0);
  let [k0, k1] = key.map((v) => v >>> 0);
  for (let r = 0; r < rounds; r++) {
    if (r > 0) {
      k0 = (k0 + W0) >>> 0;
      k1 = (k1 + W1) >>> 0;
    }
    const [hi0, lo0] = mulhilo(M0, c0);
    const [hi1, lo1] = mulhilo(M1, c2);
    [c0, c1, c2, c3] = [(hi1 ^ c1 ^ k0) >>> 0, lo1, (hi0 ^ c3 ^ k1) >>> 0, lo0];
  }
  return [c0, c1, c2, c3];
}

/** A u32 to a float in [0, 1) with 24 bits, exactly representable in f32 and f64 alike. */
export function toUnitFloat(u: number): number {
  return (u >>> 8) / 16777216;
}

/** Split a JS integer seed (up to 2^53) into the two 32-bit key words. */
export function seedKey(seed: number): Key {
  if (!Number.isSafeInteger(seed) || seed < 0) throw new Error(`seed must be a non-negative safe integer, got ${seed}`);
  return [(seed % 2 ** 32) >>> 0, Math.floor(seed / 2 ** 32) >>> 0];
}

/** The uniform the sampler uses for (row, step): the first word of Philox(row, step, 0, 0). */
export function samplerUniform(seed: number, row: number, step: number): number {
  return toUnitFloat(philox4x32([row, step, 0, 0], seedKey(seed))[0]);
}
