// Export / import: the run panel's run (live, or stopped / finished: then from the final
// checkpoint Stop saved) as a PEFT adapter zip or merged safetensors, its run log as JSONL; an adapter zip imported back into the run (validated by the worker:
// base model, shapes, rank, alpha, targets); the current setup as a veRL / TRL job zip; and
// uploaded prompt datasets for the recipes.
import { useState } from 'react';
import { runLogs } from '../../store/checkpointStore';
import { useRunStore } from '../../store/runStore';
import { useSetup, valuesOf } from '../../store/setupStore';
import { saveBlob } from '../charts/download';
import { DatasetUpload } from './DatasetUpload';
import { engine as engineApi } from '../../store/engineStore';
import { exportVerlJob, isExportable } from './verlJob';

type Msg = { text: string; error: boolean } | null;

const bytesBlob = (b: Uint8Array, type: string) => new Blob([b as Uint8Array<ArrayBuffer>], { type });

export function ExportPanel() {
  const activeRunId = useRunStore((s) => s.activeRunId);
  // The run in Run setup (live, stopped, or the one from before a reload); the charts' replay is not one.
  const panelRunId = useSetup((s) => s.status.runId);
  const runLive = useSetup((s) => (s.status.state === 'running' || s.status.state === 'paused') && !s.detached);
  const [busy, setBusy] = useState<string | null>(null);
  const [msg, setMsg] = useState<Msg>(null);
  const [allowMismatch, setAllowMismatch] = useState(false);
  // A recipe that trains several adapters exports them all, and the buttons name the players.
  const players = useSetup((s) => {
    const name = s.status.recipe ?? s.recipeName;
    return s.recipes.find((r) => r.name === name)?.players ?? null;
  });
  const both = players ? players.join(' + ') : null;

  const act = (label: string, fn: () => Promise<Msg>) => {
    setBusy(label);
    setMsg(null);
    void fn()
      .then(setMsg)
      .catch((e: Error) => setMsg({ text: e.message, error: true }))
      .finally(() => setBusy(null));
  };

  const exportAdapter = () =>
    act('exporting the adapter', async () => {
      const f = await engineApi().exportAdapter({ runId: panelRunId ?? undefined });
      saveBlob(bytesBlob(f.bytes, 'application/zip'), f.fileName);
      return {
        text: players
          ? `Saved ${f.fileName}: a PEFT adapter folder per player (${players.map((p) => `${p}/`).join(', ')}).`
          : `Saved ${f.fileName} (adapter_config.json + adapter_model.safetensors, PEFT names).`,
        error: false,
      };
    });
  const exportMerged = () =>
    act('merging', async () => {
      const f = await engineApi().exportMerged({ runId: panelRunId ?? undefined });
      saveBlob(bytesBlob(f.bytes, players ? 'application/zip' : 'application/octet-stream'), f.fileName);
      return { text: `Saved ${f.fileName}.${f.note ? ` Note: ${f.note}.` : ''}`, error: false };
    });
  const exportLog = () =>
    act('exporting the log', async () => {
      const runId = panelRunId ?? activeRunId;
      if (!runId) return { text: 'No run to export: start or resume one.', error: true };
      const rec = await runLogs().getRun(runId);
      if (!rec)
        return {
          text: `Run ${runId} has no log in this browser (only live runs are logged; a replay is already a JSONL file).`,
          error: true,
        };
      const text = await runLogs().exportJsonl(runId);
      saveBlob(new Blob([text], { type: 'application/x-ndjson' }), `${runId}.jsonl`);
      return { text: `Saved ${runId}.jsonl (${rec.reportCount} steps).`, error: false };
    });
  const recipeName = useSetup((s) => s.recipeName);
  const recipes = useSetup((s) => s.recipes);
  const canVerl = isExportable(recipes.find((r) => r.name === recipeName));
  const exportableNames = recipes.filter(isExportable).map((r) => r.name);
  const exportVerl = () =>
    act('writing the veRL job', async () => {
      const s = useSetup.getState();
      const recipe = s.recipes.find((r) => r.name === s.recipeName);
      if (!recipe) return { text: 'Pick a recipe in Run setup first.', error: true };
      const steps = /^\d+$/.test(s.maxSteps.trim()) ? Number(s.maxSteps.trim()) : undefined;
      const z = await exportVerlJob(recipe, valuesOf(s, recipe.name), Number(s.seed) || 0, steps);
      saveBlob(bytesBlob(z.bytes, 'application/zip'), z.fileName);
      const model = z.modelShipped ? ', with the sandbox model' : '';
      return {
        text: `Saved ${z.fileName} (verl_config.yaml, reward.py, parquet data, run.sh, README${model}); ${z.unsupported?.length ?? 0} parts veRL cannot express are listed in its README.`,
        error: false,
      };
    });
  const importAdapter = (file: File) =>
    act('importing the adapter', async () => {
      if (!runLive)
        return {
          text: `Adapter not imported: no run is live to load ${file.name} into. Start a run, or Restore a checkpoint, first.`,
          error: true,
        };
      const bytes = new Uint8Array(await file.arrayBuffer());
      const r = await engineApi().importAdapter(bytes, file.name, { allowBaseMismatch: allowMismatch });
      if (!r.ok)
        return {
          text: `Adapter not imported: ${r.error.replace(/\.$/, '')}.${runLive ? ' The run continues unchanged.' : ''}`,
          error: true,
        };
      const note = r.baseMismatch ? ` (trained on ${r.baseModel ?? 'an unnamed base'}: base mismatch allowed)` : '';
      return {
        text: `Imported ${r.fileName}: ${r.tensors} tensors, r = ${r.r}, loaded into the run at step ${r.step}${note}.`,
        error: false,
      };
    });

  return (
    <div className="export-panel" data-testid="export-panel">
      <div className="controls-row">
        <button type="button" data-testid="export-adapter" disabled={busy !== null} onClick={exportAdapter}>
          {both ? `Adapters: ${both} (PEFT zip)` : 'Adapter (PEFT zip)'}
        </button>
        <button type="button" data-testid="export-merged" disabled={busy !== null} onClick={exportMerged}>
          {both ? `Merged models: ${both} (zip)` : 'Merged model (safetensors)'}
        </button>
        <button type="button" data-testid="export-log" disabled={busy !== null} onClick={exportLog}>
          Run log (JSONL)
        </button>
        <button
          type="button"
          data-testid="export-verl"
          disabled={busy !== null || !canVerl}
          title={
            canVerl
              ? 'the Run setup as a veRL job (and a TRL script): config, reward.py, parquet data, launch command'
              : `no veRL export for ${recipeName || 'this recipe'} yet (exportable: ${exportableNames.join(', ')})`
          }
          onClick={exportVerl}
        >
          Export for veRL (zip)
        </button>
      </div>
      <div className="controls-row">
        <label className="control">
          Import adapter zip
          <input
            data-testid="import-adapter"
            type="file"
            accept=".zip,application/zip"
            disabled={busy !== null}
            onChange={(e) => {
              const f = e.target.files?.[0];
              e.target.value = '';
              if (f) importAdapter(f);
            }}
          />
        </label>
        <label className="control">
          <input
            data-testid="import-allow-mismatch"
            type="checkbox"
            checked={allowMismatch}
            onChange={(e) => setAllowMismatch(e.target.checked)}
          />
          allow another base model name
        </label>
      </div>
      {busy && <p className="small">{busy}…</p>}
      {msg && (
        <div
          className={msg.error ? 'error' : 'small'}
          role={msg.error ? 'alert' : 'status'}
          data-testid="export-message"
          data-error={msg.error ? 'true' : 'false'}
        >
          {msg.text}
        </div>
      )}
      <DatasetUpload />
    </div>
  );
}
