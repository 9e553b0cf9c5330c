// Did the browser wipe our IndexedDB? Each database gets a birth record (`meta/store`, a random
// id) the first time the lab opens it, and localStorage keeps a copy of those ids. A database
// whose record is gone while localStorage still names it was deleted or recreated behind the
// lab's back (Chromium once recreated the origin's IndexedDB at relaunch after a kill; eviction
// under disk pressure does the same): the page then says so instead of "No checkpoints yet".
//
// "Clear site data" clears both places: that is a fresh start, not a wipe. localStorage commits
// lazily (Chromium batches its writes for seconds), so a lost localStorage write only forgets
// the ids; the next start adopts them from IndexedDB again.
import { newId, type Kv } from './kv.ts';

export const STORE_MARK_KEY = 'meta/store';
export const LOCAL_MARK_KEY = 'sparring.storage';

interface StoreMark {
  id: string;
  created: number;
}

/** What the lab last saw in its databases (for the message after a wipe). */
export interface SeenCounts {
  checkpoints: number;
  runs: number;
  time: number;
}

interface LocalMark {
  /** database name -> the id of its birth record */
  ids: Record<string, string>;
  seen: SeenCounts | null;
}

export type StoreCheck =
  | { state: 'new' }
  | { state: 'intact' }
  /** `databases`: the ones whose record vanished; `seen`: what they held when last counted. */
  | { state: 'wiped'; databases: string[]; seen: SeenCounts | null };

type LocalLike = Pick<Storage, 'getItem' | 'setItem'>;

function readLocal(local: LocalLike | null): LocalMark | null {
  try {
    const o = JSON.parse(local?.getItem(LOCAL_MARK_KEY) ?? 'null') as Partial<LocalMark> | null;
    if (!o || typeof o.ids !== 'object' || o.ids === null) return null;
    const ids = Object.fromEntries(Object.entries(o.ids).filter(([, v]) => typeof v === 'string')) as Record<string, string>;
    const s = o.seen;
    const seen = s && [s.checkpoints, s.runs, s.time].every((x) => typeof x === 'number') ? s : null;
    return { ids, seen };
  } catch {
    return null; // a corrupt mark is no mark
  }
}

function writeLocal(local: LocalLike | null, mark: LocalMark): void {
  try {
    local?.setItem(LOCAL_MARK_KEY, JSON.stringify(mark));
  } catch {
    // private mode or a full localStorage: wipe detection is lost for this profile, nothing else
  }
}

const defaultLocal = (): LocalLike | null => (typeof localStorage === 'undefined' ? null : localStorage);

/**
 * Compares each database's birth record with localStorage's copy, writes the records that are
 * missing (IndexedDB first, then localStorage), and says whether a database the lab had used
 * was wiped since.
 */
export async function checkStores(stores: readonly { name: string; kv: Kv }[], local: LocalLike | null = defaultLocal()): Promise<StoreCheck> {
  const known = readLocal(local);
  const ids: Record<string, string> = { ...(known?.ids ?? {}) };
  const wiped: string[] = [];
  for (const { name, kv } of stores) {
    let mark = await kv.get<StoreMark>(STORE_MARK_KEY);
    if (!mark || typeof mark.id !== 'string') {
      if (ids[name] !== undefined) wiped.push(name);
      mark = { id: newId('store'), created: Date.now() };
      await kv.set(STORE_MARK_KEY, mark);
    }
    ids[name] = mark.id;
  }
  writeLocal(local, { ids, seen: known?.seen ?? null });
  if (wiped.length) return { state: 'wiped', databases: wiped, seen: known?.seen ?? null };
  return known ? { state: 'intact' } : { state: 'new' };
}

/** Records what the databases hold now, for the message after a later wipe. */
export function noteSeen(counts: Omit<SeenCounts, 'time'>, local: LocalLike | null = defaultLocal(), time = Date.now()): void {
  const known = readLocal(local);
  if (!known) return; // checkStores has not run: nothing to attach the counts to
  const prev = known.seen;
  if (prev && prev.checkpoints === counts.checkpoints && prev.runs === counts.runs) return;
  writeLocal(local, { ...known, seen: { ...counts, time } });
}

/** The wipe in words: what was there, that it is gone, and why it may have happened. */
export function wipedMessage(c: Extract<StoreCheck, { state: 'wiped' }>, persisted: boolean | null): string {
  const held = c.seen && (c.seen.checkpoints > 0 || c.seen.runs > 0)
    ? ` When last seen (${new Date(c.seen.time).toLocaleString()}) it held ${c.seen.checkpoints} checkpoint${c.seen.checkpoints === 1 ? '' : 's'} and ${c.seen.runs} run log${c.seen.runs === 1 ? '' : 's'}; they are gone.`
    : ' Checkpoints and run logs saved before are gone.';
  const why = persisted
    ? ' Storage is now marked persistent, so the browser should not evict it again.'
    : ' The browser may do this when disk space runs low or after a crash; storage is not marked persistent here, so export adapters and run logs you want to keep.';
  return `The browser cleared this lab's storage (${c.databases.join(', ')}) since it was last open.${held}${why}`;
}
