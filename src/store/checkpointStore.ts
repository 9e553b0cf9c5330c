// Checkpoints as the page sees them: the list and storage use read from IndexedDB (the worker
// writes, the page reads the same database), the autosave policy (kept in localStorage and
// mirrored to IndexedDB), the latest save event, and what the start found: persistence granted or not, a wiped store, orphan chunks.
import { create } from 'zustand';
import { requestPersistentStorage } from '../contract/browserStorage';
import type { CheckpointSummary } from '../contract/storageFormat';
import { readStopReason, type StopReason } from '../contract/stopReason';
import { PageCheckpoints, PageRunLogs } from './labDb';
import { checkStores, noteSeen, wipedMessage } from './storeIntegrity';
import { formatBytes } from '../contract/formatBytes';
import { durableSettings } from './durableSettings';
import { reconcileSettings } from './settingsStore';
import type { AutosavePolicy, CheckpointEvent } from '../contract/workerApi';

export interface StorageUse {
  checkpoints: number;
  checkpointBytes: number;
  /** Run records and the bytes of their step logs. */
  runs: number;
  runLogBytes: number;
  /** Chunks of a save that never got its manifest (a kill mid-save), collected at the next start. */
  orphanChunks: number;
  orphanBytes: number;
  usage: number | null;
  quota: number | null;
  /** Whether the browser granted persistent storage (null: not asked yet or no API). */
  persisted: boolean | null;
}

const plural = (n: number, one: string) => `${n} ${one}${n === 1 ? '' : 's'}`;

/** One line for the panel: every byte the lab keeps, what the browser allows, and whether it may evict it. */
export function storageLine(u: StorageUse): string {
  const parts = [
    `${plural(u.checkpoints, 'checkpoint')}, ${formatBytes(u.checkpointBytes)}`,
    `${plural(u.runs, 'run log')}, ${formatBytes(u.runLogBytes)}`,
  ];
  if (u.orphanChunks > 0)
    parts.push(
      `${plural(u.orphanChunks, 'chunk')} of an interrupted save, ${formatBytes(u.orphanBytes)} (removed at the next start)`,
    );
  const ours = parts.join('; ');
  const site =
    u.usage === null || u.quota === null
      ? 'the browser does not report its storage quota'
      : `this site uses ${formatBytes(u.usage)} of ${formatBytes(u.quota)}${u.quota > 0 ? ` (${((100 * u.usage) / u.quota).toFixed(u.usage / u.quota < 0.01 ? 2 : 0)}%)` : ''}`;
  const kept =
    u.persisted === true
      ? 'storage is persistent'
      : u.persisted === false
        ? 'storage is not persistent: the browser may clear it when disk space runs low'
        : '';
  return `${ours}; ${site}${kept ? `; ${kept}` : ''}`;
}

/** What the panel says after a save: the event in words (a failure names the cause and that nothing was lost). */
export function eventMessage(e: CheckpointEvent): { text: string; error: boolean } {
  if (e.kind === 'saved')
    return { text: `Saved "${e.name}" (${formatBytes(e.sizeBytes)}) of run ${e.runId}.`, error: false };
  const head = e.code === 'quota' ? 'Storage is full: checkpoint not saved.' : 'Checkpoint not saved.';
  return { text: `${head} ${e.message} The run continues.`, error: true };
}

/** Metrics worth a glance, in this order; otherwise the first two that are not timings. */
const PREFERRED = ['reward/mean', 'judge/asr', 'loss/sft', 'eval/asr', 'loss/policy'];

export function metricSummary(metrics: Record<string, number>): string {
  const finite = Object.keys(metrics).filter(
    (k) => typeof metrics[k] === 'number' && Number.isFinite(metrics[k]) && !k.startsWith('perf/'),
  );
  const chosen = PREFERRED.filter((k) => finite.includes(k));
  const keys = (chosen.length ? chosen : finite).slice(0, 2);
  return keys.length ? keys.map((k) => `${k} ${metrics[k].toFixed(3)}`).join(' · ') : '—';
}

/** Checkpoints by run, runs newest first (by their newest save), each run's saves by step, highest first. */
export function groupByRun(list: readonly CheckpointSummary[]): { runId: string; items: CheckpointSummary[] }[] {
  const byRun = new Map<string, CheckpointSummary[]>();
  for (const c of list) {
    const items = byRun.get(c.runId);
    if (items) items.push(c);
    else byRun.set(c.runId, [c]);
  }
  const newest = (items: CheckpointSummary[]) => Math.max(...items.map((c) => c.time));
  return [...byRun.entries()]
    .map(([runId, items]) => ({ runId, items: items.sort((a, b) => b.step - a.step || b.time - a.time) }))
    .sort((a, b) => newest(b.items) - newest(a.items));
}

const POLICY_KEY = 'sparring.autosave';
export const DEFAULT_POLICY: AutosavePolicy = { everySteps: 5, onPause: true, keep: 5 };

export function loadPolicy(storage: Pick<Storage, 'getItem'> | null = durableSettings()): AutosavePolicy {
  try {
    const p = JSON.parse(storage?.getItem(POLICY_KEY) ?? 'null') as Partial<AutosavePolicy> | null;
    const count = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;
    if (p && count(p.everySteps) && typeof p.onPause === 'boolean')
      return { everySteps: p.everySteps, onPause: p.onPause, keep: count(p.keep) ? p.keep : DEFAULT_POLICY.keep };
  } catch {
    // a corrupt setting falls back to the default
  }
  return { ...DEFAULT_POLICY };
}

interface CheckpointState {
  list: CheckpointSummary[];
  use: StorageUse | null;
  policy: AutosavePolicy;
  message: { text: string; error: boolean } | null;
  loading: boolean;
  /** Persistent storage granted (null until the start asked). */
  persisted: boolean | null;
  /** The start found the store wiped: this says so (null otherwise). */
  notice: string | null;
  /** Orphan chunks the start removed. */
  collected: number;
  /** Why each run that ended stopped, from its record (runs still live, or from before reasons were kept, are absent). */
  stopReasons: Record<string, StopReason>;
  /** Once per page: ask for persistence, detect a wiped store, collect orphans, reload settings. */
  startup(): Promise<void>;
  refresh(): Promise<void>;
  setPolicy(p: AutosavePolicy): void;
  onEvent(e: CheckpointEvent): void;
  setMessage(m: { text: string; error: boolean } | null): void;
  rename(id: string, name: string): Promise<void>;
  remove(id: string): Promise<void>;
}

let ckptStore: PageCheckpoints | null = null;
let logStore: PageRunLogs | null = null;
export const ckpts = () => (ckptStore ??= new PageCheckpoints());
export const runLogs = () => (logStore ??= new PageRunLogs());

let started: Promise<void> | null = null;
/** Set once the start compared the stores: only then may refresh record what they hold. */
let checked = false;
/** Set once the user changes the policy: the start's reconcile must not overwrite a fresh choice. */
let policyTouched = false;

export const useCheckpoints = create<CheckpointState>()((set, get) => ({
  list: [],
  use: null,
  policy: loadPolicy(),
  message: null,
  loading: false,
  persisted: null,
  notice: null,
  collected: 0,
  stopReasons: {},
  startup: () =>
    (started ??= (async () => {
      if ((await durableSettings().reconcile(POLICY_KEY)) && !policyTouched) set({ policy: loadPolicy() });
      await reconcileSettings().catch(() => undefined);
      const persisted = await requestPersistentStorage();
      set({ persisted });
      try {
        const check = await checkStores([
          { name: 'checkpoints', kv: ckpts().kv },
          { name: 'run logs', kv: runLogs().kv },
        ]);
        checked = true;
        if (check.state === 'wiped') set({ notice: wipedMessage(check, persisted) });
        set({ collected: await ckpts().gcOrphanChunks() });
      } catch (e) {
        set({
          message: { text: `Could not check the checkpoint store in IndexedDB: ${(e as Error).message}`, error: true },
        });
      }
      await get().refresh();
    })()),
  refresh: async () => {
    set({ loading: true });
    try {
      const [list, use, logs, records] = await Promise.all([
        ckpts().list(),
        ckpts().usage(),
        runLogs().usage(),
        runLogs().listRuns(),
      ]);
      const stopReasons: Record<string, StopReason> = {};
      for (const r of records) {
        const why = readStopReason(r.stopReason);
        if (why) stopReasons[r.id] = why;
      }
      set({
        list,
        stopReasons,
        use: { ...use, runs: logs.runs, runLogBytes: logs.logBytes, persisted: get().persisted },
        loading: false,
      });
      if (checked) void noteSeen({ checkpoints: list.length, runs: logs.runs }).catch(() => undefined);
    } catch (e) {
      set({
        loading: false,
        message: { text: `Could not read checkpoints from IndexedDB: ${(e as Error).message}`, error: true },
      });
    }
  },
  setPolicy: (policy) => {
    policyTouched = true;
    set({ policy });
    durableSettings().setItem(POLICY_KEY, JSON.stringify(policy));
  },
  onEvent: (e) => {
    set({ message: eventMessage(e) });
    void get().refresh();
  },
  setMessage: (message) => set({ message }),
  rename: async (id, name) => {
    try {
      await ckpts().rename(id, name);
    } catch (e) {
      set({ message: { text: (e as Error).message, error: true } });
    }
    await get().refresh();
  },
  remove: async (id) => {
    try {
      await ckpts().delete(id);
    } catch (e) {
      set({ message: { text: (e as Error).message, error: true } });
    }
    await get().refresh();
  },
}));
