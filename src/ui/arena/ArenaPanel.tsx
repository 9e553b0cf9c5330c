import { useMemo, useState } from 'react';
import { matchesFilter, sampleSteps, useRunStore, type SampleFilter } from '../../store/runStore';
import { entropyScaleMax } from '../heatmap/colourScale';
import { EntropyLegend } from '../heatmap/EntropyLegend';
import { EntropyMatrix } from '../heatmap/EntropyMatrix';
import { ExampleNotice } from '../runlist/ExampleNotice';
import { JudgeTimes, judgeTimesAt } from './JudgeTimes';
import { SampleCard } from './SampleCard';
import { useVocabulary } from './useVocabulary';
import { shownStep } from '../../contract/stepCount';
import { useSetup } from '../../store/setupStore';
import type { Vocabulary } from '../../contract/vocabulary';

/** The filter buttons in the run's words: only "All" where its recipe scores no outcome. */
const filtersOf = (v: Vocabulary): [SampleFilter, string][] =>
  v.filters
    ? [
        ['all', 'All'],
        ['successes', v.filters[0]],
        ['failures', v.filters[1]],
      ]
    : [['all', 'All']];

/** The latest rollouts as conversations, a step picker, the success filter, and the pinned
 *  prompt's entropy over training. */
export function ArenaPanel() {
  const samples = useRunStore((s) => s.samples);
  const activeRunId = useRunStore((s) => s.activeRunId);
  const filter = useRunStore((s) => s.filter);
  const pinnedKey = useRunStore((s) => s.pinnedKey);
  const pinRows = useRunStore((s) => s.pinRows);
  const runLabel = useRunStore((s) => (s.activeRunId ? s.runs[s.activeRunId]?.info.label : undefined));
  const runMetrics = useRunStore((s) => (s.activeRunId ? s.runs[s.activeRunId]?.metrics : undefined));
  const recipe = useRunStore((s) => (s.activeRunId ? s.runs[s.activeRunId]?.info.recipe : undefined));
  // Before any run: the words of the recipe picked in Run setup.
  const formRecipe = useSetup((s) => s.recipeName);
  const vocab = useVocabulary(recipe ?? formRecipe);
  const { setFilter, pin } = useRunStore.getState();
  /** null: follow the latest step. */
  const [chosenStep, setChosenStep] = useState<number | null>(null);

  const steps = useMemo(() => sampleSteps({ samples, activeRunId }), [samples, activeRunId]);
  const step = chosenStep !== null && steps.includes(chosenStep) ? chosenStep : steps[steps.length - 1];
  const atStep = useMemo(
    () => samples.filter((e) => e.runId === activeRunId && e.step === step),
    [samples, activeRunId, step],
  );
  // A filter left on from a run of another world shows everything here.
  const shownFilter = vocab.filters ? filter : 'all';
  const shown = atStep.filter((e) => matchesFilter(e, shownFilter));
  const counts = {
    all: atStep.length,
    successes: atStep.filter((e) => e.sample.verdict.success).length,
    failures: atStep.filter((e) => !e.sample.verdict.success).length,
  };
  const scaleMax = useMemo(
    () =>
      entropyScaleMax(
        (function* () {
          for (const e of atStep) for (const m of e.sample.messages) if (m.tokens) yield* m.tokens.entropy;
          for (const r of pinRows) yield* r.entropy;
        })(),
      ),
    [atStep, pinRows],
  );

  if (activeRunId === null || steps.length === 0) {
    return (
      <p className="empty" data-testid="arena-empty">
        {vocab.empty}
      </p>
    );
  }
  const idx = steps.indexOf(step);
  return (
    <div className="arena">
      <ExampleNotice where="arena" />
      <div className="arena-controls">
        <span className="small">
          run <strong>{runLabel}</strong>
        </span>
        <label className="slider">
          Step
          <input
            type="range"
            min={0}
            max={steps.length - 1}
            value={idx}
            onChange={(e) => {
              const i = Number(e.target.value);
              setChosenStep(i === steps.length - 1 ? null : steps[i]);
            }}
            aria-valuetext={`step ${shownStep(step)}`}
            data-testid="arena-step"
          />
          <output>
            {shownStep(step)}
            {chosenStep === null ? ' (latest)' : ''}
          </output>
        </label>
        <JudgeTimes times={runMetrics ? judgeTimesAt(runMetrics, step) : []} />
        <div className="segmented" role="radiogroup" aria-label="Show rollouts">
          {filtersOf(vocab).map(([f, label]) => (
            <button
              key={f}
              type="button"
              role="radio"
              aria-checked={shownFilter === f}
              onClick={() => setFilter(f)}
              data-testid={`filter-${f}`}
            >
              {label} <span className="count">{counts[f]}</span>
            </button>
          ))}
        </div>
        <EntropyLegend max={scaleMax} />
      </div>
      <div className="arena-body">
        <div className="samples">
          {shown.length === 0 && <p className="empty">No rollout at step {shownStep(step)} matches this filter.</p>}
          {shown.map((e) => (
            <SampleCard
              key={`${e.runId}/${e.step}/${e.sample.id}`}
              entry={e}
              scaleMax={scaleMax}
              pinned={e.sample.promptKey === pinnedKey}
              onPin={pin}
              vocab={vocab}
            />
          ))}
        </div>
        <aside className="pinned" data-testid="pinned" aria-label="Pinned prompt">
          <h3>Pinned prompt over training</h3>
          {pinnedKey === null ? (
            <p className="small">
              Pin a rollout to follow its prompt across steps: each row is a step, each column a token position of the
              generated answer, coloured by entropy.
            </p>
          ) : (
            <>
              <p className="small">
                <code data-testid="pinned-key">{pinnedKey}</code> · {pinRows.length} steps{' '}
                <button type="button" className="mini" onClick={() => pin(null)}>
                  Unpin
                </button>
              </p>
              <EntropyMatrix rows={pinRows} scaleMax={scaleMax} />
            </>
          )}
        </aside>
      </div>
    </div>
  );
}
