import { describe, expect, it } from 'vitest';
import { formatDuration, progressOf } from './progress';

describe('run progress', () => {
  it('rates the recent window: 4 steps 500 ms apart = 2 steps/s; 10 left = 5 s', () => {
    const p = progressOf([1000, 1500, 2000, 2500], 4, 14);
    expect(p.stepsPerSec).toBe(2);
    expect(p.remainingMs).toBe(5000);
  });

  it('forgets a slow first step beyond the window of 10', () => {
    // A 60 s first step, then 11 steps 1 s apart: the window sees only the 1 s ones.
    const times = [0, 60_000, ...Array.from({ length: 10 }, (_, i) => 61_000 + i * 1000)];
    expect(progressOf(times, 12, null)).toEqual({ stepsPerSec: 1, remainingMs: null });
  });

  it('says nothing from one step', () => {
    expect(progressOf([5], 1, 10)).toEqual({ stepsPerSec: null, remainingMs: null });
  });

  it('formats durations', () => {
    expect(formatDuration(4_400)).toBe('4s');
    expect(formatDuration(125_000)).toBe('2m 05s');
    expect(formatDuration(3_720_000)).toBe('1h 02m');
  });
});
