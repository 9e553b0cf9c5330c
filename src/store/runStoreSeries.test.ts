import { describe, expect, it } from 'vitest';
import {
  alignSeries,
  ema,
  ringArrays,
  ringAt,
  ringCreate,
  ringLastX,
  ringPush,
  ringTruncateFrom,
  smoothingToAlpha,
} from './runStoreSeries';

describe('ring buffer', () => {
  it('keeps points in order before it fills', () => {
    const r = ringCreate(4);
    ringPush(r, 1, 10);
    ringPush(r, 2, 20);
    expect(r.length).toBe(2);
    expect(Array.from(ringArrays(r).x)).toEqual([1, 2]);
    expect(Array.from(ringArrays(r).y)).toEqual([10, 20]);
    expect(ringLastX(r)).toBe(2);
  });

  it('wraps around: the oldest points are overwritten, order stays oldest first', () => {
    const r = ringCreate(3);
    for (let s = 1; s <= 7; s++) ringPush(r, s, s * 10);
    expect(r.length).toBe(3);
    expect(r.start).toBe(7 % 3); // 7 pushes into 3 slots: oldest sits at slot 1
    expect(Array.from(ringArrays(r).x)).toEqual([5, 6, 7]);
    expect(Array.from(ringArrays(r).y)).toEqual([50, 60, 70]);
    expect(ringAt(r, 0)).toEqual({ x: 5, y: 50 });
    expect(ringAt(r, 2)).toEqual({ x: 7, y: 70 });
    expect(() => ringAt(r, 3)).toThrow(RangeError);
    expect(ringLastX(r)).toBe(7);
  });

  it('appends in place without growing its arrays', () => {
    const r = ringCreate(2);
    const x = r.x;
    for (let s = 0; s < 1000; s++) ringPush(r, s, s);
    expect(r.x).toBe(x);
    expect(r.x.length).toBe(2);
    expect(Array.from(ringArrays(r).x)).toEqual([998, 999]);
  });

  it('truncates from a step when a run resumes, across the wrap point', () => {
    const r = ringCreate(4);
    for (let s = 1; s <= 6; s++) ringPush(r, s, s); // holds 3,4,5,6 wrapped
    ringTruncateFrom(r, 5);
    expect(Array.from(ringArrays(r).x)).toEqual([3, 4]);
    ringPush(r, 5, 50);
    expect(Array.from(ringArrays(r).y)).toEqual([3, 4, 50]);
  });

  it('rejects a bad capacity', () => {
    expect(() => ringCreate(0)).toThrow(/positive integer/);
  });
});

describe('EMA smoothing', () => {
  it('matches hand-computed values', () => {
    // alpha 0.5: s0 = 0; s1 = 0.5*10 + 0.5*0 = 5; s2 = 0.5*10 + 0.5*5 = 7.5; s3 = 0.5*0 + 0.5*7.5 = 3.75
    expect(Array.from(ema([0, 10, 10, 0], 0.5))).toEqual([0, 5, 7.5, 3.75]);
    // alpha 0.25: s0 = 4; s1 = 0.25*8 + 0.75*4 = 5; s2 = 0.25*0 + 0.75*5 = 3.75
    expect(Array.from(ema([4, 8, 0], 0.25))).toEqual([4, 5, 3.75]);
  });

  it('alpha 1 is the raw series', () => {
    expect(Array.from(ema([3, 1, 4, 1, 5], 1))).toEqual([3, 1, 4, 1, 5]);
  });

  it('leaves NaN points as gaps without poisoning later values', () => {
    // s0 = 2; NaN skipped; s2 = 0.5*4 + 0.5*2 = 3
    const out = Array.from(ema([2, NaN, 4], 0.5));
    expect(out[0]).toBe(2);
    expect(out[1]).toBeNaN();
    expect(out[2]).toBe(3);
  });

  it('maps the slider smoothing to alpha', () => {
    expect(smoothingToAlpha(0)).toBe(1);
    expect(smoothingToAlpha(0.75)).toBeCloseTo(0.25, 12);
    expect(smoothingToAlpha(5)).toBeCloseTo(0.001, 12);
  });
});

describe('alignSeries', () => {
  it('joins on the union of steps: undefined where a series has no point, null for NaN', () => {
    const [xs, a, b] = alignSeries([
      { x: [1, 2, 4], y: [10, NaN, 40] },
      { x: [2, 3], y: [200, 300] },
    ]);
    expect(xs).toEqual([1, 2, 3, 4]);
    expect(a).toEqual([10, null, undefined, 40]);
    expect(b).toEqual([undefined, 200, 300, undefined]);
  });
});
