// Run setup and controls: pick a recipe, fill its config form (generated from the schema the
// worker lists), choose a seed, then Start / Pause / Resume / Step / Stop. The run itself lives in
// the engine worker; its StepReports (plain data) go into the run store, which the charts, the
// arena and the heatmaps read.
import * as Comlink from 'comlink';
import { useCallback, useEffect, useMemo, useState } from 'react';
import type { StepReport } from '../../recipes/report';
import { validateField } from '../../recipes/schema';
import { useEngine } from '../../store/engineStore';
import { useRunStore } from '../../store/runStore';
import type { RecipeListing, RunStatus } from '../../worker/protocol';
import { ConfigForm, formDefaults, type FormValues } from './ConfigForm';
import { PLANNED_RECIPES } from './planned';

const IDLE: RunStatus = { state: 'idle', recipe: null, seed: null, step: 0, error: null, detail: null, stepping: false, runId: null, numTensors: 0 };

function engine() {
  const e = window.sparring?.engine;
  if (!e) throw new Error('the engine worker is not running');
  return e;
}

/** Client-side check of each field (the same rules the worker applies). */
function fieldErrors(recipe: RecipeListing | undefined, values: FormValues): Record<string, string> {
  const out: Record<string, string> = {};
  if (!recipe) return out;
  for (const [k, f] of Object.entries(recipe.schema)) {
    if (!(k in values)) continue;
    const r = validateField(k, f, values[k]);
    if ('error' in r) out[k] = r.error;
  }
  return out;
}

export function RunControls() {
  const phase = useEngine((s) => s.phase);
  const [recipes, setRecipes] = useState<RecipeListing[]>([]);
  const [recipeName, setRecipeName] = useState<string>('');
  const [valuesByRecipe, setValuesByRecipe] = useState<Record<string, FormValues>>({});
  const [seed, setSeed] = useState('0');
  const [workerErrors, setWorkerErrors] = useState<Record<string, string>>({});
  const [status, setStatus] = useState<RunStatus>(IDLE);
  const [busy, setBusy] = useState<string | null>(null);
  const [commandError, setCommandError] = useState<string | null>(null);

  // (Re)load the recipe list whenever the engine (re)starts; a restarted worker has no run.
  useEffect(() => {
    setStatus(IDLE);
    setBusy(null);
    if (phase !== 'ready') return;
    let live = true;
    void engine()
      .listRecipes()
      .then((list) => {
        if (!live) return;
        setRecipes(list);
        setRecipeName((cur) => (cur && list.some((r) => r.name === cur) ? cur : (list[0]?.name ?? '')));
      })
      .catch((e: Error) => live && setCommandError(e.message));
    return () => {
      live = false;
    };
  }, [phase]);

  const recipe = recipes.find((r) => r.name === recipeName);
  const values = useMemo(() => (recipe ? (valuesByRecipe[recipe.name] ?? formDefaults(recipe.schema)) : {}), [recipe, valuesByRecipe]);
  const localErrors = useMemo(() => fieldErrors(recipe, values), [recipe, values]);
  const errors = { ...workerErrors, ...localErrors };

  const setValue = (name: string, v: string | boolean) => {
    if (!recipe) return;
    setValuesByRecipe((all) => ({ ...all, [recipe.name]: { ...(all[recipe.name] ?? formDefaults(recipe.schema)), [name]: v } }));
    setWorkerErrors((e) => {
      if (!(name in e)) return e;
      const rest = { ...e };
      delete rest[name];
      return rest;
    });
  };

  const command = useCallback(async (label: string, fn: () => Promise<RunStatus>) => {
    setBusy(label);
    setCommandError(null);
    try {
      setStatus(await fn());
    } catch (e) {
      setCommandError((e as Error).message);
    } finally {
      setBusy(null);
    }
  }, []);

  const start = async () => {
    if (!recipe) return;
    setBusy('starting');
    setCommandError(null);
    setWorkerErrors({});
    try {
      const onReport = Comlink.proxy((report: StepReport) => useRunStore.getState().append(report, 'live'));
      const onStatus = Comlink.proxy((s: RunStatus) => setStatus(s));
      const seedValue = seed.trim() === '' ? NaN : Number(seed);
      const r = await engine().startRun(recipe.name, values, seedValue, onReport, onStatus);
      if (r.ok) setStatus(r.status);
      else setWorkerErrors(r.errors);
    } catch (e) {
      setCommandError((e as Error).message);
    } finally {
      setBusy(null);
    }
  };

  const active = status.state === 'running' || status.state === 'paused';
  const ready = phase === 'ready';
  const extraErrors = Object.entries(workerErrors).filter(([k]) => k !== 'seed' && !(recipe && k in recipe.schema));

  return (
    <div className="run-controls" data-testid="run-controls">
      <div className="controls-row">
        <label className="control">
          Recipe
          <select data-testid="recipe-select" value={recipeName} disabled={!ready || active || busy !== null} onChange={(e) => { setRecipeName(e.target.value); setWorkerErrors({}); }}>
            {recipes.map((r) => (
              <option key={r.name} value={r.name}>{r.name}</option>
            ))}
            {PLANNED_RECIPES.filter(([n]) => !recipes.some((r) => r.name === n)).map(([n, what]) => (
              <option key={n} value={n} disabled title={what}>{n} (planned)</option>
            ))}
          </select>
        </label>
        <label className="control">
          Seed
          <input
            data-testid="run-seed"
            className={`seed${workerErrors.seed ? ' invalid' : ''}`}
            type="text"
            inputMode="numeric"
            value={seed}
            disabled={active || busy !== null}
            aria-invalid={Boolean(workerErrors.seed)}
            onChange={(e) => { setSeed(e.target.value); setWorkerErrors(({ seed: _drop, ...rest }) => rest); }}
          />
        </label>
      </div>
      {workerErrors.seed && <div className="error small" data-testid="field-error-seed">{workerErrors.seed}</div>}
      {!ready && <p className="empty">Waiting for the engine…</p>}
      {recipe && (
        <p className="recipe-about small" data-testid="recipe-about">
          <strong>{recipe.title}</strong> · {recipe.source}. {recipe.description}
        </p>
      )}

      <div className="controls-row run-buttons">
        <button type="button" data-testid="run-start" disabled={!ready || !recipe || active || busy !== null} onClick={() => void start()}>Start</button>
        <button type="button" data-testid="run-pause" disabled={status.state !== 'running' || busy !== null} onClick={() => void command('pausing', () => engine().pauseRun())}>Pause</button>
        <button type="button" data-testid="run-resume" disabled={status.state !== 'paused' || busy !== null} onClick={() => void command('resuming', () => engine().resumeRun())}>Resume</button>
        <button type="button" data-testid="run-step" disabled={status.state !== 'paused' || busy !== null} onClick={() => void command('stepping', () => engine().stepRun())}>Step</button>
        <button type="button" data-testid="run-stop" disabled={!active || busy === 'stopping'} onClick={() => void command('stopping', () => engine().stopRun())}>Stop</button>
        <span className={`run-state run-state-${status.state}`} data-testid="run-state" data-state={status.state} data-step={status.step} data-stepping={status.stepping ? 'true' : 'false'} role="status">
          {status.state}
          {' · step '}
          <span data-testid="run-step-count">{status.step}</span>
          {(busy ?? status.detail) && <span className="small"> · {busy ?? status.detail}</span>}
        </span>
      </div>
      {status.state === 'error' && status.error && <div className="error" role="alert" data-testid="run-error">Run failed: {status.error}</div>}
      {commandError && <div className="error" role="alert" data-testid="run-command-error">{commandError}</div>}
      {extraErrors.map(([k, m]) => (
        <div key={k} className="error small" data-testid={`field-error-${k}`}>{m}</div>
      ))}

      {recipe && (
        <div className="config-head">
          <span className="small">Config — {Object.keys(recipe.schema).length} fields; changed fields are highlighted.</span>
          <button type="button" className="link-button" data-testid="config-reset" disabled={active} onClick={() => { setValuesByRecipe((all) => ({ ...all, [recipe.name]: formDefaults(recipe.schema) })); setWorkerErrors({}); }}>
            Reset to defaults
          </button>
        </div>
      )}
      {recipe && <ConfigForm schema={recipe.schema} values={values} errors={errors} disabled={active} onChange={setValue} />}
    </div>
  );
}
