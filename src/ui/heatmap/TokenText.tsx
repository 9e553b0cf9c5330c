import { useId, useRef, useState, type KeyboardEvent } from 'react';
import type { TokenTrace } from '../../contract/report';
import { rgbCss, showPiece, textOn, viridis } from './colourScale';

function fmt(v: number, digits = 3): string {
  return Number.isFinite(v) ? v.toFixed(digits) : 'n/a';
}

/**
 * A generated message with each token coloured by the entropy of the distribution it was drawn
 * from. Tokens are one tab stop per message (roving focus: arrow keys, Home, End move between
 * tokens); hovering or focusing a token shows its log-prob, entropy and top alternatives.
 */
export function TokenText({ tokens, scaleMax, label }: { tokens: TokenTrace; scaleMax: number; label: string }) {
  const [active, setActive] = useState<number | null>(null);
  const [focusIdx, setFocusIdx] = useState(0);
  const refs = useRef<(HTMLSpanElement | null)[]>([]);
  const tipId = useId();
  const n = tokens.pieces.length;

  const move = (e: KeyboardEvent, i: number) => {
    let j = i;
    if (e.key === 'ArrowRight' || e.key === 'ArrowDown') j = Math.min(n - 1, i + 1);
    else if (e.key === 'ArrowLeft' || e.key === 'ArrowUp') j = Math.max(0, i - 1);
    else if (e.key === 'Home') j = 0;
    else if (e.key === 'End') j = n - 1;
    else if (e.key === 'Escape') {
      setActive(null);
      return;
    } else return;
    e.preventDefault();
    setFocusIdx(j);
    refs.current[j]?.focus();
  };

  let tip: { left: number; top: number } | null = null;
  if (active !== null) {
    const el = refs.current[active];
    if (el) tip = { left: el.offsetLeft, top: el.offsetTop + el.offsetHeight + 4 };
  }
  const top = active !== null ? tokens.top?.[active] : undefined;

  return (
    <div
      className="tokens"
      role="group"
      aria-label={`${label}: ${n} tokens coloured by entropy; arrow keys move between tokens`}
    >
      {tokens.pieces.map((piece, i) => {
        const rgb = viridis(tokens.entropy[i] / scaleMax);
        return (
          <span
            key={i}
            ref={(el) => {
              refs.current[i] = el;
            }}
            className="tok"
            data-testid="token"
            tabIndex={i === focusIdx ? 0 : -1}
            style={{ background: rgbCss(rgb), color: textOn(rgb) }}
            aria-describedby={active === i ? tipId : undefined}
            aria-label={`${piece.trim() === '' ? showPiece(piece) : piece}, entropy ${fmt(tokens.entropy[i], 2)} nats`}
            onMouseEnter={() => setActive(i)}
            onMouseLeave={() => setActive((a) => (a === i ? null : a))}
            onFocus={() => {
              setFocusIdx(i);
              setActive(i);
            }}
            onBlur={() => setActive((a) => (a === i ? null : a))}
            onKeyDown={(e) => move(e, i)}
          >
            {piece.trim() === '' ? showPiece(piece) : piece}
          </span>
        );
      })}
      {active !== null && tip && (
        <div
          className="token-tip"
          role="tooltip"
          id={tipId}
          data-testid="token-tooltip"
          style={{ left: tip.left, top: tip.top }}
        >
          <div className="tip-piece">
            “{showPiece(tokens.pieces[active])}” <span className="small">position {active}</span>
          </div>
          <table>
            <tbody>
              <tr>
                <th>entropy</th>
                <td>{fmt(tokens.entropy[active])} nats</td>
              </tr>
              <tr>
                <th>log-prob</th>
                <td>
                  {fmt(tokens.logp[active])} (p = {fmt(Math.exp(tokens.logp[active]))})
                </td>
              </tr>
            </tbody>
          </table>
          {top && top.length > 0 && (
            <>
              <div className="small">top alternatives</div>
              <ol className="tip-alts">
                {top.map((a, k) => (
                  <li key={k} className={a.piece === tokens.pieces[active] ? 'chosen' : undefined}>
                    <code>{showPiece(a.piece)}</code> <span>{fmt(a.logp)}</span>{' '}
                    <span className="small">p {fmt(Math.exp(a.logp))}</span>
                  </li>
                ))}
              </ol>
            </>
          )}
        </div>
      )}
    </div>
  );
}
