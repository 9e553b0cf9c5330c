import { describe, expect, it } from 'vitest';
import type { CheckpointSummary, RunRecord } from '../contract/storageFormat';
import { interruptedRun } from './interruptedRun';

const rec = (id: string, status: RunRecord['status'], updated: number): RunRecord => ({
  id,
  recipe: 'redteam',
  name: id,
  spec: null,
  created: updated - 100,
  updated,
  lastStep: null,
  reportCount: 0,
  status,
  error: null,
});
const ck = (runId: string, step: number, time: number, nonFinite: CheckpointSummary['nonFinite'] = null) =>
  ({
    format: 1,
    id: `${runId}@${step}@${time}`,
    runId,
    name: `autosave · step ${step}`,
    step,
    time,
    metrics: {},
    sizeBytes: 1,
    nonFinite,
    tensorCount: 1,
  }) as CheckpointSummary;

describe('interruptedRun', () => {
  it('picks the newest run that never ended, at its highest finite checkpoint', () => {
    const records = [rec('old', 'running', 10), rec('stopped', 'stopped', 30), rec('live', 'running', 20)];
    const list = [
      ck('stopped', 9, 31),
      ck('live', 5, 18),
      ck('live', 10, 19),
      ck('live', 15, 21, 'tensor x[0] = NaN'),
      ck('old', 3, 9),
    ];
    const r = interruptedRun(records, list);
    expect(r?.record.id).toBe('live');
    expect(r?.checkpoint.step).toBe(10); // 15 holds a NaN: not a state to continue from
  });

  it('skips an open run without checkpoints, and offers nothing once every run has ended', () => {
    expect(interruptedRun([rec('a', 'running', 5), rec('b', 'paused', 3)], [ck('b', 2, 3)])?.record.id).toBe('b');
    // A run live in another tab (its worker holds the run's lock) was not interrupted.
    const both = [ck('a', 1, 5), ck('b', 2, 3)];
    expect(interruptedRun([rec('a', 'running', 5), rec('b', 'running', 3)], both)?.record.id).toBe('a');
    expect(interruptedRun([rec('a', 'running', 5), rec('b', 'running', 3)], both, new Set(['a']))?.record.id).toBe('b');
    expect(interruptedRun([rec('a', 'stopped', 5), rec('b', 'finished', 3)], [ck('a', 2, 3), ck('b', 2, 3)])).toBe(
      null,
    );
  });
});
