import 'fake-indexeddb/auto';
import { describe, expect, it } from 'vitest';
import type { StepReport } from '../contract/report';
import { idbKv, StorageError, type Kv } from './kv';
import { JsonlError, parseReportsJsonl, reportsToJsonl, RunStore } from './runs';

let dbNo = 0;
const freshKv = (): Kv => idbKv(`runs-test-${dbNo++}`);

const report = (step: number, runId = 'run-1'): StepReport => ({
  runId,
  recipe: 'redteam',
  step,
  time: 1_700_000_000_000 + step,
  metrics: { 'reward/mean': step / 10, 'kl/mean': 0.01 * step },
  samples:
    step % 2 === 0
      ? [
          {
            id: `s${step}`,
            promptKey: 'p0',
            group: 0,
            messages: [{ role: 'attacker', text: `attack ${step}` }],
            verdict: { label: 'refusal', unsafe: 0.1, refused: true, success: false },
            reward: 0.5,
            terms: { harm: 0.5 },
          },
        ]
      : [],
  timings: { rollout_ms: 1, score_ms: 2, learn_ms: 3, total_ms: 6 },
});

describe('RunStore', () => {
  it('usage() counts runs and the JSON bytes of their logs, through appends, truncation and old records', async () => {
    const kv = freshKv();
    const store = new RunStore({ kv, maxBatchReports: 2 });
    const len = (steps: number[]) => steps.reduce((a, s) => a + JSON.stringify(report(s)).length, 0);
    await store.createRun({ id: 'run-1', recipe: 'redteam' });
    await store.appendReports(
      'run-1',
      [0, 1, 2].map((s) => report(s)),
    );
    await store.appendReports('run-1', [report(3)]);
    expect(await store.usage()).toEqual({ runs: 1, logBytes: len([0, 1, 2, 3]) });
    await store.truncateAfter('run-1', 1);
    expect(await store.usage()).toEqual({ runs: 1, logBytes: len([0, 1]) });
    // A record written before logBytes existed: counted from its batches.
    const rec = (await store.getRun('run-1'))!;
    delete rec.logBytes;
    await kv.set('r/run-1', rec);
    await store.createRun({ id: 'run-2', recipe: 'redteam' });
    expect(await store.usage()).toEqual({ runs: 2, logBytes: len([0, 1]) });
    await store.appendReports('run-1', [report(2)]);
    expect((await store.getRun('run-1'))!.logBytes).toBe(len([0, 1, 2]));
  });

  it('creates, lists, updates and deletes run records', async () => {
    const store = new RunStore({ kv: freshKv() });
    const a = await store.createRun({ id: 'a', recipe: 'defend', spec: { seed: 1 }, created: 100 });
    await store.createRun({ id: 'b', recipe: 'redteam', created: 200 });
    expect(a).toMatchObject({
      id: 'a',
      recipe: 'defend',
      spec: { seed: 1 },
      status: 'created',
      lastStep: null,
      reportCount: 0,
    });
    expect((await store.listRuns()).map((r) => r.id)).toEqual(['b', 'a']);
    await expect(store.createRun({ id: 'a', recipe: 'x' })).rejects.toThrow('Run "a" already exists');
    await expect(store.createRun({ id: 'x/y', recipe: 'x' })).rejects.toThrow(/without "\/"/);
    const u = await store.updateRun('a', { status: 'failed', error: 'device lost' });
    expect(u).toMatchObject({ status: 'failed', error: 'device lost' });
    await expect(store.updateRun('a', { status: 'exploded' as never })).rejects.toThrow(/status "exploded"/);
    await store.appendReports('a', [report(1, 'a')]);
    expect(await store.deleteRun('a')).toBe(true);
    expect(await store.getRun('a')).toBeNull();
    expect(await store.readReports('a')).toEqual([]);
    expect((await store.listRuns()).map((r) => r.id)).toEqual(['b']);
  });

  it('appends in bounded batches and reads back in order', async () => {
    const kv = freshKv();
    const store = new RunStore({ kv, maxBatchReports: 4 });
    await store.createRun({ id: 'run-1', recipe: 'redteam' });
    // 3 appends of 6, 1 and 5 reports: batches of [4, 2], [1], [4, 1] = 5 values.
    const all = Array.from({ length: 12 }, (_, i) => report(i));
    await store.appendReports('run-1', all.slice(0, 6));
    await store.appendReports('run-1', all.slice(6, 7));
    const rec = await store.appendReports('run-1', all.slice(7));
    expect(rec).toMatchObject({ lastStep: 11, reportCount: 12, status: 'running' });
    const keys = await kv.keys('l/run-1/');
    expect(keys.length).toBe(5);
    const sizes = await Promise.all(keys.map(async (k) => (await kv.get<{ reports: unknown[] }>(k))!.reports.length));
    expect(sizes).toEqual([4, 2, 1, 4, 1]);
    expect((await store.readReports('run-1')).map((r) => r.step)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    expect(await store.readReports('run-1')).toEqual(all);
    expect((await store.readReports('run-1', { fromStep: 3, toStep: 7 })).map((r) => r.step)).toEqual([3, 4, 5, 6, 7]);
  });

  it('cuts batches by size too, and concurrent appends keep their order', async () => {
    const kv = freshKv();
    // Budget = exactly reports 5 + 6 (odd steps carry no sample, even ones do): 7 must start a new batch.
    const len = (s: number) => JSON.stringify(report(s)).length;
    const store = new RunStore({ kv, maxBatchReports: 100, maxBatchBytes: len(5) + len(6) });
    await store.createRun({ id: 'run-1', recipe: 'redteam' });
    // Not awaited in between: the per-run queue must serialise them.
    await Promise.all([0, 1, 2, 3, 4].map((s) => store.appendReports('run-1', [report(s)])));
    await store.appendReports(
      'run-1',
      [5, 6, 7, 8].map((s) => report(s)),
    );
    expect((await store.readReports('run-1')).map((r) => r.step)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    const keys = await kv.keys('l/run-1/');
    const steps = await Promise.all(
      keys.map(async (k) => (await kv.get<{ reports: StepReport[] }>(k))!.reports.map((r) => r.step)),
    );
    expect(steps).toEqual([[0], [1], [2], [3], [4], [5, 6], [7, 8]]);
  });

  it('refuses reports of another run, and a log for an unknown run', async () => {
    const store = new RunStore({ kv: freshKv() });
    await store.createRun({ id: 'run-1', recipe: 'redteam' });
    await expect(store.appendReports('run-1', [report(0, 'other')])).rejects.toThrow(
      'report 0 (step 0) belongs to run "other"',
    );
    const e = await store.appendReports('ghost', [report(0, 'ghost')]).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(StorageError);
    expect((e as StorageError).code).toBe('not-found');
  });

  it('branchRun starts a new run with the parent steps before the checkpoint and leaves the parent whole', async () => {
    const store = new RunStore({ kv: freshKv(), maxBatchReports: 3 });
    await store.createRun({ id: 'run-1', recipe: 'redteam', spec: { seed: 3 }, name: 'first' });
    await store.appendReports(
      'run-1',
      [0, 1, 2, 3, 4, 5, 6, 7].map((s) => report(s)),
    );
    const b = await store.branchRun('run-1', 'run-1-b5', 5);
    expect(b).toMatchObject({
      id: 'run-1-b5',
      recipe: 'redteam',
      spec: { seed: 3 },
      name: 'first · from step 5',
      branchOf: { runId: 'run-1', step: 5 },
      status: 'running',
      lastStep: 4,
      reportCount: 5,
    });
    const copied = await store.readReports('run-1-b5');
    expect(copied.map((r) => [r.step, r.runId])).toEqual([0, 1, 2, 3, 4].map((s) => [s, 'run-1-b5']));
    expect(copied[2].metrics).toEqual(report(2).metrics);
    // The branch goes on from its checkpoint; the parent keeps all eight steps.
    await store.appendReports('run-1-b5', [report(5, 'run-1-b5')]);
    expect((await store.readReports('run-1-b5')).map((r) => r.step)).toEqual([0, 1, 2, 3, 4, 5]);
    expect((await store.readReports('run-1')).map((r) => r.step)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect((await store.getRun('run-1'))!.reportCount).toBe(8);
  });

  it('truncateAfter drops the steps a resume will replay', async () => {
    const store = new RunStore({ kv: freshKv(), maxBatchReports: 3 });
    await store.createRun({ id: 'run-1', recipe: 'redteam' });
    await store.appendReports(
      'run-1',
      Array.from({ length: 8 }, (_, i) => report(i)),
    );
    const rec = await store.truncateAfter('run-1', 4);
    expect(rec).toMatchObject({ lastStep: 4, reportCount: 5 });
    await store.appendReports('run-1', [report(5), report(6)]);
    expect((await store.readReports('run-1')).map((r) => r.step)).toEqual([0, 1, 2, 3, 4, 5, 6]);
  });

  it('exports JSONL, one report per line, and imports it as a new run', async () => {
    const store = new RunStore({ kv: freshKv(), maxBatchReports: 2 });
    await store.createRun({ id: 'run-1', recipe: 'redteam' });
    const withNaN = { ...report(2), metrics: { 'loss/policy': NaN, 'reward/mean': 1 } };
    await store.appendReports('run-1', [report(0), report(1), withNaN]);
    const text = await store.exportJsonl('run-1');
    const lines = text.split('\n');
    expect(lines.length).toBe(4);
    expect(lines[3]).toBe('');
    expect(JSON.parse(lines[1])).toEqual(report(1));
    // JSON has no NaN: written as null, read back as NaN.
    expect(lines[2]).toContain('"loss/policy":null');
    const back = parseReportsJsonl(text);
    expect(back.slice(0, 2)).toEqual([report(0), report(1)]);
    expect(Number.isNaN(back[2].metrics['loss/policy'])).toBe(true);

    const imported = await store.importJsonl(text, { id: 'copy' });
    expect(imported).toMatchObject({ id: 'copy', recipe: 'redteam', status: 'finished', reportCount: 3, lastStep: 2 });
    expect((await store.readReports('copy')).map((r) => [r.runId, r.step])).toEqual([
      ['copy', 0],
      ['copy', 1],
      ['copy', 2],
    ]);
  });
});

describe('parseReportsJsonl', () => {
  const good = reportsToJsonl([report(0), report(1)]);

  it('skips blank lines and accepts CRLF', () => {
    const text = `\n${good.replace(/\n/g, '\r\n')}\n\n`;
    expect(parseReportsJsonl(text).map((r) => r.step)).toEqual([0, 1]);
    expect(parseReportsJsonl('')).toEqual([]);
  });

  it('names the line of invalid JSON', () => {
    const text = `${good}\n{"runId": "run-1", "step": 3,\n`;
    const e = (() => {
      try {
        parseReportsJsonl(text, 'log.jsonl');
      } catch (x) {
        return x;
      }
    })() as JsonlError;
    expect(e).toBeInstanceOf(JsonlError);
    expect(e.line).toBe(4);
    expect(e.message).toMatch(/^log\.jsonl line 4: not valid JSON/);
  });

  it.each([
    [{ step: -1 }, 'field "step" is -1, expected a non-negative integer'],
    [{ step: 1.5 }, 'field "step" is 1.5'],
    [{ runId: '' }, 'field "runId" is a string, expected a non-empty string'],
    [{ metrics: { 'reward/mean': 'high' } }, 'field "metrics.reward/mean" is a string, expected a number'],
    [{ samples: [{ messages: [] }] }, 'field "samples[0].verdict" is missing, expected an object'],
    [{ timings: { rollout_ms: 1 } }, 'field "timings.score_ms" is missing, expected a number'],
    [{ time: undefined }, 'field "time" is missing'],
  ])('names the field at fault: %j', (patch, msg) => {
    const bad = JSON.stringify({ ...report(2), ...patch });
    expect(() => parseReportsJsonl(`${good}${bad}\n`, 'run.jsonl')).toThrow(`run.jsonl line 3: ${msg}`);
  });

  it('rejects a line that is not an object', () => {
    expect(() => parseReportsJsonl('[1, 2]\n')).toThrow('run.jsonl line 1: expected a StepReport object, got an array');
  });
});
