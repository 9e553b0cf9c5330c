// Checkpoints as the page sees them: the list and storage use read from IndexedDB (the worker
// writes, the page reads the same database), the autosave policy (kept in localStorage), the
// latest save event, and the status of a run the Checkpoints panel resumed.
import { create } from 'zustand';
import { checkpoints, formatBytes, runs, type CheckpointSummary, type CheckpointStore, type RunStore } from '../storage';
import type { RunStatus } from '../worker/protocol';
import type { AutosavePolicy, CheckpointEvent } from '../worker/storageProtocol';

export interface StorageUse {
  checkpoints: number;
  checkpointBytes: number;
  usage: number | null;
  quota: number | null;
}

/** One line for the panel: what the checkpoints take and what the browser allows. */
export function storageLine(u: StorageUse): string {
  const ours = `${u.checkpoints} checkpoint${u.checkpoints === 1 ? '' : 's'}, ${formatBytes(u.checkpointBytes)}`;
  if (u.usage === null || u.quota === null) return `${ours}; the browser does not report its storage quota`;
  const pct = u.quota > 0 ? ` (${((100 * u.usage) / u.quota).toFixed(u.usage / u.quota < 0.01 ? 2 : 0)}%)` : '';
  return `${ours}; this site uses ${formatBytes(u.usage)} of ${formatBytes(u.quota)}${pct}`;
}

/** What the panel says after a save: the event in words (a failure names the cause and that nothing was lost). */
export function eventMessage(e: CheckpointEvent): { text: string; error: boolean } {
  if (e.kind === 'saved') return { text: `Saved "${e.name}" (${formatBytes(e.sizeBytes)}) of run ${e.runId}.`, error: false };
  const head = e.code === 'quota' ? 'Storage is full: checkpoint not saved.' : 'Checkpoint not saved.';
  return { text: `${head} ${e.message} The run continues.`, error: true };
}

/** Metrics worth a glance, in this order; otherwise the first two that are not timings. */
const PREFERRED = ['reward/mean', 'judge/asr', 'loss/sft', 'eval/asr', 'loss/policy'];

export function metricSummary(metrics: Record<string, number>): string {
  const finite = Object.keys(metrics).filter((k) => typeof metrics[k] === 'number' && Number.isFinite(metrics[k]) && !k.startsWith('perf/'));
  const chosen = PREFERRED.filter((k) => finite.includes(k));
  const keys = (chosen.length ? chosen : finite).slice(0, 2);
  return keys.length ? keys.map((k) => `${k} ${metrics[k].toFixed(3)}`).join(' · ') : '—';
}

/** The newest checkpoint of the newest run (what "resume" offers after a reload). */
export function latestCheckpoint(list: readonly CheckpointSummary[]): CheckpointSummary | null {
  let best: CheckpointSummary | null = null;
  for (const c of list) {
    if (c.nonFinite !== null) continue;
    if (!best || c.time > best.time || (c.time === best.time && c.step > best.step)) best = c;
  }
  return best;
}

const POLICY_KEY = 'sparring.autosave';
export const DEFAULT_POLICY: AutosavePolicy = { everySteps: 5, onPause: true, keep: 5 };

export function loadPolicy(storage: Pick<Storage, 'getItem'> | null = typeof localStorage === 'undefined' ? null : localStorage): AutosavePolicy {
  try {
    const p = JSON.parse(storage?.getItem(POLICY_KEY) ?? 'null') as Partial<AutosavePolicy> | null;
    const count = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;
    if (p && count(p.everySteps) && typeof p.onPause === 'boolean') return { everySteps: p.everySteps, onPause: p.onPause, keep: count(p.keep) ? p.keep : DEFAULT_POLICY.keep };
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
  /** Status of the run this panel resumed (the run controls only know runs they started). */
  resumed: RunStatus | null;
  loading: boolean;
  refresh(): Promise<void>;
  setPolicy(p: AutosavePolicy): void;
  onEvent(e: CheckpointEvent): void;
  setMessage(m: { text: string; error: boolean } | null): void;
  setResumed(s: RunStatus | null): void;
  rename(id: string, name: string): Promise<void>;
  remove(id: string): Promise<void>;
}

let ckptStore: CheckpointStore | null = null;
let logStore: RunStore | null = null;
export const ckpts = () => (ckptStore ??= checkpoints());
export const runLogs = () => (logStore ??= runs());

export const useCheckpoints = create<CheckpointState>()((set, get) => ({
  list: [],
  use: null,
  policy: loadPolicy(),
  message: null,
  resumed: null,
  loading: false,
  refresh: async () => {
    set({ loading: true });
    try {
      const [list, use] = await Promise.all([ckpts().list(), ckpts().usage()]);
      set({ list, use, loading: false });
    } catch (e) {
      set({ loading: false, message: { text: `Could not read checkpoints from IndexedDB: ${(e as Error).message}`, error: true } });
    }
  },
  setPolicy: (policy) => {
    set({ policy });
    try {
      localStorage.setItem(POLICY_KEY, JSON.stringify(policy));
    } catch {
      // private mode: the setting lasts this tab
    }
  },
  onEvent: (e) => {
    set({ message: eventMessage(e) });
    void get().refresh();
  },
  setMessage: (message) => set({ message }),
  setResumed: (resumed) => set({ resumed }),
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
