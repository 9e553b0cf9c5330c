// Checkpoints in IndexedDB.
//
// A checkpoint is one manifest (small: ids, step, metrics, run spec, tensor index, optimiser and
// RNG state as JSON) plus the bytes of every tensor, concatenated in index order into one stream
// and cut into chunks of at most `chunkBytes` (32 MiB by default: IndexedDB rejects or stalls on
// giant values, and a chunk is the most a save or a load holds twice in memory).
//
// Keys:  m/<id>                  the manifest
//        c/<id>/<chunk number>   a chunk (an ArrayBuffer)
//
// Crash safety comes from ordering, not transactions: chunks are written first and the manifest
// last, and a checkpoint exists only once its manifest does. A save that dies halfway leaves
// chunks nobody points at (removed by the failing save itself, or later by gcOrphanChunks) and
// every earlier checkpoint untouched. Deleting goes the other way: manifest first, then chunks.
//
// Tensors travel as plain typed arrays with names, shapes and dtypes; the worker converts tfjs
// tensors on either side, so this module never needs tfjs.

import type { Metrics } from '../contract/report';
import { formatBytes } from '../contract/formatBytes';
import { idbKv, newId, pad, StorageError, storageEstimate, type Kv, type StorageEstimateResult } from './kv';
import { brief } from '../contract/brief';
import {
  CHECKPOINT_DB,
  CHECKPOINT_FORMAT,
  CHUNK_LOCK,
  chunkPrefix,
  manifestKey,
  MANIFEST_PREFIX,
  CHUNK_PREFIX,
  newestFirst,
  orphanChunks,
  summarizeCheckpoint,
  type CheckpointManifest,
  type CheckpointSummary,
  type ChunkEntry,
  type TensorGroup,
  type TensorIndexEntry,
} from '../contract/storageFormat';
import { findNonFinite, type NamedTensor } from '../contract/namedTensor';

// The layout and record shapes are shared with the page (contract/storageFormat.ts).
export { CHECKPOINT_FORMAT, CHECKPOINT_DB } from '../contract/storageFormat';
export type {
  CheckpointManifest,
  CheckpointSummary,
  ChunkEntry,
  TensorDtype,
  TensorGroup,
  TensorIndexEntry,
} from '../contract/storageFormat';

// Named tensors and their finiteness check are the contract's (recipes read them without storage/).
export { findNonFinite, type NamedTensor };

export interface CheckpointInput {
  runId: string;
  /** Shown in lists; defaults to "step <n>". */
  name?: string;
  step: number;
  /** Defaults to Date.now(). */
  time?: number;
  metrics?: Metrics;
  spec?: unknown;
  /** Trainable parameters (LoRA A/B, value head ...), in the order the optimiser sees them. */
  tensors: NamedTensor[];
  optimizer?: { state?: unknown; tensors?: NamedTensor[] };
  rng?: unknown;
  extra?: unknown;
}

export interface Checkpoint {
  manifest: CheckpointManifest;
  tensors: NamedTensor[];
  optimizer: { state: unknown; tensors: NamedTensor[] };
  rng: unknown;
  extra: unknown;
  spec: unknown;
}

export interface SaveOptions {
  /** Save even if a float tensor holds NaN/Infinity (the manifest records where). */
  force?: boolean;
}

export interface CheckpointStoreOptions {
  kv?: Kv;
  /** Largest chunk in bytes (default 32 MiB; tests pass a few bytes). */
  chunkBytes?: number;
  /** Where quota and usage come from (default navigator.storage.estimate). */
  estimate?: () => Promise<StorageEstimateResult>;
}

export interface CheckpointUsage {
  checkpoints: number;
  /** Tensor bytes of the listed checkpoints (manifests are a few KiB more). */
  checkpointBytes: number;
  /** Chunks of saves that never got their manifest, and their bytes. */
  orphanChunks: number;
  orphanBytes: number;
  usage: number | null;
  quota: number | null;
}

export const DEFAULT_CHUNK_BYTES = 32 * 1024 * 1024;

const chunkKey = (id: string, n: number) => `${chunkPrefix(id)}${pad(n, 6)}`;

type LockManagerLike = {
  request<T>(
    name: string,
    opts: { mode: 'shared' | 'exclusive'; ifAvailable?: boolean },
    cb: (lock: unknown) => Promise<T>,
  ): Promise<T>;
};
const lockManager = (): LockManagerLike | null =>
  (globalThis as { navigator?: { locks?: LockManagerLike } }).navigator?.locks ?? null;

/** Runs `fn` under the chunk lock; without the Web Locks API (Node), runs it as is. `fn` gets false if the lock was busy (ifAvailable). */
function withChunkLock<T>(
  mode: 'shared' | 'exclusive',
  ifAvailable: boolean,
  fn: (held: boolean) => Promise<T>,
): Promise<T> {
  const locks = lockManager();
  if (!locks) return fn(true);
  return locks.request(CHUNK_LOCK, { mode, ifAvailable }, (lock) => fn(lock !== null));
}

// ---------------------------------------------------------------------------------------------
// Validation helpers

function checkTensor(t: NamedTensor, where: string): void {
  if (typeof t.name !== 'string' || t.name === '')
    throw new StorageError('invalid', `${where}: tensor name must be a non-empty string`);
  const w = `${where}: tensor "${t.name}"`;
  const want = t.dtype === 'float32' ? Float32Array : t.dtype === 'int32' ? Int32Array : null;
  if (!want) throw new StorageError('invalid', `${w}: dtype "${String(t.dtype)}" is not float32 or int32`);
  if (!(t.data instanceof want))
    throw new StorageError(
      'invalid',
      `${w}: dtype ${t.dtype} needs a ${want.name}, got ${t.data?.constructor?.name ?? typeof t.data}`,
    );
  if (!Array.isArray(t.shape) || !t.shape.every((s) => Number.isSafeInteger(s) && s >= 0)) {
    throw new StorageError('invalid', `${w}: shape must be non-negative integers, got ${brief(t.shape)}`);
  }
  const n = t.shape.reduce((a, b) => a * b, 1);
  if (n !== t.data.length)
    throw new StorageError(
      'invalid',
      `${w}: shape [${t.shape.join(', ')}] has ${n} elements but data has ${t.data.length}`,
    );
}

/** A JSON-safe deep copy (so a later mutation by the caller cannot change the stored state). */
function jsonCopy(v: unknown, field: string, where: string): unknown {
  if (v === undefined) return null;
  try {
    return JSON.parse(JSON.stringify(v)) as unknown;
  } catch (e) {
    throw new StorageError('invalid', `${where}: field "${field}" is not JSON-safe: ${(e as Error).message}`);
  }
}

function isQuotaError(e: unknown): boolean {
  const x = e as { name?: string; code?: number; inner?: unknown } | null;
  // DOMException code 22 is the legacy QUOTA_EXCEEDED_ERR; some engines wrap the DOMException.
  return !!x && (x.name === 'QuotaExceededError' || x.code === 22 || (x.inner !== undefined && isQuotaError(x.inner)));
}

function asBytes(v: unknown): Uint8Array | null {
  if (v instanceof Uint8Array) return v;
  if (ArrayBuffer.isView(v)) return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
  // Not `instanceof ArrayBuffer`: a value cloned by another realm's structuredClone fails it.
  if (Object.prototype.toString.call(v) === '[object ArrayBuffer]') return new Uint8Array(v as ArrayBuffer);
  return null;
}

const label = (m: { name: string; runId: string; step: number }) =>
  `Checkpoint "${m.name}" (run ${m.runId}, step ${m.step})`;

// ---------------------------------------------------------------------------------------------

export class CheckpointStore {
  readonly kv: Kv;
  readonly chunkBytes: number;
  private readonly estimate: () => Promise<StorageEstimateResult>;
  /** Ids whose save is under way here: their chunks are not orphans yet. */
  private readonly saving = new Set<string>();

  constructor(opts: CheckpointStoreOptions = {}) {
    this.kv = opts.kv ?? idbKv(CHECKPOINT_DB);
    this.chunkBytes = opts.chunkBytes ?? DEFAULT_CHUNK_BYTES;
    if (!Number.isSafeInteger(this.chunkBytes) || this.chunkBytes <= 0)
      throw new Error(`CheckpointStore: chunkBytes must be a positive integer, got ${this.chunkBytes}`);
    this.estimate = opts.estimate ?? storageEstimate;
  }

  /**
   * Writes a checkpoint (chunks first, manifest last) and returns its manifest. On any failure
   * its own chunks are removed, earlier checkpoints are untouched, and one StorageError says
   * how many bytes it needed and what the quota and usage are.
   */
  async save(input: CheckpointInput, opts: SaveOptions = {}): Promise<CheckpointManifest> {
    const where = `Checkpoint of run ${input.runId} at step ${input.step}`;
    if (typeof input.runId !== 'string' || input.runId === '')
      throw new StorageError('invalid', `${where}: runId must be a non-empty string`);
    if (!Number.isSafeInteger(input.step) || input.step < 0)
      throw new StorageError('invalid', `${where}: step must be a non-negative integer, got ${input.step}`);
    const groups: [TensorGroup, NamedTensor[]][] = [
      ['params', input.tensors ?? []],
      ['optimizer', input.optimizer?.tensors ?? []],
    ];
    const seen = new Set<string>();
    for (const [g, ts] of groups) {
      for (const t of ts) {
        checkTensor(t, where);
        const key = `${g}/${t.name}`;
        if (seen.has(key)) throw new StorageError('invalid', `${where}: tensor "${t.name}" appears twice in ${g}`);
        seen.add(key);
      }
    }
    const bad = findNonFinite(groups.flatMap(([, ts]) => ts));
    const nonFinite = bad ? `tensor "${bad.tensor}" holds ${bad.value} at element ${bad.index}` : null;
    if (nonFinite && !opts.force) {
      throw new StorageError(
        'non-finite',
        `${where} was not saved: ${nonFinite} (training diverged; resume from the last good checkpoint, or pass force: true to save it anyway)`,
      );
    }

    const id = newId('ckpt');
    const cb = this.chunkBytes;
    const index: TensorIndexEntry[] = [];
    let total = 0;
    for (const [group, ts] of groups) {
      for (const t of ts) {
        const byteLength = t.data.byteLength;
        const first = Math.floor(total / cb);
        const last = Math.floor((total + byteLength - 1) / cb);
        const chunks: string[] = [];
        if (byteLength > 0) for (let c = first; c <= last; c++) chunks.push(chunkKey(id, c));
        index.push({ name: t.name, group, dtype: t.dtype, shape: t.shape.slice(), offset: total, byteLength, chunks });
        total += byteLength;
      }
    }
    const nChunks = Math.ceil(total / cb);
    const chunks: ChunkEntry[] = [];
    for (let c = 0; c < nChunks; c++) chunks.push({ key: chunkKey(id, c), byteLength: Math.min(cb, total - c * cb) });

    const manifest: CheckpointManifest = {
      format: CHECKPOINT_FORMAT,
      id,
      runId: input.runId,
      name: input.name ?? `step ${input.step}`,
      step: input.step,
      time: input.time ?? Date.now(),
      metrics: { ...(input.metrics ?? {}) },
      sizeBytes: total,
      spec: jsonCopy(input.spec, 'spec', where),
      tensors: index,
      chunks,
      optimizerState: jsonCopy(input.optimizer?.state, 'optimizer.state', where),
      rng: jsonCopy(input.rng, 'rng', where),
      extra: jsonCopy(input.extra, 'extra', where),
      nonFinite,
    };

    return withChunkLock('shared', false, () => this.write(id, manifest, groups, chunks));
  }

  /** The writes of save(): chunks, then the manifest; on failure its own chunks are removed. */
  private async write(
    id: string,
    manifest: CheckpointManifest,
    groups: [TensorGroup, NamedTensor[]][],
    chunks: ChunkEntry[],
  ): Promise<CheckpointManifest> {
    const cb = this.chunkBytes;
    const total = manifest.sizeBytes;
    const nChunks = chunks.length;
    this.saving.add(id);
    let chunkNo = 0;
    let written = 0;
    try {
      // Fill one chunk-sized buffer at a time from the tensors, so memory holds one chunk extra.
      let buf = new Uint8Array(Math.min(cb, total));
      let fill = 0;
      for (const [, ts] of groups) {
        for (const t of ts) {
          const src = new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength);
          let p = 0;
          while (p < src.byteLength) {
            const n = Math.min(src.byteLength - p, buf.byteLength - fill);
            buf.set(src.subarray(p, p + n), fill);
            fill += n;
            p += n;
            if (fill === buf.byteLength) {
              await this.kv.set(chunks[chunkNo].key, buf.buffer);
              written += fill;
              chunkNo++;
              buf = new Uint8Array(Math.min(cb, total - written));
              fill = 0;
            }
          }
        }
      }
      chunkNo = nChunks; // every chunk is down; a failure now is the manifest's
      await this.kv.set(manifestKey(id), manifest);
    } catch (e) {
      const cleanup = await this.removeChunks(
        id,
        chunks.slice(0, Math.min(chunkNo + 1, nChunks)).map((c) => c.key),
      );
      throw await this.saveError(e, manifest, chunkNo, written, cleanup);
    } finally {
      this.saving.delete(id);
    }
    return manifest;
  }

  /** Deletes the given chunk keys and anything else under the id's prefix; false if that failed. */
  private async removeChunks(id: string, keys: string[]): Promise<boolean> {
    try {
      await this.kv.del(manifestKey(id));
      const stored = await this.kv.keys(chunkPrefix(id)).catch(() => [] as string[]);
      await this.kv.delMany([...new Set([...keys, ...stored])]);
      return true;
    } catch {
      return false;
    }
  }

  private async saveError(
    e: unknown,
    m: CheckpointManifest,
    chunkNo: number,
    written: number,
    cleaned: boolean,
  ): Promise<StorageError> {
    const quota = isQuotaError(e);
    const est = await this.estimate().catch(() => ({ usage: null, quota: null }));
    const usage =
      est.usage !== null && est.quota !== null
        ? `storage usage ${est.usage} bytes (${formatBytes(est.usage)}) of a quota of ${est.quota} bytes (${formatBytes(est.quota)})`
        : 'storage quota and usage unknown (navigator.storage.estimate is unavailable)';
    const stage =
      chunkNo < m.chunks.length
        ? `at chunk ${chunkNo + 1} of ${m.chunks.length} (${written} bytes written)`
        : 'writing the manifest';
    const cause = quota
      ? 'the browser storage quota is exceeded'
      : `an IndexedDB write failed (${(e as Error)?.name ?? 'Error'}: ${(e as Error)?.message ?? String(e)})`;
    const after = cleaned
      ? 'Its partial chunks were removed and earlier checkpoints are intact'
      : 'Earlier checkpoints are intact; its partial chunks could not be removed now (gcOrphanChunks will)';
    return new StorageError(
      quota ? 'quota' : 'write',
      `${label(m)} was not saved: ${cause} ${stage}. It needed ${m.sizeBytes} bytes (${formatBytes(m.sizeBytes)}); ${usage}. ${after}${quota ? '; delete old checkpoints or runs to free space' : ''}.`,
      { cause: e },
    );
  }

  /** Every checkpoint (or one run's), newest first (by time, then step). */
  async list(runId?: string): Promise<CheckpointSummary[]> {
    const all = await this.kv.values<CheckpointManifest>(MANIFEST_PREFIX);
    return all
      .filter((m) => runId === undefined || m.runId === runId)
      .map(summarizeCheckpoint)
      .sort(newestFirst);
  }

  /** The newest checkpoint of a run saved without NaN/Infinity (what a resume should use). */
  async latestGood(runId: string): Promise<CheckpointSummary | null> {
    const l = (await this.list(runId)).filter((c) => c.nonFinite === null);
    l.sort((a, b) => b.step - a.step || b.time - a.time);
    return l[0] ?? null;
  }

  async manifest(id: string): Promise<CheckpointManifest> {
    const m = await this.kv.get<CheckpointManifest>(manifestKey(id));
    if (!m)
      throw new StorageError(
        'not-found',
        `No checkpoint with id "${id}" in IndexedDB (deleted, or saved in another browser profile)`,
      );
    return m;
  }

  /** Reads a checkpoint back, checking that every chunk is there with the length the index says. */
  async load(id: string): Promise<Checkpoint> {
    const m = await this.manifest(id);
    const what = `${label(m)} [${m.id}]`;
    if (m.format !== CHECKPOINT_FORMAT) {
      throw new StorageError(
        'corrupt',
        `${what} cannot be loaded: manifest format ${String(m.format)}, this version reads format ${CHECKPOINT_FORMAT}`,
      );
    }
    if (!Number.isSafeInteger(m.step) || m.step < 0)
      throw new StorageError('corrupt', `${what}: manifest step must be a non-negative integer, got ${String(m.step)}`);
    if (!Array.isArray(m.tensors) || !Array.isArray(m.chunks))
      throw new StorageError('corrupt', `${what}: manifest has no tensor or chunk index`);
    const present = new Set(await this.kv.keys(chunkPrefix(id)));
    m.chunks.forEach((c, i) => {
      if (!present.has(c.key)) {
        throw new StorageError(
          'missing-chunk',
          `${what} cannot be loaded: chunk "${c.key}" (${i + 1} of ${m.chunks.length}, ${c.byteLength} bytes) is missing from IndexedDB`,
        );
      }
    });
    const streamBytes = m.chunks.reduce((a, c) => a + c.byteLength, 0);
    if (streamBytes !== m.sizeBytes)
      throw new StorageError(
        'corrupt',
        `${what}: chunks hold ${streamBytes} bytes but the manifest says ${m.sizeBytes}`,
      );
    const out = m.tensors.map((e) => {
      const n = e.shape.reduce((a, b) => a * b, 1);
      if (n * 4 !== e.byteLength || e.offset + e.byteLength > m.sizeBytes) {
        throw new StorageError(
          'corrupt',
          `${what}: index entry of tensor "${e.name}" is inconsistent (shape [${e.shape.join(', ')}], ${e.byteLength} bytes at ${e.offset})`,
        );
      }
      const data = e.dtype === 'float32' ? new Float32Array(n) : new Int32Array(n);
      return { e, data, bytes: new Uint8Array(data.buffer) };
    });
    // Scatter chunk by chunk: tensors are in stream order, so one cursor walks them.
    let t = 0;
    let start = 0;
    for (let i = 0; i < m.chunks.length; i++) {
      const c = m.chunks[i];
      const raw = await this.kv.get<unknown>(c.key);
      if (raw === undefined)
        throw new StorageError(
          'missing-chunk',
          `${what} cannot be loaded: chunk "${c.key}" (${i + 1} of ${m.chunks.length}) is missing from IndexedDB`,
        );
      const bytes = asBytes(raw);
      if (!bytes || bytes.byteLength !== c.byteLength) {
        throw new StorageError(
          'corrupt',
          `${what} cannot be loaded: chunk "${c.key}" holds ${bytes ? bytes.byteLength : 'no'} bytes, the index says ${c.byteLength}`,
        );
      }
      const end = start + c.byteLength;
      while (t < out.length && out[t].e.offset + out[t].e.byteLength <= start) t++;
      for (let k = t; k < out.length && out[k].e.offset < end; k++) {
        const { e, bytes: dst } = out[k];
        const from = Math.max(e.offset, start);
        const to = Math.min(e.offset + e.byteLength, end);
        dst.set(bytes.subarray(from - start, to - start), from - e.offset);
      }
      start = end;
    }
    const tensorsOf = (g: TensorGroup): NamedTensor[] =>
      out
        .filter((o) => o.e.group === g)
        .map(({ e, data }) => ({ name: e.name, dtype: e.dtype, shape: e.shape.slice(), data }));
    return {
      manifest: m,
      tensors: tensorsOf('params'),
      optimizer: { state: m.optimizerState, tensors: tensorsOf('optimizer') },
      rng: m.rng,
      extra: m.extra,
      spec: m.spec,
    };
  }

  async rename(id: string, name: string): Promise<CheckpointManifest> {
    if (typeof name !== 'string' || name.trim() === '')
      throw new StorageError('invalid', `Checkpoint "${id}": a name must be a non-empty string`);
    const m = await this.manifest(id);
    const next = { ...m, name: name.trim() };
    await this.kv.set(manifestKey(id), next);
    return next;
  }

  /** Deletes the manifest first (the checkpoint is gone at once), then its chunks. Idempotent. */
  async delete(id: string): Promise<boolean> {
    const m = await this.kv.get<CheckpointManifest>(manifestKey(id));
    if (m) await this.kv.del(manifestKey(id));
    const keys = new Set([...(m?.chunks.map((c) => c.key) ?? []), ...(await this.kv.keys(chunkPrefix(id)))]);
    if (keys.size > 0) await this.kv.delMany([...keys]);
    return !!m;
  }

  /** Deletes every checkpoint of a run; returns how many. */
  async deleteRun(runId: string): Promise<number> {
    const l = await this.list(runId);
    for (const c of l) await this.delete(c.id);
    return l.length;
  }

  /** Keeps the newest `keep` checkpoints of a run (by step), deleting older ones. */
  async prune(runId: string, keep: number): Promise<string[]> {
    const l = (await this.list(runId)).sort((a, b) => b.step - a.step || b.time - a.time);
    const gone = l.slice(Math.max(0, keep)).map((c) => c.id);
    for (const id of gone) await this.delete(id);
    return gone;
  }

  /** Keys of chunks that no manifest points at (saves under way in this store excluded). */
  async orphanChunkKeys(): Promise<string[]> {
    return orphanChunks(await this.kv.keys(MANIFEST_PREFIX), await this.kv.keys(CHUNK_PREFIX), this.saving);
  }

  /**
   * Removes chunks that no manifest points at (left by a tab killed between its chunks and its
   * manifest). Skipped (returns 0) while a save holds the chunk lock anywhere in this origin.
   */
  async gcOrphanChunks(): Promise<number> {
    return withChunkLock('exclusive', true, async (held) => {
      if (!held) return 0;
      const orphans = await this.orphanChunkKeys();
      if (orphans.length) await this.kv.delMany(orphans);
      return orphans.length;
    });
  }

  /** Checkpoint bytes stored here, with the browser's quota and usage where it reports them. */
  async usage(): Promise<CheckpointUsage> {
    const l = await this.list();
    // Counted only while no save holds the chunk lock: a save under way elsewhere (the worker,
    // another tab) has chunks without a manifest that are not orphans.
    const { orphans, orphanBytes } = await withChunkLock('exclusive', true, async (held) => {
      const keys = held ? await this.orphanChunkKeys() : [];
      let bytes = 0;
      // One chunk in memory at a time; there are none after a start's gcOrphanChunks, bar a fresh kill.
      for (const k of keys) bytes += asBytes(await this.kv.get<unknown>(k))?.byteLength ?? 0;
      return { orphans: keys, orphanBytes: bytes };
    });
    const est = await this.estimate().catch(() => ({ usage: null, quota: null }));
    return {
      checkpoints: l.length,
      checkpointBytes: l.reduce((a, c) => a + c.sizeBytes, 0),
      orphanChunks: orphans.length,
      orphanBytes,
      usage: est.usage,
      quota: est.quota,
    };
  }
}

let defaultStore: CheckpointStore | null = null;
/** The app's checkpoint store (database "sparring-checkpoints"), created on first use. */
export function checkpoints(): CheckpointStore {
  return (defaultStore ??= new CheckpointStore());
}
