import { describe, expect, it } from 'vitest';
import { headersFileText } from './headersFile';

describe('_headers (Netlify / Cloudflare Pages)', () => {
  it('sets each header on every path: `/*`, then indented `Name: value` lines', () => {
    expect(headersFileText({ 'Cross-Origin-Opener-Policy': 'same-origin', 'X-A': 'b c' })).toBe(
      '/*\n  Cross-Origin-Opener-Policy: same-origin\n  X-A: b c\n',
    );
  });
});
