import { useMemo } from 'react';
import { useRunStore } from '../../store/runStore';
import { metricTableCsv, metricNames } from '../../store/runStore';
import { ExampleNotice } from '../runlist/ExampleNotice';
import { ReplayLoader } from '../runlist/ReplayLoader';
import { RunLegend } from '../runlist/RunLegend';
import { recipeSections, visibleRuns } from './chartData';
import { saveBlob } from './download';
import { CHART_GROUPS, groupMetrics, OTHER_GROUP, type ChartGroup } from './groups';
import { MetricChart } from './MetricChart';
import { useVocabulary } from '../arena/useVocabulary';
import type { Vocabulary } from '../../contract/vocabulary';

const JUDGE_GROUP = CHART_GROUPS.find((g) => g.id === 'judge')!;
const JUDGE_TIME_GROUP = CHART_GROUPS.find((g) => g.id === 'judgetime')!;

/**
 * A recipe's charts in its world's words: the judge/* chart is "Attack success rate" where a
 * safety judge scores attacks, and left out where none does (minmax, rlhf, attacker-sft), unless
 * a run reports judge/* anyway (issue 41: their rows showed an empty "Attack success rate"). There
 * the judge-share chart shows only if a judge ran (a perf/judge_share/<judge> metric): every recipe
 * reports perf/judge_share, 0 without a judge, which drew a judge's share of attacker-sft's step.
 */
function groupsFor(vocabulary: Vocabulary, has: { judge: boolean; timedJudge: boolean }): ChartGroup[] {
  const title = vocabulary.judgeChart ?? (has.judge ? 'Judge metrics' : null);
  return CHART_GROUPS.flatMap((g) => {
    if (g === JUDGE_GROUP) return title === null ? [] : [{ ...g, title }];
    if (g === JUDGE_TIME_GROUP && vocabulary.judgeChart === null && !has.timedJudge) return [];
    return [g];
  });
}

/**
 * Runs legend, smoothing, replay and CSV export above one small live chart per metric group, a
 * row of them per recipe shown (each in its own units; chartData.ts says why).
 */
export function ChartsPanel() {
  // Recipe -> run ids, as one string so the selector's value compares by content.
  const sectionsKey = useRunStore((s) => JSON.stringify(recipeSections(s)));
  const sections = JSON.parse(sectionsKey) as { recipe: string; runIds: string[] }[];
  const smoothing = useRunStore((s) => s.smoothing);
  const setSmoothing = useRunStore((s) => s.setSmoothing);
  const hasRuns = useRunStore((s) => s.order.length > 0);

  const exportCsv = () => {
    const s = useRunStore.getState();
    saveBlob(new Blob([metricTableCsv(s, visibleRuns(s))], { type: 'text/csv' }), 'sparring-metrics.csv');
  };

  return (
    <div className="charts">
      <ExampleNotice where="charts" />
      <div className="toolbar">
        <RunLegend />
        <div className="toolbar-row">
          <label className="slider" htmlFor="smoothing">
            Smoothing (EMA)
            <input
              id="smoothing"
              type="range"
              min={0}
              max={0.99}
              step={0.01}
              value={smoothing}
              onChange={(e) => setSmoothing(Number(e.target.value))}
              data-testid="smoothing"
              aria-valuetext={smoothing === 0 ? 'off, raw values' : `${smoothing.toFixed(2)}`}
            />
            <output htmlFor="smoothing">{smoothing === 0 ? 'off' : smoothing.toFixed(2)}</output>
          </label>
          <ReplayLoader />
          <button type="button" onClick={exportCsv} disabled={!hasRuns} data-testid="export-csv">
            Export CSV
          </button>
        </div>
      </div>
      {sections.length === 0 && (
        <div className="chart-grid">
          {CHART_GROUPS.map((g) => (
            <MetricChart key={g.id} group={g} runKey="" />
          ))}
        </div>
      )}
      {sections.map((sec) => (
        <RecipeCharts key={sec.recipe} recipe={sec.recipe} runIds={sec.runIds} titled={sections.length > 1} />
      ))}
      <p className="small">
        x: steps done (as the run status counts them). Drag across a chart to zoom, double-click to reset. Faint lines
        are raw values under the smoothed curve.
      </p>
    </div>
  );
}

/** One recipe's charts: its runs overlaid, on axes in its own units. */
function RecipeCharts({ recipe, runIds, titled }: { recipe: string; runIds: string[]; titled: boolean }) {
  const runKey = runIds.join('\n');
  const hasOther = useRunStore((s) => groupMetrics(OTHER_GROUP, metricNames(s, runIds)).length > 0);
  const labels = useRunStore((s) => runIds.map((id) => s.runs[id]?.info.label ?? id).join(', '));
  const judge = useRunStore((s) => groupMetrics(JUDGE_GROUP, metricNames(s, runIds)).length > 0);
  const timedJudge = useRunStore((s) => metricNames(s, runIds).some((n) => n.startsWith('perf/judge_share/')));
  const vocabulary = useVocabulary(recipe);
  // One list per layout: MetricChart rebuilds its plot when its group object changes.
  const groups = useMemo(() => groupsFor(vocabulary, { judge, timedJudge }), [vocabulary, judge, timedJudge]);
  return (
    <section className="recipe-charts" data-testid="recipe-charts" data-recipe={recipe}>
      {titled && (
        <h3 className="recipe-charts-head">
          {recipe}: {labels}
        </h3>
      )}
      <div className="chart-grid">
        {groups.map((g) => (
          <MetricChart key={g.id} group={g} runKey={runKey} />
        ))}
        {hasOther && <MetricChart group={OTHER_GROUP} runKey={runKey} />}
      </div>
    </section>
  );
}
