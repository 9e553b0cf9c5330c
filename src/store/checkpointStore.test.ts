import { describe, expect, it } from 'vitest';
import type { CheckpointSummary } from '../contract/storageFormat';
import { eventMessage, groupByRun, loadPolicy, metricSummary, storageLine } from './checkpointStore';

const ck = (id: string, time: number, step: number, nonFinite: string | null = null): CheckpointSummary => ({
  format: 1,
  id,
  runId: `run-${id}`,
  name: id,
  step,
  time,
  metrics: {},
  sizeBytes: 10,
  nonFinite,
  tensorCount: 1,
});

describe('checkpoint panel helpers', () => {
  it('groups checkpoints by run: the run saved last first, each run highest step first', () => {
    const c = (id: string, runId: string, time: number, step: number) => ({ ...ck(id, time, step), runId });
    const groups = groupByRun([c('a1', 'A', 100, 2), c('b1', 'B', 150, 5), c('a2', 'A', 200, 4), c('b2', 'B', 120, 1)]);
    expect(groups.map((g) => [g.runId, g.items.map((x) => x.id)])).toEqual([
      ['A', ['a2', 'a1']],
      ['B', ['b1', 'b2']],
    ]);
    expect(groupByRun([])).toEqual([]);
  });

  it('says every byte the lab keeps, the share of the quota, and whether the browser may evict it', () => {
    const none = { runs: 0, runLogBytes: 0, orphanChunks: 0, orphanBytes: 0, persisted: null };
    expect(
      storageLine({
        ...none,
        checkpoints: 2,
        checkpointBytes: 3 * 1024 * 1024,
        usage: 512 * 1024 * 1024,
        quota: 2048 * 1024 * 1024,
      }),
    ).toBe('2 checkpoints, 3.0 MiB; 0 run logs, 0 B; this site uses 512.0 MiB of 2.0 GiB (25%)');
    expect(storageLine({ ...none, checkpoints: 1, checkpointBytes: 100, usage: null, quota: null })).toBe(
      '1 checkpoint, 100 B; 0 run logs, 0 B; the browser does not report its storage quota',
    );
    expect(
      storageLine({
        checkpoints: 1,
        checkpointBytes: 100,
        runs: 1,
        runLogBytes: 1536,
        orphanChunks: 2,
        orphanBytes: 2048,
        usage: null,
        quota: null,
        persisted: false,
      }),
    ).toBe(
      '1 checkpoint, 100 B; 1 run log, 1.5 KiB; 2 chunks of an interrupted save, 2.0 KiB (removed at the next start); the browser does not report its storage quota; ' +
        'storage is not persistent: the browser may clear it when disk space runs low',
    );
    expect(
      storageLine({ ...none, checkpoints: 0, checkpointBytes: 0, usage: null, quota: null, persisted: true }),
    ).toMatch(/; storage is persistent$/);
  });

  it('words a quota failure as storage full, nothing lost, run continues', () => {
    const m = eventMessage({
      kind: 'failed',
      reason: 'autosave',
      runId: 'r',
      step: 4,
      code: 'quota',
      message: 'Checkpoint "step 4" (run r, step 4) was not saved: the browser storage quota is exceeded.',
    });
    expect(m.error).toBe(true);
    expect(m.text).toMatch(/^Storage is full: checkpoint not saved\. .*quota is exceeded\. The run continues\.$/);
    expect(
      eventMessage({
        kind: 'saved',
        reason: 'pause',
        runId: 'r',
        step: 4,
        id: 'x',
        name: 'pause · step 4',
        sizeBytes: 2048,
      }),
    ).toEqual({ text: 'Saved "pause · step 4" (2.0 KiB) of run r.', error: false });
  });

  it('reads the autosave policy from storage, falling back on bad values', () => {
    const from = (v: string | null) => loadPolicy({ getItem: () => v });
    expect(from('{"everySteps":3,"onPause":false,"keep":2}')).toEqual({ everySteps: 3, onPause: false, keep: 2 });
    expect(from('{"everySteps":3,"onPause":false}')).toEqual({ everySteps: 3, onPause: false, keep: 5 });
    expect(from('{"everySteps":-1,"onPause":false}')).toEqual({ everySteps: 5, onPause: true, keep: 5 });
    expect(from('not json')).toEqual({ everySteps: 5, onPause: true, keep: 5 });
    expect(from(null)).toEqual({ everySteps: 5, onPause: true, keep: 5 });
  });
});

describe('metricSummary', () => {
  it('shows the preferred metrics first, never timings, and a dash for none', () => {
    expect(metricSummary({ 'perf/step_ms': 12, 'loss/sft': 1.23456, 'tactic/direct': 0.5 })).toBe('loss/sft 1.235');
    expect(metricSummary({ 'perf/step_ms': 12, 'a/x': 0.5, 'b/y': NaN, 'c/z': 2 })).toBe('a/x 0.500 · c/z 2.000');
    expect(metricSummary({ 'judge/asr': 0.25, 'reward/mean': 0.1, 'kl/mean': 3 })).toBe(
      'reward/mean 0.100 · judge/asr 0.250',
    );
    expect(metricSummary({})).toBe('—');
  });
});
