// Entropy colours: viridis, a perceptually uniform scale (lightness rises monotonically, so a
// projector or a grey-scale print still reads low-to-high), sampled at 10 stops and interpolated.

const VIRIDIS = [
  '#440154',
  '#482878',
  '#3e4989',
  '#31688e',
  '#26828e',
  '#1f9e89',
  '#35b779',
  '#6ece58',
  '#b5de2b',
  '#fde725',
];
const STOPS = VIRIDIS.map(
  (h) => [parseInt(h.slice(1, 3), 16), parseInt(h.slice(3, 5), 16), parseInt(h.slice(5, 7), 16)] as const,
);

export type RGB = readonly [number, number, number];

/** Colour of t in [0, 1] (clamped; NaN maps to 0). */
export function viridis(t: number): RGB {
  const u = Number.isFinite(t) ? Math.min(1, Math.max(0, t)) : 0;
  const f = u * (STOPS.length - 1);
  const i = Math.min(STOPS.length - 2, Math.floor(f));
  const w = f - i;
  const a = STOPS[i];
  const b = STOPS[i + 1];
  return [
    Math.round(a[0] + (b[0] - a[0]) * w),
    Math.round(a[1] + (b[1] - a[1]) * w),
    Math.round(a[2] + (b[2] - a[2]) * w),
  ];
}

export function rgbCss([r, g, b]: RGB): string {
  return `rgb(${r} ${g} ${b})`;
}

/** Black or white text, whichever reads better on the background (WCAG relative luminance). */
export function textOn([r, g, b]: RGB): string {
  const lin = (c: number) => {
    const s = c / 255;
    return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  };
  const L = 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
  return L > 0.22 ? '#000' : '#fff';
}

/** The top of the entropy scale: the largest value shown, rounded up to a half nat (at least 1). */
export function entropyScaleMax(values: Iterable<number>): number {
  let max = 0;
  for (const v of values) if (Number.isFinite(v) && v > max) max = v;
  return Math.max(1, Math.ceil(max * 2) / 2);
}

/** How a token piece is shown: whitespace made visible where it would vanish. */
export function showPiece(piece: string): string {
  if (piece === '') return '∅';
  if (piece.trim() === '') return piece.replace(/ /g, '␣').replace(/\n/g, '↵').replace(/\t/g, '⇥');
  return piece.replace(/\n/g, '↵\n');
}
