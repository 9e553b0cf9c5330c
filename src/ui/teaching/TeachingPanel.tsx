// Teaching mode's panel: for the recipe on screen (the active run's, else the one chosen in the
// setup), what the source system does, its reward formula with the latest rollout's values
// plugged in, the weights in it, and what to watch, with each metric's latest value. The guided
// demo button starts the sandbox arena in one click.
import { useVocabulary } from '../arena/useVocabulary';
import { shownStep } from '../../contract/stepCount';
import { useState } from 'react';
import { useRunStore } from '../../store/runStore';
import { useSetup, valuesOf } from '../../store/setupStore';
import { DEMO_RECIPES, startGuidedDemo } from './guidedDemo';
import { latestMetrics, negativeKlNote, plugFormula } from './liveFormula';
import './teaching.css';

const fmt = (x: number) =>
  Number.isInteger(x) ? String(x) : Math.abs(x) < 1e-3 && x !== 0 ? x.toExponential(2) : x.toFixed(3);

function useLatest() {
  useRunStore((s) => s.version);
  const d = useRunStore.getState();
  const run = d.activeRunId ? d.runs[d.activeRunId] : undefined;
  const mine = d.samples.filter((e) => e.runId === d.activeRunId);
  const lastStep = mine.reduce((m, e) => Math.max(m, e.step), -1);
  const entry = mine.find((e) => e.step === lastStep);
  return { run, entry, ...latestMetrics(run) };
}

export function TeachingPanel() {
  const setup = useSetup();
  const { run, entry, step, metrics } = useLatest();
  const [demoBusy, setDemoBusy] = useState(false);
  const active = setup.status.state === 'running' || setup.status.state === 'paused';
  // The recipe of the run going on (running or paused); otherwise the one selected in the setup, so
  // picking a recipe after a run stopped shows its lesson. A finished run, the recorded example or
  // a replay only lends its values when it is of that recipe.
  const recipe = (active && setup.status.recipe) || setup.recipeName || (run?.info.recipe ?? '');
  const lesson = setup.recipes.find((r) => r.name === recipe)?.lesson;
  const weightsFrom =
    setup.runConfig && setup.runConfig.recipe === recipe ? setup.runConfig.values : valuesOf(setup, recipe);
  const same = run?.info.recipe === recipe;
  const plugged = lesson && same && entry ? plugFormula(lesson, entry.sample) : null;
  // The reward's KL term is −β · KL: a positive term is a negative KL estimate.
  const klTerm = plugged?.terms.find((t) => t.key === 'kl');
  const klNote = klTerm && klTerm.value > 0 ? negativeKlNote(-klTerm.value, klTerm) : null;
  const vocab = useVocabulary(recipe);
  const demoName = DEMO_RECIPES.find((n) => setup.recipes.some((r) => r.name === n));

  return (
    <div className="teaching" data-testid="teaching" data-recipe={recipe}>
      <div className="teaching-demo">
        <button
          type="button"
          data-testid="guided-demo"
          disabled={!demoName || active || demoBusy || setup.busy !== null}
          onClick={() => {
            setDemoBusy(true);
            void startGuidedDemo().finally(() => setDemoBusy(false));
          }}
        >
          ▶ Guided demo{demoName ? ` (${demoName})` : ''}
        </button>
        <span className="small">
          {demoName === 'arena'
            ? 'Starts the sandbox arena — attacker and defender take turns learning — with small, fast settings; it pauses after 60 steps.'
            : demoName
              ? 'The arena recipe is not registered in this build: the demo runs redteam instead.'
              : 'Waiting for the recipe list…'}
        </span>
      </div>
      {!lesson && <p className="empty">No explanation for “{recipe}” yet.</p>}
      {lesson && (
        <>
          <h3 data-testid="lesson-title">{lesson.title}</h3>
          <p>{lesson.what}</p>
          <h4>Reward</h4>
          <pre className="formula" data-testid="lesson-formula">
            {lesson.formula}
          </pre>
          {lesson.weights.length > 0 && (
            <p className="small weights" data-testid="lesson-weights">
              {lesson.weights
                .filter((w) => w in weightsFrom)
                .map((w) => (
                  <span key={w} data-weight={w}>
                    <code>{w}</code> = {String(weightsFrom[w])}
                  </span>
                ))}
            </p>
          )}
          {plugged ? (
            <div
              className="live-formula"
              data-testid="live-formula"
              data-step={entry!.step}
              data-reward={plugged.reported}
              data-combined={plugged.combined ?? ''}
            >
              <div className="small">
                Latest {vocab.rollout} (step {shownStep(entry!.step)}
                {entry!.phase ? `, ${entry!.phase} phase` : ''}, {entry!.sample.verdict.label}):
              </div>
              <ul className="terms">
                {plugged.terms.map((t) => (
                  <li key={t.key} data-testid={`live-term-${t.key}`} data-value={t.value}>
                    <span className="term-name">{t.name}</span> <span className="term-value">{t.shown}</span>
                  </li>
                ))}
              </ul>
              <div className="expression" data-testid="live-expression">
                R = {plugged.expression}
                {plugged.combined !== null && Math.abs(plugged.combined - plugged.reported) > 1e-6 && (
                  <span className="error"> (the recipe reported {fmt(plugged.reported)})</span>
                )}
              </div>
              {klNote && (
                <p className="small" data-testid="kl-note">
                  {klNote}
                </p>
              )}
            </div>
          ) : lesson.noReward ? (
            <p className="small" data-testid="live-formula-none">
              No reward to plug in: this recipe learns from examples, not from a reward. Its loss is under What to
              watch.
            </p>
          ) : (
            <p className="small" data-testid="live-formula-empty">
              Start a run (or the guided demo) to see the latest {vocab.rollout}'s values plugged in.
            </p>
          )}
          <h4>What to watch{same && step !== null ? ` (step ${shownStep(step)})` : ''}</h4>
          <ul className="watch" data-testid="lesson-watch">
            {lesson.watch.map((w) => {
              const m = w.metric && same ? metrics[w.metric] : undefined;
              return (
                <li key={w.text}>
                  {w.text}
                  {w.metric && (
                    <span className="metric" data-testid={`watch-${w.metric}`} data-value={m?.value ?? ''}>
                      {' '}
                      <code>{w.metric}</code> = {m ? fmt(m.value) : '—'}
                      {m && step !== null && m.step !== step ? ` (step ${shownStep(m.step)})` : ''}
                    </span>
                  )}
                  {w.metric?.startsWith('kl/') && m && negativeKlNote(m.value) && (
                    <span className="small" data-testid={`kl-note-${w.metric}`}>
                      {' '}
                      ({negativeKlNote(m.value)})
                    </span>
                  )}
                </li>
              );
            })}
          </ul>
        </>
      )}
    </div>
  );
}
