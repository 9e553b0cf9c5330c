// Did the browser wipe our IndexedDB? Each database gets a birth record (`meta/store`, a random
// id) the first time the lab opens it, and the ids are also kept outside IndexedDB (localStorage
// and Cache Storage). A database whose record is gone while a copy still names it was deleted or
// recreated behind the lab's back (Chromium once recreated the origin's IndexedDB at relaunch
// after a kill; eviction under disk pressure does the same): the page then says so instead of
// "No checkpoints yet".
//
// Two copies because neither is sure alone: Chromium writes localStorage to disk lazily (a
// browser killed within seconds of a change comes back without it), and Cache Storage may be
// unavailable (Node, some private modes). "Clear site data" clears all three places: that is a
// fresh start, not a wipe. A copy that was lost only forgets the ids; the next start adopts
// them from IndexedDB again.
import { newId } from '../contract/browserStorage';
import type { Kv } from '../contract/kv';

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

/** A place outside IndexedDB that keeps the mark (JSON text). */
export interface MarkPlace {
  read(): Promise<string | null>;
  write(text: string): Promise<void>;
}

type LocalLike = Pick<Storage, 'getItem' | 'setItem'>;

/** localStorage as a mark place (null where there is none). */
export function localMarkPlace(
  local: LocalLike | null = typeof localStorage === 'undefined' ? null : localStorage,
): MarkPlace | null {
  if (!local) return null;
  return {
    read: async () => local.getItem(LOCAL_MARK_KEY),
    write: async (text) => local.setItem(LOCAL_MARK_KEY, text),
  };
}

const CACHE_NAME = 'sparring-storage-mark';
const CACHE_KEY = '/__sparring/storage-mark.json';

type CachesLike = {
  open(name: string): Promise<{
    match(key: string): Promise<{ text(): Promise<string> } | undefined>;
    put(key: string, r: Response): Promise<void>;
  }>;
};

/** Cache Storage as a mark place (null where there is none). */
export function cacheMarkPlace(
  caches: CachesLike | null = (globalThis as { caches?: CachesLike }).caches ?? null,
): MarkPlace | null {
  if (!caches) return null;
  return {
    read: async () => (await (await (await caches.open(CACHE_NAME)).match(CACHE_KEY))?.text()) ?? null,
    write: async (text) =>
      (await caches.open(CACHE_NAME)).put(
        CACHE_KEY,
        new Response(text, { headers: { 'content-type': 'application/json' } }),
      ),
  };
}

const defaultPlaces = (): MarkPlace[] => [localMarkPlace(), cacheMarkPlace()].filter((p): p is MarkPlace => p !== null);

function parseMark(text: string | null): LocalMark | null {
  try {
    const o = JSON.parse(text ?? 'null') as Partial<LocalMark> | null;
    if (!o || typeof o.ids !== 'object' || o.ids === null) return null;
    const ids = Object.fromEntries(Object.entries(o.ids).filter(([, v]) => typeof v === 'string')) as Record<
      string,
      string
    >;
    const s = o.seen;
    const seen = s && [s.checkpoints, s.runs, s.time].every((x) => typeof x === 'number') ? s : null;
    return { ids, seen };
  } catch {
    return null; // a corrupt mark is no mark
  }
}

/** The union of the copies: every database id any of them names, the newest counts. */
async function readMarks(places: readonly MarkPlace[]): Promise<LocalMark | null> {
  let out: LocalMark | null = null;
  for (const p of places) {
    const m = parseMark(await p.read().catch(() => null));
    if (!m) continue;
    out ??= { ids: {}, seen: null };
    out.ids = { ...m.ids, ...out.ids };
    if (m.seen && (!out.seen || m.seen.time > out.seen.time)) out.seen = m.seen;
  }
  return out;
}

async function writeMarks(places: readonly MarkPlace[], mark: LocalMark): Promise<void> {
  const text = JSON.stringify(mark);
  // Private mode or a full quota: wipe detection is lost for this profile, nothing else.
  await Promise.all(places.map((p) => p.write(text).catch(() => undefined)));
}

/**
 * Compares each database's birth record with the copies' ids, writes the records that are
 * missing (IndexedDB first, then the copies), and says whether a database the lab had used was
 * wiped since.
 */
export async function checkStores(
  stores: readonly { name: string; kv: Kv }[],
  places: readonly MarkPlace[] = defaultPlaces(),
): Promise<StoreCheck> {
  const known = await readMarks(places);
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
  await writeMarks(places, { ids, seen: known?.seen ?? null });
  if (wiped.length) return { state: 'wiped', databases: wiped, seen: known?.seen ?? null };
  return known ? { state: 'intact' } : { state: 'new' };
}

/** Records what the databases hold now, for the message after a later wipe. */
export async function noteSeen(
  counts: Omit<SeenCounts, 'time'>,
  places: readonly MarkPlace[] = defaultPlaces(),
  time = Date.now(),
): Promise<void> {
  const known = await readMarks(places);
  if (!known) return; // checkStores has not run: nothing to attach the counts to
  const prev = known.seen;
  if (prev && prev.checkpoints === counts.checkpoints && prev.runs === counts.runs) return;
  await writeMarks(places, { ...known, seen: { ...counts, time } });
}

/** The wipe in words: what was there, that it is gone, and why it may have happened. */
export function wipedMessage(c: Extract<StoreCheck, { state: 'wiped' }>, persisted: boolean | null): string {
  const held =
    c.seen && (c.seen.checkpoints > 0 || c.seen.runs > 0)
      ? ` When last seen (${new Date(c.seen.time).toLocaleString()}) it held ${c.seen.checkpoints} checkpoint${c.seen.checkpoints === 1 ? '' : 's'} and ${c.seen.runs} run log${c.seen.runs === 1 ? '' : 's'}; they are gone.`
      : ' Checkpoints and run logs saved before are gone.';
  const why = persisted
    ? ' Storage is now marked persistent, so the browser should not evict it again.'
    : ' The browser may do this when disk space runs low or after a crash; storage is not marked persistent here, so export adapters and run logs you want to keep.';
  return `The browser cleared this lab's storage (${c.databases.join(', ')}) since it was last open.${held}${why}`;
}
