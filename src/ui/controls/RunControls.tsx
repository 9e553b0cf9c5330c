// Run setup and controls: pick a recipe, its models (sandbox, hub id, URL, local folder), judge and
// algorithm, fill the rest of its config form (generated from the schema the worker lists), seed
// and max steps, then Start / Pause / Resume / Step / Stop. The whole setup lives in the address
// bar (a shareable link; opening one fills the form, bad values marked on their fields). The run
// itself lives in the engine worker; its StepReports go into the run store. This is the one place
// a run is driven from: a run resumed from a checkpoint, or the one that was live before a reload
// (shown paused at its newest checkpoint), is stepped, paused and stopped here too.
import { useEffect, useMemo, useState } from 'react';
import { validateField } from '../../contract/schema';
import { modelRefError } from '../../contract/modelRef';
import { fieldKind } from './fieldKinds';
import { engine, useEngine } from '../../store/engineStore';
import { IDLE_STATUS, useSetup, valuesOf } from '../../store/setupStore';
import { decodeSetup, encodeSetup, maxStepsError, type FormValues } from '../../store/setupUrl';
import type { RecipeListing } from '../../contract/workerApi';
import { ConfigForm } from './ConfigForm';
import { DiscardButton } from './DiscardButton';
import { formatDuration, progressOf } from './progress';
import { atLimit, resumeOrStep, runCommand, showInterruptedRun, startRun, stepLimit, stopRun } from './runActions';
import './setup.css';

/** Client-side check of each field (the same rules the worker applies). */
function fieldErrors(recipe: RecipeListing | undefined, values: FormValues): Record<string, string> {
  const out: Record<string, string> = {};
  if (!recipe) return out;
  for (const [k, f] of Object.entries(recipe.schema)) {
    if (!(k in values)) continue;
    const r = validateField(k, f, values[k]);
    if ('error' in r) out[k] = r.error;
    else if (fieldKind(k, f) === 'model') {
      const bad = modelRefError(String(values[k]));
      if (bad) out[k] = `field "${k}": ${bad}`;
    }
  }
  return out;
}

/** Lists the recipes when the engine is ready, applies the opening link once, then mirrors the setup into the address bar. */
function useRecipesAndLink() {
  const phase = useEngine((s) => s.phase);
  const s = useSetup();
  const [linkApplied, setLinkApplied] = useState(false);
  useEffect(() => {
    const { patch, setRecipes } = useSetup.getState();
    if (useSetup.getState().detached === null) patch({ status: IDLE_STATUS, busy: null });
    if (phase !== 'ready') return;
    let live = true;
    void engine()
      .listRecipes()
      .then((list) => {
        if (!live) return;
        setRecipes(list);
        if (!linkApplied) {
          const d = decodeSetup(window.location.search, Object.fromEntries(list.map((r) => [r.name, r.schema])));
          if (d) useSetup.getState().applyLink(d);
          setLinkApplied(true);
        }
        // The run that was live when the page (or the engine, at a backend change) went away comes back here, paused.
        void showInterruptedRun().catch((e: Error) =>
          patch({ commandError: `Could not read the run that was live before the reload: ${e.message}` }),
        );
      })
      .catch((e: Error) => live && patch({ commandError: e.message }));
    return () => {
      live = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps -- the link is read once, on the first listing
  }, [phase]);

  const recipe = s.recipes.find((r) => r.name === s.recipeName);
  const values = valuesOf(s, s.recipeName);
  const search = recipe
    ? encodeSetup(
        { recipe: recipe.name, values, seed: s.seed, maxSteps: s.maxSteps, atMax: s.atMax },
        recipe.schema,
        window.location.search,
      )
    : null;
  useEffect(() => {
    if (linkApplied && search && search !== window.location.search)
      window.history.replaceState(
        window.history.state,
        '',
        `${window.location.pathname}${search}${window.location.hash}`,
      );
  }, [linkApplied, search]);
  return { recipe, values, shareUrl: search ? `${window.location.origin}${window.location.pathname}${search}` : null };
}

function ShareLink({ url }: { url: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <div className="share-row">
      <input
        data-testid="share-url"
        readOnly
        value={url}
        aria-label="Shareable link to this setup"
        onFocus={(e) => e.target.select()}
      />
      <button
        type="button"
        data-testid="share-copy"
        onClick={() => {
          void navigator.clipboard?.writeText(url).then(
            () => setCopied(true),
            () => setCopied(false),
          );
          setTimeout(() => setCopied(false), 1500);
        }}
      >
        {copied ? 'Copied' : 'Copy link'}
      </button>
    </div>
  );
}

export function RunControls() {
  const phase = useEngine((s) => s.phase);
  const s = useSetup();
  const { recipe, values, shareUrl } = useRecipesAndLink();
  const localErrors = useMemo(() => fieldErrors(recipe, values), [recipe, values]);
  const errors = { ...s.linkErrors, ...s.workerErrors, ...localErrors };
  const status = s.status;
  const busy = s.busy;
  const active = status.state === 'running' || status.state === 'paused';
  const ready = phase === 'ready';
  const setupKeys = new Set(['seed', 'steps', 'at', 'recipe']);
  const extraErrors = Object.entries(errors).filter(
    ([k]) => !setupKeys.has(k) && !(recipe && Object.hasOwn(recipe.schema, k)),
  );
  const extraKeys = new Set(extraErrors.map(([k]) => k));
  const stepsErr = maxStepsError(s.maxSteps) ?? errors.steps ?? null;
  const tooBig = recipe
    ? Object.entries(s.fits).filter(
        ([k, f]) => Object.hasOwn(recipe.schema, k) && f.state === 'too-big' && f.ref === values[k],
      )
    : [];
  const [confirmBig, setConfirmBig] = useState(false);
  const limit = stepLimit(s.maxSteps);
  const progress = status.state === 'running' ? progressOf(s.stepTimes, status.step, limit) : null;
  const limitReached = status.state === 'paused' && atLimit(status.step, s.maxSteps);
  // What stops a start, by field: the form's own checks, seed and max steps, and the worker's refusals.
  const invalid = Object.keys(errors).filter(
    (k) => (recipe && Object.hasOwn(recipe.schema, k)) || k === 'seed' || (k === 'steps' && stepsErr !== null),
  );
  if (stepsErr && !invalid.includes('steps')) invalid.push('steps');
  // A link's unknown field (a typo such as c.groupSzie) blocks Start too: running at the default
  // would silently drop what the link meant. Dropping them (below) lets the run start.
  for (const [k] of extraErrors) if (k in s.linkErrors) invalid.push(k);

  const start = () => {
    if (invalid.length > 0) {
      // An older run's error says nothing about this start: the message beside Start replaces it.
      useSetup
        .getState()
        .patch({ startTried: true, commandError: null, ...(status.state === 'error' ? { status: IDLE_STATUS } : {}) });
      return;
    }
    useSetup.getState().patch({ startTried: false });
    if (tooBig.length > 0 && !confirmBig) {
      setConfirmBig(true);
      return;
    }
    setConfirmBig(false);
    void startRun();
  };

  return (
    <div className="run-controls" data-testid="run-controls">
      <div className="controls-row">
        <label className="control">
          Recipe
          <select
            data-testid="recipe-select"
            value={s.recipeName}
            disabled={!ready || active || busy !== null}
            onChange={(e) => s.setRecipe(e.target.value)}
          >
            {s.recipes.map((r) => (
              <option key={r.name} value={r.name}>
                {r.name}
              </option>
            ))}
          </select>
        </label>
        <label className="control">
          Seed
          <input
            data-testid="run-seed"
            className={`seed${errors.seed ? ' invalid' : ''}`}
            type="text"
            inputMode="numeric"
            value={s.seed}
            disabled={active || busy !== null}
            aria-invalid={Boolean(errors.seed)}
            onChange={(e) => s.setSeed(e.target.value)}
          />
        </label>
        <label className="control">
          Max steps
          <input
            data-testid="run-max-steps"
            className={`seed${stepsErr ? ' invalid' : ''}`}
            type="text"
            inputMode="numeric"
            placeholder="no limit"
            value={s.maxSteps}
            disabled={status.state === 'running' || busy !== null}
            title={status.state === 'paused' ? 'raise it to let the paused run go on' : undefined}
            aria-invalid={Boolean(stepsErr)}
            onChange={(e) => s.setMaxSteps(e.target.value)}
          />
        </label>
        <label className="control">
          then
          <select
            data-testid="run-at-max"
            value={s.atMax}
            disabled={active || busy !== null}
            onChange={(e) => s.setAtMax(e.target.value === 'stop' ? 'stop' : 'pause')}
          >
            <option value="pause">pause</option>
            <option value="stop">stop</option>
          </select>
        </label>
      </div>
      {errors.seed && (
        <div className="error small" data-testid="field-error-seed">
          {errors.seed}
        </div>
      )}
      {stepsErr && (
        <div className="error small" data-testid="field-error-steps">
          {stepsErr}
        </div>
      )}
      {errors.at && (
        <div className="error small" data-testid="field-error-at">
          {errors.at}
        </div>
      )}
      {errors.recipe && (
        <div className="error small" data-testid="field-error-recipe">
          {errors.recipe}
        </div>
      )}
      {!ready && <p className="empty">Waiting for the engine…</p>}
      {recipe && (
        <p className="recipe-about small" data-testid="recipe-about">
          <strong>{recipe.title}</strong> · {recipe.source}. {recipe.description}
        </p>
      )}

      {tooBig.length > 0 && (
        <div className="fit-banner" role="alert" data-testid="fit-banner">
          {tooBig.map(([k, f]) => (
            <div key={k}>
              ⚠ <code>{k}</code> ({f.ref}) will probably not fit this device: {f.problems.join('; ')}
            </div>
          ))}
          {confirmBig && <div>Press Start again to load it anyway.</div>}
        </div>
      )}

      <div className="controls-row run-buttons">
        <button
          type="button"
          data-testid="run-start"
          disabled={!ready || !recipe || active || busy !== null}
          title={active ? 'A run is live: Stop it first (Stop saves its last state)' : undefined}
          onClick={start}
        >
          {confirmBig ? 'Start anyway' : 'Start'}
        </button>
        <button
          type="button"
          data-testid="run-pause"
          disabled={status.state !== 'running' || busy !== null}
          onClick={() => void runCommand('pausing', (e) => e.pauseRun())}
        >
          Pause
        </button>
        <button
          type="button"
          data-testid="run-resume"
          disabled={!ready || status.state !== 'paused' || limitReached || busy !== null}
          onClick={() => void resumeOrStep(false)}
        >
          Resume
        </button>
        <button
          type="button"
          data-testid="run-step"
          disabled={!ready || status.state !== 'paused' || limitReached || busy !== null}
          onClick={() => void resumeOrStep(true)}
        >
          Step
        </button>
        <button
          type="button"
          data-testid="run-stop"
          disabled={!active || busy === 'stopping'}
          title="Stop the run; its last state is saved as a checkpoint (export it, or resume it later)"
          onClick={() => void stopRun()}
        >
          Stop
        </button>
        {active && s.detached === null && (
          <DiscardButton disabled={busy === 'stopping'} runId={status.runId} onDiscard={() => void stopRun(true)} />
        )}
        <span
          className={`run-state run-state-${status.state}`}
          data-testid="run-state"
          data-state={status.state}
          data-step={status.step}
          data-stepping={status.stepping ? 'true' : 'false'}
          data-recipe={status.recipe ?? ''}
          data-run={status.runId ?? ''}
          role="status"
        >
          {status.recipe && <span className="small">{status.recipe} · </span>}
          {status.state}
          {' · step '}
          <span data-testid="run-step-count">{status.step}</span>
          {s.maxSteps && !maxStepsError(s.maxSteps) ? ` / ${s.maxSteps}` : ''}
          {(busy ?? status.detail) && <span className="small"> · {busy ?? status.detail}</span>}
          {progress?.stepsPerSec != null && (
            <span className="small" data-testid="run-rate" data-steps-per-sec={progress.stepsPerSec}>
              {' · '}
              {progress.stepsPerSec >= 1
                ? `${progress.stepsPerSec.toFixed(1)} steps/s`
                : `${(1 / progress.stepsPerSec).toFixed(1)} s/step`}
              {progress.remainingMs != null && ` · ~${formatDuration(progress.remainingMs)} left`}
            </span>
          )}
          {progress?.stepsPerSec == null && s.lastStepMs !== null && status.runId && (
            <span className="small" data-testid="run-step-time">
              {' · '}last step {(s.lastStepMs / 1000).toFixed(1)} s
            </span>
          )}
        </span>
      </div>
      {s.startTried && invalid.length > 0 && !active && (
        <div className="error" role="alert" data-testid="run-start-error">
          Not started: {invalid.length === 1 ? 'this field is' : `${invalid.length} fields are`} invalid:{' '}
          {invalid.join(', ')} (marked below).
        </div>
      )}
      {active && !s.detached && (
        <p className="small" data-testid="run-live-note">
          A run is live: Stop it (its last state is saved) before starting another.
        </p>
      )}
      {limitReached && (
        <div className="small" role="status" data-testid="run-limit-note">
          Reached the step limit ({limit}): raise Max steps to go on, or Stop.
        </div>
      )}
      {status.state === 'error' && status.error && (
        <div className="error" role="alert" data-testid="run-error">
          Run failed: {status.error}
        </div>
      )}
      {s.commandError && (
        <div className="error" role="alert" data-testid="run-command-error">
          {s.commandError}
        </div>
      )}
      {extraErrors.length > 0 && (
        <div className="link-errors" data-testid="extra-errors">
          Not applied (Start is blocked until these are fixed in the link or dropped):
          <ul>
            {extraErrors.map(([k, m]) => (
              <li key={k} className="error small" data-testid={`field-error-${k}`}>
                {m}
              </li>
            ))}
          </ul>
          <button
            type="button"
            data-testid="drop-link-errors"
            onClick={() =>
              useSetup.setState((st) => ({
                linkErrors: Object.fromEntries(Object.entries(st.linkErrors).filter(([k]) => !extraKeys.has(k))),
              }))
            }
          >
            Drop them
          </button>
        </div>
      )}
      {shareUrl && <ShareLink url={shareUrl} />}

      {recipe && (
        <div className="config-head">
          <span className="small">
            Config — {Object.keys(recipe.schema).length} fields; changed fields are highlighted.
          </span>
          <button
            type="button"
            className="link-button"
            data-testid="config-reset"
            disabled={active}
            onClick={() => s.resetValues()}
          >
            Reset to defaults
          </button>
        </div>
      )}
      {recipe && (
        <ConfigForm
          recipe={recipe.name}
          schema={recipe.schema}
          values={values}
          errors={errors}
          disabled={active}
          onChange={s.setValue}
        />
      )}
    </div>
  );
}
