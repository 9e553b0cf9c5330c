import { useEffect, useRef, useState, type KeyboardEvent, type MouseEvent } from 'react';
import { shownStep } from '../../contract/stepCount';
import type { PinRow } from '../../store/runStore';
import { showPiece, viridis } from './colourScale';

const CELL_H_MAX = 14;

/** Tooltip beside the cell, on the side with more room. */
function tipPlace(x: number, y: number, width: number) {
  return x < width * 0.55 ? { left: x + 12, top: y + 12 } : { right: width - x + 12, top: y + 12 };
}
const HEIGHT_MAX = 320;

/**
 * Steps × positions matrix of entropy for the pinned prompt: one row per training step (oldest at
 * the top), one column per token position of its generated message. Drawn as an image of
 * cols × rows pixels scaled up without smoothing, so a long run costs one drawImage.
 */
export function EntropyMatrix({ rows, scaleMax }: { rows: PinRow[]; scaleMax: number }) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const [hover, setHover] = useState<{ row: number; col: number; x: number; y: number } | null>(null);
  const cols = rows.reduce((m, r) => Math.max(m, r.entropy.length), 0);
  const cellH = Math.max(2, Math.min(CELL_H_MAX, Math.floor(HEIGHT_MAX / Math.max(1, rows.length))));
  const height = Math.max(cellH, rows.length * cellH);

  useEffect(() => {
    const c = canvas.current;
    if (!c || rows.length === 0 || cols === 0) return;
    const width = c.clientWidth || 300;
    const ratio = window.devicePixelRatio || 1;
    c.width = Math.round(width * ratio);
    c.height = Math.round(height * ratio);
    const img = new ImageData(cols, rows.length);
    rows.forEach((r, y) => {
      for (let x = 0; x < cols; x++) {
        const o = (y * cols + x) * 4;
        if (x < r.entropy.length) {
          const [R, G, B] = viridis(r.entropy[x] / scaleMax);
          img.data[o] = R;
          img.data[o + 1] = G;
          img.data[o + 2] = B;
          img.data[o + 3] = 255;
        } // past the end of a shorter message: transparent (panel colour)
      }
    });
    const small = document.createElement('canvas');
    small.width = cols;
    small.height = rows.length;
    small.getContext('2d')!.putImageData(img, 0, 0);
    const ctx = c.getContext('2d')!;
    ctx.clearRect(0, 0, c.width, c.height);
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(small, 0, 0, c.width, c.height);
  }, [rows, cols, height, scaleMax]);

  const onMove = (e: MouseEvent<HTMLCanvasElement>) => {
    const rect = e.currentTarget.getBoundingClientRect();
    const col = Math.floor(((e.clientX - rect.left) / rect.width) * cols);
    const row = Math.floor(((e.clientY - rect.top) / rect.height) * rows.length);
    if (row < 0 || row >= rows.length || col < 0 || col >= rows[row].entropy.length) setHover(null);
    else setHover({ row, col, x: e.clientX - rect.left, y: e.clientY - rect.top });
  };

  /** Keyboard: arrows move a cell cursor (same tooltip as the mouse), Escape hides it. */
  const at = (row: number, col: number) => {
    const c = canvas.current;
    const w = c?.clientWidth ?? 300;
    const r = Math.max(0, Math.min(rows.length - 1, row));
    const k = Math.max(0, Math.min(rows[r].entropy.length - 1, col));
    setHover({ row: r, col: k, x: ((k + 0.5) / cols) * w, y: ((r + 0.5) / rows.length) * height });
  };
  const onKey = (e: KeyboardEvent<HTMLCanvasElement>) => {
    const cur = hover ?? { row: rows.length - 1, col: 0 };
    const moves: Record<string, [number, number]> = {
      ArrowUp: [-1, 0],
      ArrowDown: [1, 0],
      ArrowLeft: [0, -1],
      ArrowRight: [0, 1],
    };
    if (e.key === 'Escape') setHover(null);
    else if (e.key === 'Home') at(cur.row, 0);
    else if (e.key === 'End') at(cur.row, cols);
    else if (moves[e.key]) at(cur.row + moves[e.key][0], cur.col + moves[e.key][1]);
    else return;
    e.preventDefault();
  };

  if (rows.length === 0)
    return <p className="small">No generated message for this prompt in the retained steps yet.</p>;
  // Steps done, as every panel counts them (contract/stepCount.ts).
  const first = shownStep(rows[0].step);
  const last = shownStep(rows[rows.length - 1].step);
  const h = hover ? rows[hover.row] : null;
  return (
    <figure className="matrix">
      <div className="matrix-body">
        <div className="matrix-yaxis" aria-hidden="true">
          <span>step {first}</span>
          <span className="axis-name">step ↓</span>
          <span>step {last}</span>
        </div>
        <div className="matrix-plot">
          <canvas
            ref={canvas}
            data-testid="entropy-matrix"
            data-rows={rows.length}
            data-cols={cols}
            style={{ height }}
            role="img"
            aria-label={`Entropy of the pinned prompt's ${rows[0].role} message over ${rows.length} steps (${first} to ${last}) and ${cols} token positions; arrow keys read single cells`}
            onMouseMove={onMove}
            onMouseLeave={() => setHover(null)}
            tabIndex={0}
            onFocus={() => at(rows.length - 1, 0)}
            onBlur={() => setHover(null)}
            onKeyDown={onKey}
          />
          {hover && (
            <div
              className="matrix-cursor"
              aria-hidden="true"
              style={{
                left: `${(hover.col / cols) * 100}%`,
                width: `${100 / cols}%`,
                top: (hover.row / rows.length) * height,
                height: height / rows.length,
              }}
            />
          )}
          {hover && h && (
            <div
              className="token-tip matrix-tip"
              role="tooltip"
              data-testid="matrix-tooltip"
              style={tipPlace(hover.x, hover.y, canvas.current?.clientWidth ?? 300)}
            >
              step {shownStep(h.step)}, position {hover.col}: “{showPiece(h.pieces[hover.col] ?? '')}”<br />
              entropy {h.entropy[hover.col].toFixed(3)} nats · log-prob {h.logp[hover.col]?.toFixed(3)}
            </div>
          )}
          <div className="matrix-xaxis" aria-hidden="true">
            <span>0</span>
            <span className="axis-name">token position →</span>
            <span>{cols - 1}</span>
          </div>
        </div>
      </div>
    </figure>
  );
}
