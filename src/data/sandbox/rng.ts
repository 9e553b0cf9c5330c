// The sandbox's own seeded PRNG. Every random choice in the synthetic world flows from one run
// seed through labelled forks, so adding a generator (or an item) never shifts the streams of
// the others: a stream is a pure function of (seed, label path), not of call order.
//
// Generator: mulberry32 (32-bit state, full 2^32 period, passes the usual small-state tests;
// plenty for picking templates). Label derivation: FNV-1a over the label's UTF-16 code units,
// seeded with the parent seed, then the murmur3 finaliser so that nearby seeds and labels that
// share a prefix give unrelated child seeds.

// One mix32 for the project (contract/mulberry32.ts): the same murmur3 finaliser this file had.
import { mix32 } from '../../contract/mulberry32';
export { mix32 };

/** Child seed of `seed` under `label`: stable across runs, platforms and insertion order. */
export function deriveSeed(seed: number, label: string | number): number {
  const text = String(label);
  let h = (mix32(seed >>> 0) ^ 0x811c9dc5) >>> 0;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return mix32(h ^ text.length);
}

/** A seeded random stream with the few draws the generators need. Not cryptographic. */
export class Rng {
  /** The seed this stream started from (its fork identity). */
  readonly seed: number;
  private state: number;

  constructor(seed: number) {
    if (!Number.isFinite(seed)) throw new Error(`Rng: seed must be a finite number, got ${seed}`);
    this.seed = seed >>> 0;
    this.state = this.seed;
  }

  /** Uniform float in [0, 1) (mulberry32). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** Uniform integer in [0, n). */
  int(n: number): number {
    if (!Number.isInteger(n) || n <= 0) throw new Error(`Rng.int: n must be a positive integer, got ${n}`);
    return Math.floor(this.next() * n);
  }

  /** Uniform integer in [lo, hi] inclusive. */
  range(lo: number, hi: number): number {
    return lo + this.int(hi - lo + 1);
  }

  /** True with probability p. */
  chance(p: number): boolean {
    return this.next() < p;
  }

  /** A uniformly chosen element. */
  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('Rng.pick: empty list');
    return items[this.int(items.length)];
  }

  /** An index drawn in proportion to non-negative weights. */
  weighted(weights: readonly number[]): number {
    let total = 0;
    for (const w of weights) {
      if (!(w >= 0) || !Number.isFinite(w)) throw new Error(`Rng.weighted: bad weight ${w}`);
      total += w;
    }
    if (total <= 0) throw new Error('Rng.weighted: weights sum to zero');
    let u = this.next() * total;
    for (let i = 0; i < weights.length; i++) {
      u -= weights[i];
      if (u < 0) return i;
    }
    return weights.length - 1;
  }

  /** A shuffled copy (Fisher-Yates). */
  shuffle<T>(items: readonly T[]): T[] {
    const out = items.slice();
    for (let i = out.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      [out[i], out[j]] = [out[j], out[i]];
    }
    return out;
  }

  /** An independent child stream; depends only on this stream's seed and the label. */
  fork(label: string | number): Rng {
    return new Rng(deriveSeed(this.seed, label));
  }
}

/** A stream for a label path: rngFor(seed, 'defenderSft', 17) = new Rng(seed).fork(...).fork(17). */
export function rngFor(seed: number, ...labels: (string | number)[]): Rng {
  let rng = new Rng(seed);
  for (const label of labels) rng = rng.fork(label);
  return rng;
}
