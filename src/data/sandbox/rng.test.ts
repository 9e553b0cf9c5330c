import { describe, expect, it } from 'vitest';
import { deriveSeed, mix32, Rng, rngFor } from './rng';

describe('Rng', () => {
  it('is deterministic per seed and differs across seeds', () => {
    const a = new Rng(42);
    const b = new Rng(42);
    const c = new Rng(43);
    const xs = Array.from({ length: 8 }, () => a.next());
    expect(Array.from({ length: 8 }, () => b.next())).toEqual(xs);
    expect(Array.from({ length: 8 }, () => c.next())).not.toEqual(xs);
  });

  it('pins the first draws of seed 1 (changing the generator changes every dataset)', () => {
    const r = new Rng(1);
    const draws = Array.from({ length: 3 }, () => Math.round(r.next() * 1e9));
    const again = new Rng(1);
    expect(Array.from({ length: 3 }, () => Math.round(again.next() * 1e9))).toEqual(draws);
    // mulberry32(1) starts 0.6270739..., the published reference value; pinned so a silent edit is caught.
    expect(draws).toMatchInlineSnapshot(`
      [
        627073941,
        2735721,
        527447040,
      ]
    `);
  });

  it('draws in range with roughly uniform frequencies', () => {
    const r = new Rng(7);
    const counts = [0, 0, 0, 0, 0];
    let sum = 0;
    let lo = 1;
    let hi = 0;
    for (let i = 0; i < 50_000; i++) {
      const u = r.next();
      lo = Math.min(lo, u);
      hi = Math.max(hi, u);
      sum += u;
      counts[r.int(5)]++;
    }
    expect(lo).toBeGreaterThanOrEqual(0);
    expect(hi).toBeLessThan(1);
    expect(sum / 50_000).toBeCloseTo(0.5, 2);
    for (const c of counts) expect(Math.abs(c / 50_000 - 0.2)).toBeLessThan(0.01);
    const seen = new Set(Array.from({ length: 1000 }, () => r.range(3, 6)));
    expect([...seen].sort()).toEqual([3, 4, 5, 6]);
  });

  it('weighted, chance, shuffle and pick behave', () => {
    const r = new Rng(9);
    let hits = 0;
    const w = [0, 0, 0];
    for (let i = 0; i < 20_000; i++) {
      if (r.chance(0.3)) hits++;
      w[r.weighted([1, 0, 3])]++;
    }
    expect(Math.abs(hits / 20_000 - 0.3)).toBeLessThan(0.015);
    expect(w[1]).toBe(0);
    expect(Math.abs(w[2] / 20_000 - 0.75)).toBeLessThan(0.015);
    const s = r.shuffle([1, 2, 3, 4, 5, 6]);
    expect([...s].sort()).toEqual([1, 2, 3, 4, 5, 6]);
    expect(() => r.pick([])).toThrow(/empty/);
    expect(() => r.int(0)).toThrow(/positive integer/);
    expect(() => r.weighted([0, 0])).toThrow(/zero/);
    expect(() => new Rng(Number.NaN)).toThrow(/finite/);
  });

  it('forks depend only on (seed, label), never on the parent having been used', () => {
    const parent = new Rng(5);
    const before = parent.fork('attacker').next();
    for (let i = 0; i < 100; i++) parent.next();
    parent.fork('defender').next();
    expect(parent.fork('attacker').next()).toBe(before);
    expect(rngFor(5, 'attacker').next()).toBe(before);
    expect(rngFor(5, 'a', 'b').seed).toBe(new Rng(5).fork('a').fork('b').seed);
  });

  it('derives distinct child seeds for distinct labels and seeds', () => {
    const seen = new Set<number>();
    for (let i = 0; i < 5000; i++) seen.add(deriveSeed(1, i));
    for (let s = 0; s < 5000; s++) seen.add(deriveSeed(s, 'x'));
    expect(seen.size).toBeGreaterThan(9990);
    expect(deriveSeed(1, 'ab')).not.toBe(deriveSeed(1, 'ba'));
    expect(deriveSeed(1, '1')).toBe(deriveSeed(1, 1));
    expect(mix32(0)).toBe(0);
    expect(mix32(1)).not.toBe(1);
  });
});
