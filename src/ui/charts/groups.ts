// Which metrics each small chart shows. Names follow DESIGN's `area/name` convention.

export interface ChartGroup {
  id: string;
  title: string;
  /** y-axis label with units. */
  yLabel: string;
  /** Metric names this chart takes: exact names or `area/` prefixes. */
  match: string[];
  /** Shown when no run has a metric of the group. */
  absent: string;
}

export const CHART_GROUPS: ChartGroup[] = [
  {
    id: 'reward',
    title: 'Reward',
    yLabel: 'reward (per rollout)',
    match: ['reward/'],
    absent: 'No reward/* metric in the shown runs.',
  },
  {
    id: 'judge',
    title: 'Attack success rate',
    yLabel: 'fraction of rollouts',
    match: ['judge/'],
    absent: 'No judge/* metric in the shown runs.',
  },
  {
    id: 'kl',
    title: 'KL to the reference',
    yLabel: 'KL (nats / token)',
    match: ['kl/'],
    absent: 'No kl/* metric in the shown runs.',
  },
  {
    id: 'entropy',
    title: 'Entropy',
    yLabel: 'nats / token',
    match: ['entropy/'],
    absent: 'No entropy/* metric in the shown runs.',
  },
  { id: 'loss', title: 'Losses', yLabel: 'loss', match: ['loss/'], absent: 'No loss/* metric in the shown runs.' },
  {
    id: 'grad',
    title: 'Gradient norm',
    yLabel: 'global L2 norm',
    match: ['grad/'],
    absent: 'No grad/* metric in the shown runs.',
  },
  {
    id: 'dual',
    title: 'Dual variable λ',
    yLabel: 'λ',
    match: ['dual/'],
    absent: 'No dual/λ here: the minmax recipe records it.',
  },
  {
    id: 'tokens',
    title: 'Throughput',
    yLabel: 'tokens / s',
    match: ['perf/tokens_per_s'],
    absent: 'No perf/tokens_per_s in the shown runs.',
  },
  {
    id: 'stepms',
    title: 'Step time',
    yLabel: 'ms / step',
    match: ['perf/step_ms'],
    absent: 'No perf/step_ms in the shown runs.',
  },
  {
    id: 'judgetime',
    title: 'Judge share of the step',
    yLabel: 'fraction of step time',
    match: ['perf/judge_share', 'perf/judge_share/'],
    absent: 'No perf/judge_share in the shown runs.',
  },
];

/** Metrics of no group land in a last "other" chart, shown only when there are some. */
export const OTHER_GROUP: ChartGroup = { id: 'other', title: 'Other metrics', yLabel: 'value', match: [], absent: '' };

function matches(group: ChartGroup, name: string): boolean {
  return group.match.some((m) => (m.endsWith('/') ? name.startsWith(m) : name === m));
}

/** The metric names (sorted) of `names` that belong to `group`. */
export function groupMetrics(group: ChartGroup, names: string[]): string[] {
  if (group.id === OTHER_GROUP.id) return names.filter((n) => !CHART_GROUPS.some((g) => matches(g, n))).sort();
  return names.filter((n) => matches(group, n)).sort();
}
