import { useRunStore } from '../../store/runStore';
import { runColour } from '../palette';
import { stopLine } from '../../contract/stopReason';

const SOURCE_LABEL = { live: 'live', replay: 'replay', example: 'recorded example' } as const;

/** A live run that stopped, finished or failed reads "ended", not "live". */
const tagOf = (info: { source: keyof typeof SOURCE_LABEL; ended: boolean }) =>
  info.source === 'live' && info.ended ? 'ended' : info.source;

/**
 * The runs of the session: colour, source, show/hide, which one the arena follows, remove. A new
 * live run shows alone or beside the runs ticked on (at most MAX_SHOWN in all).
 */
export function RunLegend() {
  const order = useRunStore((s) => s.order);
  const runs = useRunStore((s) => s.runs);
  const active = useRunStore((s) => s.activeRunId);
  const { setRunHidden, setActiveRun, removeRun } = useRunStore.getState();
  if (order.length === 0) return <p className="small">No runs yet.</p>;
  return (
    <ul className="run-legend" aria-label="Runs" data-testid="run-legend">
      {order.map((id) => {
        const info = runs[id].info;
        return (
          <li
            key={id}
            className={id === active ? 'active' : undefined}
            data-testid="run-entry"
            data-source={info.source}
            data-ended={info.ended ? 'true' : 'false'}
          >
            <label>
              <input
                type="checkbox"
                checked={!info.hidden}
                onChange={(e) => setRunHidden(id, !e.target.checked)}
                aria-label={`Show ${info.label} on the charts`}
              />
              <span className="swatch" style={{ background: runColour(info.colour) }} aria-hidden="true" />
              <span className="run-name">{info.label}</span>
            </label>
            <span className={`tag tag-${tagOf(info)}`}>
              {tagOf(info) === 'ended' ? 'ended' : SOURCE_LABEL[info.source]}
            </span>
            <span className="small">
              {info.recipe} · {info.reports} {info.reports === 1 ? 'step' : 'steps'}
            </span>
            {info.ended && info.stopReason && (
              <span className="small" data-testid="run-stop-reason">
                {stopLine(info.stopReason)}
              </span>
            )}
            {id === active ? (
              <span className="small">(in the arena)</span>
            ) : (
              <button type="button" className="mini" onClick={() => setActiveRun(id)}>
                Show in arena
              </button>
            )}
            <button type="button" className="mini" onClick={() => removeRun(id)} aria-label={`Remove ${info.label}`}>
              ×
            </button>
          </li>
        );
      })}
    </ul>
  );
}
