import { rgbCss, viridis } from './colourScale';

/** The entropy colour scale as a labelled gradient bar. */
export function EntropyLegend({ max }: { max: number }) {
  const stops = Array.from({ length: 11 }, (_, i) => `${rgbCss(viridis(i / 10))} ${i * 10}%`).join(', ');
  const ticks = [0, max / 2, max];
  return (
    <div
      className="entropy-legend"
      data-testid="entropy-legend"
      aria-label={`Entropy colour scale from 0 to ${max} nats: dark purple is certain, yellow is uncertain`}
    >
      <span className="small">token entropy</span>
      <div className="legend-bar-wrap">
        <div className="legend-bar" style={{ background: `linear-gradient(to right, ${stops})` }} />
        <div className="legend-ticks">
          {ticks.map((t) => (
            <span key={t}>{Number(t.toFixed(2))}</span>
          ))}
        </div>
      </div>
      <span className="small">nats (low = confident)</span>
    </div>
  );
}
