// Checkpoints and runs: the autosave setting (every N steps, on pause), a manual save, the list
// of checkpoints in IndexedDB (step, time, metrics, size; restore, rename, delete), storage use
// against the browser's quota, and, after a reload, the newest run's checkpoint to resume.
// The worker writes checkpoints; this panel reads the same database and asks the worker to
// resume one (the run continues under its run id, its earlier reports reloaded from its log).
import * as Comlink from 'comlink';
import { useEffect, useState } from 'react';
import type { StepReport } from '../../recipes/report';
import { formatBytes, type CheckpointSummary } from '../../storage';
import { latestCheckpoint, runLogs, storageLine, useCheckpoints } from '../../store/checkpointStore';
import { useEngine } from '../../store/engineStore';
import { useRunStore } from '../../store/runStore';
import type { RunStatus } from '../../worker/protocol';
import { engineApi } from '../export/engineApi';
import { ResumedRun } from './ResumedRun';

const SHOWN_METRICS = ['reward/mean', 'judge/asr', 'loss', 'eval/asr'];

function metricSummary(c: CheckpointSummary): string {
  const parts = SHOWN_METRICS.filter((k) => typeof c.metrics[k] === 'number' && Number.isFinite(c.metrics[k])).map((k) => `${k} ${c.metrics[k].toFixed(3)}`);
  return parts.length ? parts.join(' · ') : '—';
}

/** Resumes a checkpoint in the worker: earlier reports come back from the run log first. */
export async function resumeCheckpoint(c: CheckpointSummary, paused: boolean): Promise<void> {
  const s = useCheckpoints.getState();
  s.setMessage(null);
  const history = await runLogs().readReports(c.runId, { toStep: c.step - 1 }).catch(() => [] as StepReport[]);
  if (history.length > 0) useRunStore.getState().importRun(history, 'live');
  const onReport = Comlink.proxy((r: StepReport) => useRunStore.getState().append(r, 'live'));
  const onStatus = Comlink.proxy((st: RunStatus) => useCheckpoints.getState().setResumed(st));
  const r = await engineApi().resumeFromCheckpoint(c.id, onReport, onStatus, { paused });
  if (r.ok) s.setResumed(r.status);
  else s.setMessage({ text: `Could not resume "${c.name}": ${Object.values(r.errors).join('; ')}`, error: true });
}

function Row({ c, busy, act }: { c: CheckpointSummary; busy: boolean; act: (label: string, fn: () => Promise<void>) => void }) {
  const { rename, remove } = useCheckpoints();
  const [editing, setEditing] = useState(false);
  const [name, setName] = useState(c.name);
  return (
    <tr data-testid="checkpoint-row" data-id={c.id} data-step={c.step} data-run={c.runId}>
      <td>
        {editing ? (
          <form onSubmit={(e) => { e.preventDefault(); setEditing(false); void rename(c.id, name); }}>
            <input data-testid="checkpoint-name-input" aria-label="checkpoint name" value={name} onChange={(e) => setName(e.target.value)} autoFocus />
          </form>
        ) : (
          <span data-testid="checkpoint-name">{c.name}</span>
        )}
        <div className="small">{c.runId}</div>
      </td>
      <td>{c.step}</td>
      <td className="small">{new Date(c.time).toLocaleString()}</td>
      <td className="small">{metricSummary(c)}</td>
      <td className="small">{formatBytes(c.sizeBytes)}</td>
      <td className="ckpt-actions">
        <button type="button" data-testid="checkpoint-restore" disabled={busy} title="Start this checkpoint's run from its step, paused" onClick={() => act('restoring', () => resumeCheckpoint(c, true))}>Restore</button>
        <button type="button" data-testid="checkpoint-rename" disabled={busy} onClick={() => { setName(c.name); setEditing((x) => !x); }}>Rename</button>
        <button type="button" data-testid="checkpoint-delete" disabled={busy} onClick={() => act('deleting', () => remove(c.id))}>Delete</button>
      </td>
    </tr>
  );
}

export function CheckpointsPanel() {
  const phase = useEngine((s) => s.phase);
  const { list, use, policy, message, refresh, setPolicy, onEvent, setMessage } = useCheckpoints();
  const [busy, setBusy] = useState<string | null>(null);
  const [everyText, setEveryText] = useState(String(policy.everySteps));
  const [offerDismissed, setOfferDismissed] = useState(false);
  const hasLiveRun = useRunStore((s) => s.order.some((id) => s.runs[id].info.source === 'live'));

  // A (re)started worker gets the policy and this page's listener; the list is read from IndexedDB.
  useEffect(() => {
    void refresh();
    if (phase !== 'ready') return;
    const api = engineApi();
    void api.watchCheckpoints(Comlink.proxy((e) => useCheckpoints.getState().onEvent(e)));
    void api.setAutosave(useCheckpoints.getState().policy).catch((e: Error) => setMessage({ text: e.message, error: true }));
  }, [phase, refresh, onEvent, setMessage]);

  const act = (label: string, fn: () => Promise<void>) => {
    setBusy(label);
    void fn()
      .catch((e: Error) => setMessage({ text: e.message, error: true }))
      .finally(() => setBusy(null));
  };

  const applyPolicy = (next: typeof policy) => {
    setPolicy(next);
    if (phase === 'ready') void engineApi().setAutosave(next).catch((e: Error) => setMessage({ text: e.message, error: true }));
  };
  const everyInvalid = !/^\d+$/.test(everyText.trim());

  const latest = latestCheckpoint(list);
  const offer = !offerDismissed && !hasLiveRun && latest !== null && phase === 'ready';

  return (
    <div className="checkpoints" data-testid="checkpoints">
      <div className="controls-row">
        <label className="control">
          Autosave every
          <input
            data-testid="autosave-every"
            className={`steps${everyInvalid ? ' invalid' : ''}`}
            type="text"
            inputMode="numeric"
            value={everyText}
            aria-invalid={everyInvalid}
            onChange={(e) => {
              setEveryText(e.target.value);
              if (/^\d+$/.test(e.target.value.trim())) applyPolicy({ ...policy, everySteps: Number(e.target.value.trim()) });
            }}
          />
          steps (0 = off)
        </label>
        <label className="control">
          <input data-testid="autosave-pause" type="checkbox" checked={policy.onPause} onChange={(e) => applyPolicy({ ...policy, onPause: e.target.checked })} />
          and on pause
        </label>
        <button type="button" data-testid="checkpoint-save" disabled={phase !== 'ready' || busy !== null} onClick={() => act('saving', async () => { onEvent(await engineApi().saveCheckpoint()); })}>
          Save now
        </button>
      </div>
      {everyInvalid && <div className="error small">Autosave every: a whole number of steps (0 = off), got "{everyText}".</div>}
      <p className="small" data-testid="storage-usage">{use ? storageLine(use) : 'Reading storage…'}</p>
      {message && (
        <div className={message.error ? 'error' : 'small'} role={message.error ? 'alert' : 'status'} data-testid="checkpoint-message" data-error={message.error ? 'true' : 'false'}>
          {message.text}
        </div>
      )}
      {offer && latest && (
        <div className="resume-offer" data-testid="resume-offer">
          <span>
            Run <strong>{latest.runId}</strong> has a checkpoint at step {latest.step} ({new Date(latest.time).toLocaleString()}).
          </span>{' '}
          <button type="button" data-testid="resume-latest" disabled={busy !== null} onClick={() => act('resuming', () => resumeCheckpoint(latest, false))}>Resume it</button>{' '}
          <button type="button" className="link-button" onClick={() => setOfferDismissed(true)}>dismiss</button>
        </div>
      )}
      <ResumedRun />
      {list.length === 0 ? (
        <p className="empty" data-testid="checkpoints-empty">No checkpoints yet: a run saves one every {policy.everySteps || '—'} steps{policy.onPause ? ' and when paused' : ''}.</p>
      ) : (
        <table className="ckpt-table" data-testid="checkpoint-list">
          <thead>
            <tr><th>Name</th><th>Step</th><th>Saved</th><th>Metrics</th><th>Size</th><th /></tr>
          </thead>
          <tbody>
            {list.map((c) => <Row key={c.id} c={c} busy={busy !== null} act={act} />)}
          </tbody>
        </table>
      )}
      {busy && <p className="small">{busy}…</p>}
    </div>
  );
}
