import { describe, expect, it } from 'vitest';
import { entropyScaleMax, showPiece, textOn, viridis } from './colourScale';

describe('entropy colour scale', () => {
  it('is viridis: dark purple at 0, yellow at 1, clamped, interpolated', () => {
    expect(viridis(0)).toEqual([0x44, 0x01, 0x54]);
    expect(viridis(1)).toEqual([0xfd, 0xe7, 0x25]);
    expect(viridis(-3)).toEqual(viridis(0));
    expect(viridis(NaN)).toEqual(viridis(0));
    // Halfway between stop 4 (#26828e) and stop 5 (#1f9e89).
    expect(viridis(4.5 / 9)).toEqual([
      Math.round((0x26 + 0x1f) / 2),
      Math.round((0x82 + 0x9e) / 2),
      Math.round((0x8e + 0x89) / 2),
    ]);
  });

  it('gets lighter monotonically (perceptual order)', () => {
    let last = -1;
    for (let i = 0; i <= 20; i++) {
      const [r, g, b] = viridis(i / 20);
      const y = 0.2126 * r + 0.7152 * g + 0.0722 * b;
      expect(y).toBeGreaterThan(last);
      last = y;
    }
  });

  it('picks readable text colours and a rounded scale top', () => {
    expect(textOn(viridis(0))).toBe('#fff');
    expect(textOn(viridis(1))).toBe('#000');
    expect(entropyScaleMax([0.2, 2.3, NaN])).toBe(2.5);
    expect(entropyScaleMax([])).toBe(1);
    expect(showPiece(' ')).toBe('␣');
    expect(showPiece(' cat')).toBe(' cat');
  });
});
