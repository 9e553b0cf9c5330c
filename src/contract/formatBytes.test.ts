import { describe, expect, it } from 'vitest';
import { formatBytes } from './formatBytes';

describe('formatBytes', () => {
  it('formats limits in binary units', () => {
    expect(formatBytes(134217728, { trimZero: true })).toBe('128 MiB');
    expect(formatBytes(16384, { trimZero: true })).toBe('16 KiB');
    expect(formatBytes(1536, { trimZero: true })).toBe('1.5 KiB');
    expect(formatBytes(2 ** 31, { trimZero: true })).toBe('2 GiB');
  });

  it('keeps one decimal for storage sizes', () => {
    expect(formatBytes(3145728)).toBe('3.0 MiB');
    expect(formatBytes(512)).toBe('512 B');
  });
});
