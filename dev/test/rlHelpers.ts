// Assertions shared by the src/rl tests (not imported by library code).
import { expect } from 'vitest';

/** Every entry close to the hand-worked value (|a - e| < 10^-digits / 2), and no NaN. */
export function expectAllClose(actual: ArrayLike<number>, expected: ArrayLike<number>, digits = 5): void {
  expect(actual.length).toBe(expected.length);
  for (let i = 0; i < expected.length; i++) {
    expect(Number.isNaN(actual[i]), `entry ${i} is NaN`).toBe(false);
    expect(actual[i], `entry ${i}`).toBeCloseTo(expected[i], digits);
  }
}

/** Row-major flatten of nested rows. */
export function flat(rows: number[][]): number[] {
  return rows.flat();
}
