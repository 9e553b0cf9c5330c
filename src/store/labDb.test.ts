import 'fake-indexeddb/auto';
import { describe, expect, it } from 'vitest';
import {
  CHECKPOINT_FORMAT,
  chunkPrefix,
  logPrefix,
  manifestKey,
  recordKey,
  type CheckpointManifest,
  type RunRecord,
} from '../contract/storageFormat';
import type { StepReport } from '../contract/report';
import { idbKv } from '../contract/kv';
import { PageCheckpoints, PageRunLogs } from './labDb';

let dbNo = 0;
const estimate = async () => ({ usage: 1000, quota: 5000 });

function manifest(id: string, step: number, time: number, sizeBytes: number): CheckpointManifest {
  return {
    format: CHECKPOINT_FORMAT,
    id,
    runId: 'run-a',
    name: `step ${step}`,
    step,
    time,
    metrics: { 'reward/mean': 0.5 },
    sizeBytes,
    spec: null,
    tensors: [
      {
        name: 'w',
        group: 'params',
        dtype: 'float32',
        shape: [sizeBytes / 4],
        offset: 0,
        byteLength: sizeBytes,
        chunks: [`${chunkPrefix(id)}000000`],
      },
    ],
    chunks: [{ key: `${chunkPrefix(id)}000000`, byteLength: sizeBytes }],
    optimizerState: null,
    rng: null,
    extra: null,
    nonFinite: null,
  };
}

describe('the page view of the checkpoint database', () => {
  it('lists newest first, counts orphan chunks, renames, deletes and collects orphans', async () => {
    const kv = idbKv(`lab-db-test-${dbNo++}`);
    const page = new PageCheckpoints(kv, estimate);
    for (const m of [manifest('a', 1, 10, 8), manifest('b', 2, 20, 16)]) {
      await kv.set(`${chunkPrefix(m.id)}000000`, new ArrayBuffer(m.sizeBytes));
      await kv.set(manifestKey(m.id), m);
    }
    // A save killed before its manifest: a chunk nobody points at.
    await kv.set(`${chunkPrefix('dead')}000000`, new ArrayBuffer(12));
    expect((await page.list()).map((c) => [c.id, c.tensorCount])).toEqual([
      ['b', 1],
      ['a', 1],
    ]);
    expect(await page.usage()).toEqual({
      checkpoints: 2,
      checkpointBytes: 24,
      orphanChunks: 1,
      orphanBytes: 12,
      usage: 1000,
      quota: 5000,
    });
    await page.rename('a', '  kept ');
    expect((await page.list()).find((c) => c.id === 'a')?.name).toBe('kept');
    await expect(page.rename('a', ' ')).rejects.toThrow(/a name must be a non-empty string/);
    await expect(page.rename('nope', 'x')).rejects.toThrow(/No checkpoint with id "nope"/);
    expect(await page.delete('b')).toBe(true);
    expect(await kv.keys(chunkPrefix('b'))).toEqual([]);
    expect(await page.gcOrphanChunks()).toBe(1);
    expect(await kv.keys('c/')).toEqual([`${chunkPrefix('a')}000000`]);
  });
});

describe('the page view of the run logs', () => {
  it('reads a run back by step range, counts its bytes and exports it as JSONL', async () => {
    const kv = idbKv(`lab-db-test-${dbNo++}`);
    const logs = new PageRunLogs(kv);
    const report = (step: number) =>
      ({ runId: 'r1', recipe: 'redteam', step, time: step, metrics: { 'reward/mean': step } }) as unknown as StepReport;
    const rec = {
      id: 'r1',
      recipe: 'redteam',
      name: 'r1',
      spec: null,
      created: 1,
      updated: 1,
      lastStep: 2,
      reportCount: 3,
      status: 'finished',
      error: null,
    } satisfies RunRecord;
    await kv.set(recordKey('r1'), rec);
    await kv.set(`${logPrefix('r1')}000000000000`, { firstStep: 0, lastStep: 1, reports: [report(0), report(1)] });
    await kv.set(`${logPrefix('r1')}000000000001`, { firstStep: 2, lastStep: 2, reports: [report(2)] });
    expect((await logs.readReports('r1', { toStep: 1 })).map((r) => r.step)).toEqual([0, 1]);
    expect(await logs.getRun('r1')).toEqual(rec);
    const jsonl = await logs.exportJsonl('r1');
    expect(jsonl.split('\n')).toHaveLength(4);
    expect(await logs.usage()).toEqual({ runs: 1, logBytes: jsonl.length - 3 });
    await expect(logs.exportJsonl('r2')).rejects.toThrow(/No run with id "r2"/);
  });

  it('lists run records newest first and marks one ended (what a reload then no longer offers)', async () => {
    const kv = idbKv(`lab-db-test-${dbNo++}`);
    const logs = new PageRunLogs(kv);
    const rec = (id: string, created: number): RunRecord => ({
      id,
      recipe: 'redteam',
      name: id,
      spec: null,
      created,
      updated: created,
      lastStep: null,
      reportCount: 0,
      status: 'running',
      error: null,
    });
    await kv.set(recordKey('old'), rec('old', 1));
    await kv.set(recordKey('new'), rec('new', 2));
    expect((await logs.listRuns()).map((r) => r.id)).toEqual(['new', 'old']);
    expect(await logs.markEnded('new', 'stopped')).toBe(true);
    const back = await logs.getRun('new');
    expect(back?.status).toBe('stopped');
    expect(back!.updated).toBeGreaterThan(2);
    expect((await logs.getRun('old'))?.status).toBe('running');
    expect(await logs.markEnded('gone', 'stopped')).toBe(false);
  });
});
