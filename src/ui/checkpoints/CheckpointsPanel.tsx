// Checkpoints and runs: the autosave setting (every N steps, on pause), a manual save, the list
// of checkpoints in IndexedDB grouped by run (step, time, metrics, size; restore, rename,
// delete), and storage use against the browser's quota. The worker writes checkpoints; this
// panel reads the same database. Restore hands a checkpoint to the run panel (Run setup), the one
// place a run is driven from; the run that was live before a reload comes back there on its own.
import * as Comlink from 'comlink';
import { Fragment, useEffect, useState } from 'react';
import { formatBytes } from '../../contract/formatBytes';
import { stopLine } from '../../contract/stopReason';
import type { CheckpointSummary } from '../../contract/storageFormat';
import { groupByRun, metricSummary, storageLine, useCheckpoints } from '../../store/checkpointStore';
import { useEngine } from '../../store/engineStore';
import { useSetup } from '../../store/setupStore';
import { engine as engineApi } from '../../store/engineStore';
import { resumeCheckpoint } from '../controls/runActions';

/** Time of day for today's saves, date and time for older ones. */
const when = (t: number) =>
  new Date(t).toDateString() === new Date().toDateString()
    ? new Date(t).toLocaleTimeString()
    : new Date(t).toLocaleString();

function Row({
  c,
  busy,
  live,
  act,
}: {
  c: CheckpointSummary;
  busy: boolean;
  /** A run is live in the run panel: restoring would replace it, so Stop it first. */
  live: boolean;
  act: (label: string, fn: () => Promise<void>) => void;
}) {
  const { rename, remove } = useCheckpoints();
  const [editing, setEditing] = useState(false);
  const [name, setName] = useState(c.name);
  return (
    <tr data-testid="checkpoint-row" data-id={c.id} data-step={c.step} data-run={c.runId}>
      <td>
        {editing ? (
          <form
            onSubmit={(e) => {
              e.preventDefault();
              setEditing(false);
              void rename(c.id, name);
            }}
          >
            <input
              data-testid="checkpoint-name-input"
              aria-label="checkpoint name"
              value={name}
              onChange={(e) => setName(e.target.value)}
              autoFocus
            />
          </form>
        ) : (
          <span data-testid="checkpoint-name">{c.name}</span>
        )}
      </td>
      <td>{c.step}</td>
      <td className="small">{when(c.time)}</td>
      <td className="small">{metricSummary(c.metrics)}</td>
      <td className="small">{formatBytes(c.sizeBytes)}</td>
      <td className="ckpt-actions" style={{ fontSize: '0.8rem' }}>
        <button
          type="button"
          data-testid="checkpoint-restore"
          disabled={busy || live}
          title={
            live
              ? 'A run is live: Stop it in Run setup first'
              : "Load this checkpoint's run at its step, paused, into Run setup (Resume there continues it)"
          }
          onClick={() =>
            act('restoring', async () => {
              const ok = await resumeCheckpoint(c, true);
              // Said here too, where the click was (the run itself shows in Run setup).
              useCheckpoints.getState().setMessage(
                ok
                  ? {
                      text: `Restored "${c.name}" into Run setup, paused at step ${c.step}: Resume there continues it.`,
                      error: false,
                    }
                  : { text: useSetup.getState().commandError ?? `Could not restore "${c.name}".`, error: true },
              );
              if (ok) document.getElementById('setup')?.scrollIntoView({ behavior: 'smooth', block: 'start' });
            })
          }
        >
          Restore
        </button>
        <button
          type="button"
          data-testid="checkpoint-rename"
          disabled={busy}
          onClick={() => {
            setName(c.name);
            setEditing((x) => !x);
          }}
        >
          Rename
        </button>
        <button
          type="button"
          data-testid="checkpoint-delete"
          disabled={busy}
          onClick={() => act('deleting', () => remove(c.id))}
        >
          Delete
        </button>
      </td>
    </tr>
  );
}

export function CheckpointsPanel() {
  const phase = useEngine((s) => s.phase);
  const {
    list,
    use,
    policy,
    message,
    refresh,
    setPolicy,
    onEvent,
    setMessage,
    startup,
    notice,
    collected,
    stopReasons,
  } = useCheckpoints();
  const [busy, setBusy] = useState<string | null>(null);
  const [everyText, setEveryText] = useState(String(policy.everySteps));
  const [keepText, setKeepText] = useState(String(policy.keep));
  const live = useSetup((s) => s.status.state === 'running' || s.status.state === 'paused');

  // A (re)started worker gets the policy and this page's listener; the list is read from IndexedDB.
  // The first time, the start's checks run first (persistence, a wiped store, orphan chunks).
  useEffect(() => {
    void startup().then(refresh);
    if (phase !== 'ready') return;
    const api = engineApi();
    void api.watchCheckpoints(Comlink.proxy((e) => useCheckpoints.getState().onEvent(e)));
  }, [phase, startup, refresh, onEvent, setMessage]);
  // The worker follows the policy: typed here, or reloaded from IndexedDB at the start.
  useEffect(() => {
    if (phase !== 'ready') return;
    void engineApi()
      .setAutosave(policy)
      .catch((e: Error) => setMessage({ text: e.message, error: true }));
  }, [phase, policy, setMessage]);
  // A policy reloaded at the start replaces what the boxes show (unless they already say it).
  useEffect(() => {
    setEveryText((t) =>
      /^\d+$/.test(t.trim()) && Number(t.trim()) === policy.everySteps ? t : String(policy.everySteps),
    );
    setKeepText((t) => (/^\d+$/.test(t.trim()) && Number(t.trim()) === policy.keep ? t : String(policy.keep)));
  }, [policy.everySteps, policy.keep]);

  const act = (label: string, fn: () => Promise<void>) => {
    setBusy(label);
    void fn()
      .catch((e: Error) => setMessage({ text: e.message, error: true }))
      .finally(() => setBusy(null));
  };

  const everyInvalid = !/^\d+$/.test(everyText.trim());
  const keepInvalid = !/^\d+$/.test(keepText.trim());

  return (
    <div className="checkpoints" data-testid="checkpoints">
      <div className="controls-row">
        <label className="control">
          Autosave every
          <input
            data-testid="autosave-every"
            className={`steps${everyInvalid ? ' invalid' : ''}`}
            style={{ width: '4em' }}
            type="text"
            inputMode="numeric"
            value={everyText}
            aria-invalid={everyInvalid}
            onChange={(e) => {
              setEveryText(e.target.value);
              if (/^\d+$/.test(e.target.value.trim()))
                setPolicy({ ...policy, everySteps: Number(e.target.value.trim()) });
            }}
          />
          steps (0 = off)
        </label>
        <label className="control">
          keep the last
          <input
            data-testid="autosave-keep"
            type="text"
            inputMode="numeric"
            style={{ width: '3em' }}
            className={keepInvalid ? 'invalid' : ''}
            aria-invalid={keepInvalid}
            value={keepText}
            onChange={(e) => {
              setKeepText(e.target.value);
              if (/^\d+$/.test(e.target.value.trim())) setPolicy({ ...policy, keep: Number(e.target.value.trim()) });
            }}
          />
          (0 = all; renamed ones stay)
        </label>
        <label className="control">
          <input
            data-testid="autosave-pause"
            type="checkbox"
            checked={policy.onPause}
            onChange={(e) => setPolicy({ ...policy, onPause: e.target.checked })}
          />
          and on pause
        </label>
        <button
          type="button"
          data-testid="checkpoint-save"
          disabled={phase !== 'ready' || busy !== null}
          onClick={() =>
            act('saving', async () => {
              onEvent(await engineApi().saveCheckpoint());
            })
          }
        >
          Save now
        </button>
      </div>
      {everyInvalid && (
        <div className="error small">Autosave every: a whole number of steps (0 = off), got "{everyText}".</div>
      )}
      {keepInvalid && (
        <div className="error small">Keep the last: a whole number of autosaves (0 = all), got "{keepText}".</div>
      )}
      {notice && (
        <div className="error" role="alert" data-testid="storage-notice">
          {notice}
        </div>
      )}
      <p
        className="small"
        data-testid="storage-usage"
        data-persisted={use?.persisted === null || !use ? '' : String(use.persisted)}
      >
        {use ? storageLine(use) : 'Reading storage…'}
      </p>
      {collected > 0 && (
        <p className="small" data-testid="orphans-collected">
          Removed {collected} chunk{collected === 1 ? '' : 's'} of a save that was interrupted before it finished
          (earlier checkpoints were not affected).
        </p>
      )}
      {message && (
        <div
          className={message.error ? 'error' : 'small'}
          role={message.error ? 'alert' : 'status'}
          data-testid="checkpoint-message"
          data-error={message.error ? 'true' : 'false'}
        >
          {message.text}
        </div>
      )}
      {list.length === 0 ? (
        <p className="empty" data-testid="checkpoints-empty">
          {notice ? 'No checkpoints: the browser cleared them (see above). A' : 'No checkpoints yet: a'} run saves one
          every {policy.everySteps || '—'} steps{policy.onPause ? ' and when paused' : ''}.
        </p>
      ) : (
        <table
          className="ckpt-table small"
          data-testid="checkpoint-list"
          style={{ width: '100%', borderCollapse: 'collapse', textAlign: 'left' }}
        >
          <thead>
            <tr>
              <th>Name</th>
              <th>Step</th>
              <th>Saved</th>
              <th>Metrics</th>
              <th>Size</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {groupByRun(list).map((g) => (
              <Fragment key={g.runId}>
                <tr className="ckpt-run" data-testid="checkpoint-run" data-run={g.runId}>
                  <th colSpan={6} scope="rowgroup">
                    Run {g.runId} · {g.items.length} checkpoint{g.items.length === 1 ? '' : 's'}
                    {stopReasons[g.runId] && (
                      <span className="small" data-testid="checkpoint-run-stop">
                        {' '}
                        · {stopLine(stopReasons[g.runId])}
                      </span>
                    )}
                  </th>
                </tr>
                {g.items.map((c) => (
                  <Row key={c.id} c={c} busy={busy !== null} live={live} act={act} />
                ))}
              </Fragment>
            ))}
          </tbody>
        </table>
      )}
      {busy && <p className="small">{busy}…</p>}
    </div>
  );
}
