import { describe, expect, it } from 'vitest';
import { formatNumber, formatTable } from './table';

describe('CLI tables', () => {
  it('aligns a header, a rule and rows', () => {
    expect(
      formatTable(
        ['op', 'ms'],
        [
          ['a', 1.5],
          ['long name', 1234.4],
        ],
      ),
    ).toBe(['op           ms', '---------  ----', 'a          1.50', 'long name  1234'].join('\n'));
  });
  it('keeps three significant figures below one', () => {
    expect(formatNumber(0.012345)).toBe('0.0123');
    expect(formatNumber(250.04)).toBe('250.0');
    expect(formatNumber(8)).toBe('8'); // counts (batch, prompt length) stay whole
  });
});
