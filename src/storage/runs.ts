// Run records and their StepReport logs in IndexedDB, plus the JSONL form of a log.
//
// Keys:  r/<runId>                 RunRecord
//        l/<runId>/<batch number>  LogBatch: a run of consecutive StepReports
//
// A log is appended in batches (the worker flushes every few steps), and each batch is cut to at
// most `maxBatchReports` reports and about `maxBatchBytes` of JSON, so a 10k-step run is a few
// hundred modest values, never one giant one that IndexedDB rejects or rewrites on every step.
// Batch numbers are zero-padded, so a key-range read returns the log in order.
//
// JSONL: one StepReport per line, as the CLI writes it. JSON has no NaN or Infinity:
// JSON.stringify writes null, and parsing reads a null metric back as NaN.

import type { StepReport } from '../contract/report';
import { briefText, clampMessage } from '../contract/brief';
import { idbKv, newId, pad, StorageError, type Kv } from './kv';
import { stepProblem } from '../contract/reportRules';
import {
  logPrefix,
  recordKey,
  RECORD_PREFIX,
  reportBytes,
  reportsToJsonl,
  RUNS_DB,
  runsNewestFirst,
  type LogBatch,
  type RunRecord,
  type RunStatus,
} from '../contract/storageFormat';

// The layout and record shapes are shared with the page (contract/storageFormat.ts).
export { reportsToJsonl, RUNS_DB } from '../contract/storageFormat';
export type { LogBatch, RunRecord, RunStatus } from '../contract/storageFormat';
const STATUSES: readonly RunStatus[] = ['created', 'running', 'paused', 'finished', 'stopped', 'failed'];

export interface RunStoreOptions {
  kv?: Kv;
  maxBatchReports?: number;
  /** Approximate JSON bytes per batch (a single larger report still gets a batch of its own). */
  maxBatchBytes?: number;
}

const batchKey = (id: string, n: number) => `${logPrefix(id)}${pad(n)}`;

function checkId(id: string): void {
  // '/' would let one run's log prefix cover another's keys.
  if (typeof id !== 'string' || id === '' || id.includes('/'))
    throw new StorageError('invalid', `Run id must be a non-empty string without "/", got ${JSON.stringify(id)}`);
}

export class RunStore {
  readonly kv: Kv;
  readonly maxBatchReports: number;
  readonly maxBatchBytes: number;
  /** Appends and truncations of one run run one after another (batch numbers come from a key scan). */
  private readonly queues = new Map<string, Promise<unknown>>();

  constructor(opts: RunStoreOptions = {}) {
    this.kv = opts.kv ?? idbKv(RUNS_DB);
    this.maxBatchReports = opts.maxBatchReports ?? 50;
    this.maxBatchBytes = opts.maxBatchBytes ?? 2 * 1024 * 1024;
  }

  private serial<T>(runId: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.queues.get(runId) ?? Promise.resolve();
    const next = prev.catch(() => undefined).then(fn);
    this.queues.set(runId, next);
    void next
      .finally(() => {
        if (this.queues.get(runId) === next) this.queues.delete(runId);
      })
      .catch(() => undefined);
    return next;
  }

  async createRun(init: {
    id?: string;
    recipe: string;
    spec?: unknown;
    name?: string;
    created?: number;
  }): Promise<RunRecord> {
    const id = init.id ?? newId('run');
    checkId(id);
    if (await this.kv.get(recordKey(id))) throw new StorageError('invalid', `Run "${id}" already exists`);
    const created = init.created ?? Date.now();
    let spec: unknown = null;
    try {
      spec = init.spec === undefined ? null : (JSON.parse(JSON.stringify(init.spec)) as unknown);
    } catch (e) {
      throw new StorageError('invalid', `Run "${id}": field "spec" is not JSON-safe: ${(e as Error).message}`);
    }
    const rec: RunRecord = {
      id,
      recipe: init.recipe,
      name: init.name ?? `${init.recipe} ${new Date(created).toISOString().slice(0, 16).replace('T', ' ')}`,
      spec,
      created,
      updated: created,
      lastStep: null,
      reportCount: 0,
      status: 'created',
      error: null,
    };
    await this.kv.set(recordKey(id), rec);
    return rec;
  }

  async getRun(id: string): Promise<RunRecord | null> {
    return (await this.kv.get<RunRecord>(recordKey(id))) ?? null;
  }

  private async mustGet(id: string): Promise<RunRecord> {
    const r = await this.getRun(id);
    if (!r) throw new StorageError('not-found', `No run with id "${id}" in IndexedDB`);
    return r;
  }

  /** Newest first. */
  async listRuns(): Promise<RunRecord[]> {
    return (await this.kv.values<RunRecord>(RECORD_PREFIX)).sort(runsNewestFirst);
  }

  async updateRun(
    id: string,
    patch: Partial<Pick<RunRecord, 'name' | 'status' | 'error' | 'stopReason'>>,
  ): Promise<RunRecord> {
    return this.serial(id, async () => {
      if (patch.status !== undefined && !STATUSES.includes(patch.status)) {
        throw new StorageError('invalid', `Run "${id}": status "${patch.status}" is not one of ${STATUSES.join(', ')}`);
      }
      const next = { ...(await this.mustGet(id)), ...patch, updated: Date.now() };
      await this.kv.set(recordKey(id), next);
      return next;
    });
  }

  /** Record first (the run disappears from lists at once), then its log. */
  async deleteRun(id: string): Promise<boolean> {
    return this.serial(id, async () => {
      const had = !!(await this.getRun(id));
      await this.kv.del(recordKey(id));
      const keys = await this.kv.keys(logPrefix(id));
      if (keys.length) await this.kv.delMany(keys);
      return had;
    });
  }

  /** Appends reports (in step order) to the run's log, in bounded batches. */
  async appendReports(runId: string, reports: readonly StepReport[]): Promise<RunRecord> {
    return this.serial(runId, async () => {
      const rec = await this.mustGet(runId);
      if (reports.length === 0) return rec;
      reports.forEach((r, i) => {
        if (r.runId !== runId)
          throw new StorageError('invalid', `Run "${runId}": report ${i} (step ${r.step}) belongs to run "${r.runId}"`);
        if (!Number.isFinite(r.step))
          throw new StorageError('invalid', `Run "${runId}": report ${i} has step ${r.step}`);
      });
      const keys = await this.kv.keys(logPrefix(runId));
      let seq = keys.length ? Number(keys[keys.length - 1].slice(logPrefix(runId).length)) + 1 : 0;
      let batch: StepReport[] = [];
      let bytes = 0;
      let added = 0;
      const flush = async () => {
        if (!batch.length) return;
        const b: LogBatch = { firstStep: batch[0].step, lastStep: batch[batch.length - 1].step, reports: batch };
        await this.kv.set(batchKey(runId, seq++), b);
        batch = [];
        bytes = 0;
      };
      for (const r of reports) {
        // JSON length is a fair proxy for the stored size (structured clone is of the same order).
        const size = JSON.stringify(r).length;
        if (batch.length >= this.maxBatchReports || (batch.length > 0 && bytes + size > this.maxBatchBytes))
          await flush();
        batch.push(r);
        bytes += size;
        added += size;
      }
      await flush();
      const next: RunRecord = {
        ...rec,
        lastStep: reports[reports.length - 1].step,
        reportCount: rec.reportCount + reports.length,
        logBytes: rec.logBytes !== undefined ? rec.logBytes + added : await this.countLogBytes(runId),
        updated: Date.now(),
        status: rec.status === 'created' ? 'running' : rec.status,
      };
      await this.kv.set(recordKey(runId), next);
      return next;
    });
  }

  /** The run's reports in append order, optionally limited to steps in [fromStep, toStep]. */
  async readReports(runId: string, range: { fromStep?: number; toStep?: number } = {}): Promise<StepReport[]> {
    const lo = range.fromStep ?? -Infinity;
    const hi = range.toStep ?? Infinity;
    const out: StepReport[] = [];
    for (const b of await this.kv.values<LogBatch>(logPrefix(runId))) {
      for (const r of b.reports) if (r.step >= lo && r.step <= hi) out.push(r);
    }
    return out;
  }

  /**
   * Drops every report after `step` (resuming from a checkpoint at `step` replays the steps after
   * it, and the log must not hold them twice).
   */
  async truncateAfter(runId: string, step: number): Promise<RunRecord> {
    return this.serial(runId, async () => {
      const rec = await this.mustGet(runId);
      const prefix = logPrefix(runId);
      const keys = await this.kv.keys(prefix);
      let kept = 0;
      let keptBytes = 0;
      let last: number | null = null;
      for (const k of keys) {
        const b = await this.kv.get<LogBatch>(k);
        if (!b) continue;
        const keep = b.reports.filter((r) => r.step <= step);
        if (keep.length === 0) await this.kv.del(k);
        else if (keep.length < b.reports.length)
          await this.kv.set(k, { firstStep: keep[0].step, lastStep: keep[keep.length - 1].step, reports: keep });
        kept += keep.length;
        keptBytes += reportBytes(keep);
        if (keep.length) last = keep[keep.length - 1].step;
      }
      const next = { ...rec, reportCount: kept, lastStep: last, logBytes: keptBytes, updated: Date.now() };
      await this.kv.set(recordKey(runId), next);
      return next;
    });
  }

  /**
   * A new run `id` branched from run `parentId` at the checkpoint of step `step` (Restore of an
   * older checkpoint): its record names the parent, and its log starts with a copy of the parent's
   * reports before `step` under the new id, so its charts and JSONL have no hole. The parent's
   * record and log are left as they are (Restore used to cut them at the checkpoint).
   */
  async branchRun(parentId: string, id: string, step: number): Promise<RunRecord> {
    const parent = await this.mustGet(parentId);
    await this.createRun({
      id,
      recipe: parent.recipe,
      spec: parent.spec,
      name: `${briefText(parent.name, 80)} · from step ${step}`,
    });
    const history = (await this.readReports(parentId, { toStep: step - 1 })).map((r) => ({ ...r, runId: id }));
    await this.appendReports(id, history);
    return this.serial(id, async () => {
      const next: RunRecord = { ...(await this.mustGet(id)), branchOf: { runId: parentId, step }, status: 'running' };
      await this.kv.set(recordKey(id), next);
      return next;
    });
  }

  /** JSON bytes of a run's stored log, read batch by batch (for records without logBytes). */
  private async countLogBytes(runId: string): Promise<number> {
    let n = 0;
    for (const k of await this.kv.keys(logPrefix(runId)))
      n += reportBytes((await this.kv.get<LogBatch>(k))?.reports ?? []);
    return n;
  }

  /** How many runs are stored and the bytes of their logs (JSON length, a fair proxy for the stored size). */
  async usage(): Promise<{ runs: number; logBytes: number }> {
    const all = await this.listRuns();
    let logBytes = 0;
    for (const r of all) logBytes += r.logBytes ?? (await this.countLogBytes(r.id));
    return { runs: all.length, logBytes };
  }

  async exportJsonl(runId: string): Promise<string> {
    await this.mustGet(runId);
    return reportsToJsonl(await this.readReports(runId));
  }

  /** Creates a run from a JSONL log (recipe and run id from its first line unless given). */
  async importJsonl(text: string, opts: { fileName?: string; id?: string; name?: string } = {}): Promise<RunRecord> {
    const reports = parseReportsJsonl(text, opts.fileName);
    if (reports.length === 0)
      throw new StorageError('invalid', `${opts.fileName ?? 'run.jsonl'}: holds no StepReport lines`);
    const id = opts.id ?? reports[0].runId;
    await this.createRun({ id, recipe: reports[0].recipe, name: opts.name, created: reports[0].time || Date.now() });
    await this.appendReports(id, id === reports[0].runId ? reports : reports.map((r) => ({ ...r, runId: id })));
    return this.updateRun(id, { status: 'finished' });
  }
}

let defaultStore: RunStore | null = null;
/** The app's run store (database "sparring-runs"), created on first use. */
export function runs(): RunStore {
  return (defaultStore ??= new RunStore());
}

// ---------------------------------------------------------------------------------------------
// JSONL

export class JsonlError extends Error {
  constructor(
    readonly fileName: string,
    readonly line: number,
    detail: string,
  ) {
    super(clampMessage(`${briefText(fileName, 200)} line ${line}: ${detail}`));
    this.name = 'JsonlError';
  }
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const kind = (v: unknown) =>
  v === undefined ? 'missing' : v === null ? 'null' : Array.isArray(v) ? 'an array' : `a ${typeof v}`;

/** Checks a parsed line against StepReport; returns an error detail naming the field, or the report. */
function checkReport(v: unknown): StepReport | string {
  if (!isObj(v)) return `expected a StepReport object, got ${kind(v)}`;
  if (typeof v.runId !== 'string' || v.runId === '')
    return `field "runId" is ${kind(v.runId)}, expected a non-empty string`;
  if (typeof v.recipe !== 'string') return `field "recipe" is ${kind(v.recipe)}, expected a string`;
  const stepBad = stepProblem(v.step);
  if (stepBad) return stepBad;
  if (typeof v.time !== 'number') return `field "time" is ${kind(v.time)}, expected a number (ms since epoch)`;
  if (v.phase !== undefined && typeof v.phase !== 'string')
    return `field "phase" is ${kind(v.phase)}, expected a string`;
  if (!isObj(v.metrics)) return `field "metrics" is ${kind(v.metrics)}, expected an object of numbers`;
  const metrics: Record<string, number> = {};
  for (const [k, m] of Object.entries(v.metrics)) {
    if (m !== null && typeof m !== 'number') return `field "metrics.${briefText(k)}" is ${kind(m)}, expected a number`;
    metrics[k] = m === null ? NaN : m;
  }
  if (!Array.isArray(v.samples)) return `field "samples" is ${kind(v.samples)}, expected an array`;
  for (let i = 0; i < v.samples.length; i++) {
    const s = v.samples[i] as unknown;
    if (!isObj(s)) return `field "samples[${i}]" is ${kind(s)}, expected an object`;
    if (!Array.isArray(s.messages)) return `field "samples[${i}].messages" is ${kind(s.messages)}, expected an array`;
    if (!isObj(s.verdict)) return `field "samples[${i}].verdict" is ${kind(s.verdict)}, expected an object`;
  }
  if (!isObj(v.timings)) return `field "timings" is ${kind(v.timings)}, expected an object`;
  for (const k of ['rollout_ms', 'score_ms', 'learn_ms', 'total_ms']) {
    if (typeof v.timings[k] !== 'number') return `field "timings.${k}" is ${kind(v.timings[k])}, expected a number`;
  }
  return { ...(v as unknown as StepReport), metrics };
}

/**
 * Parses a JSONL log (blank lines skipped, CRLF accepted). The first bad line throws a
 * JsonlError naming the file, the 1-based line number and the field.
 */
export function parseReportsJsonl(text: string, fileName = 'run.jsonl'): StepReport[] {
  const out: StepReport[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    if (line === '') continue;
    let v: unknown;
    try {
      v = JSON.parse(line);
    } catch (e) {
      throw new JsonlError(fileName, i + 1, `not valid JSON (${briefText((e as Error).message, 120)})`);
    }
    const r = checkReport(v);
    if (typeof r === 'string') throw new JsonlError(fileName, i + 1, r);
    out.push(r);
  }
  return out;
}
