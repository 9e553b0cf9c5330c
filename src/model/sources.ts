// Model sources: one interface over the places a Hugging Face-layout folder (config.json,
// tokenizer.json, tokenizer_config.json, generation_config.json, model.safetensors or
// model.safetensors.index.json + shards) can come from:
//   - a base URL (the hub, a mirror, a test server), downloaded with streaming progress and kept
//     in the browser's Cache Storage so the second load works offline;
//   - a folder the user picked (a FileList from <input webkitdirectory>, or a
//     FileSystemDirectoryHandle from showDirectoryPicker);
//   - a plain map of name -> bytes (tests, files built in memory).
// A source hands out raw bytes (or Blobs) per file name; parsing is the caller's business.

import { brief, briefText } from '../contract/brief';
import { checkFileName, DEFAULT_CACHE_NAME, encodePath, ModelSourceError } from '../contract/modelSource';

/** Where and how far a file's bytes have arrived. `loaded` never decreases for one file. */
export interface FileProgress {
  file: string;
  loaded: number;
  /** Bytes expected; null while unknown (no content-length). Equals `loaded` on the last event. */
  total: number | null;
  /** True when the bytes come from Cache Storage or a local file, not the network. */
  local: boolean;
  /** True on the last event for the file. */
  done: boolean;
}

export type ProgressListener = (p: FileProgress) => void;

export interface ReadOptions {
  onProgress?: ProgressListener;
  signal?: AbortSignal;
}

// The base class of every model-source error lives in contract/ (a bad hub id is one too).
export { ModelSourceError };

/** A file the folder does not have. */
export class MissingModelFileError extends ModelSourceError {
  readonly file: string;
  readonly source: string;
  constructor(file: string, source: string, detail = '') {
    super(`${file} not found in ${source}${detail ? ` (${detail})` : ''}`);
    this.name = 'MissingModelFileError';
    this.file = file;
    this.source = source;
  }
}

export interface ModelSource {
  readonly kind: 'url' | 'files' | 'directory' | 'map';
  /** Human-readable origin for messages: a model id, a folder name, a URL. */
  readonly label: string;
  /** The file names the folder has (paths with '/' for subfolders), or null when it cannot list (URLs). */
  list(): Promise<string[] | null>;
  has(name: string, opts?: ReadOptions): Promise<boolean>;
  getBytes(name: string, opts?: ReadOptions): Promise<ArrayBuffer>;
  getBlob(name: string, opts?: ReadOptions): Promise<Blob>;
  getText(name: string, opts?: ReadOptions): Promise<string>;
  getJson<T = unknown>(name: string, opts?: ReadOptions): Promise<T>;
}

// ---------------------------------------------------------------------------------------------
// Streaming reads with progress

function abortError(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('The operation was aborted.', 'AbortError');
}

/**
 * Reads a byte stream to the end, reporting progress. `total` is the expected length when known;
 * a stream that ends short of it is an error (a dropped connection must not pass as a file).
 */
async function readStream(
  stream: ReadableStream<Uint8Array>,
  total: number | null,
  file: string,
  label: string,
  local: boolean,
  opts: ReadOptions,
): Promise<ArrayBuffer> {
  const report = opts.onProgress;
  report?.({ file, loaded: 0, total, local, done: false });
  const reader = stream.getReader();
  // With a known length fill one buffer in place; otherwise (or if the server under-reported)
  // collect chunks and join them at the end.
  let pre: Uint8Array | null = null;
  try {
    pre = total !== null ? new Uint8Array(total) : null;
  } catch {
    pre = null; // a length too large to allocate up front: collect chunks, fail only if they do
  }
  const chunks: Uint8Array[] = [];
  let loaded = 0;
  let shownTotal = total;
  let finished = false;
  try {
    for (;;) {
      if (opts.signal?.aborted) throw abortError(opts.signal);
      let step: ReadableStreamReadResult<Uint8Array>;
      try {
        step = await reader.read();
      } catch (e) {
        if (opts.signal?.aborted) throw abortError(opts.signal);
        const why = (e as Error).message ?? String(e);
        throw new ModelSourceError(
          `${file} from ${label}: ${local ? 'read' : 'download'} failed after ${loaded}${total !== null ? ` of ${total}` : ''} bytes: ${why}`,
        );
      }
      const { done, value } = step;
      if (done) break;
      if (pre && chunks.length === 0 && loaded + value.byteLength <= pre.byteLength) {
        pre.set(value, loaded);
      } else {
        if (pre && chunks.length === 0) chunks.push(pre.subarray(0, loaded));
        chunks.push(value);
      }
      loaded += value.byteLength;
      if (shownTotal !== null && loaded > shownTotal) shownTotal = null; // length was wrong: unknown now
      report?.({ file, loaded, total: shownTotal, local, done: false });
    }
    finished = true;
  } finally {
    // On an error or abort, cancel so the connection (or file read) is let go at once.
    if (!finished) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
  if (total !== null && loaded < total) {
    throw new ModelSourceError(
      `${file} from ${label}: ${local ? 'read' : 'download'} ended after ${loaded} of ${total} bytes`,
    );
  }
  let out: Uint8Array;
  if (pre && chunks.length === 0) {
    out = pre;
  } else {
    out = new Uint8Array(loaded);
    let pos = 0;
    for (const c of chunks) {
      out.set(c, pos);
      pos += c.byteLength;
    }
  }
  report?.({ file, loaded, total: loaded, local, done: true });
  return out.buffer as ArrayBuffer;
}

async function blobBytes(blob: Blob, file: string, label: string, opts: ReadOptions): Promise<ArrayBuffer> {
  return readStream(blob.stream() as ReadableStream<Uint8Array>, blob.size, file, label, true, opts);
}

function parseJson<T>(text: string, file: string, label: string): T {
  try {
    return JSON.parse(text) as T;
  } catch (e) {
    throw new ModelSourceError(`${file} from ${label}: not valid JSON: ${(e as Error).message}`);
  }
}

/** Shared plumbing: subclasses say how to find a file as a Blob (null when absent). */
abstract class BlobSource implements ModelSource {
  abstract readonly kind: ModelSource['kind'];
  abstract readonly label: string;
  protected abstract find(name: string): Promise<Blob | null>;
  abstract list(): Promise<string[] | null>;

  async has(name: string): Promise<boolean> {
    return (await this.find(checkFileName(name))) !== null;
  }
  async getBlob(name: string, opts: ReadOptions = {}): Promise<Blob> {
    const blob = await this.find(checkFileName(name));
    if (!blob) throw new MissingModelFileError(name, this.label);
    if (opts.onProgress) opts.onProgress({ file: name, loaded: blob.size, total: blob.size, local: true, done: true });
    return blob;
  }
  async getBytes(name: string, opts: ReadOptions = {}): Promise<ArrayBuffer> {
    const blob = await this.find(checkFileName(name));
    if (!blob) throw new MissingModelFileError(name, this.label);
    return blobBytes(blob, name, this.label, opts);
  }
  async getText(name: string, opts: ReadOptions = {}): Promise<string> {
    return new TextDecoder().decode(await this.getBytes(name, opts));
  }
  async getJson<T = unknown>(name: string, opts: ReadOptions = {}): Promise<T> {
    return parseJson<T>(await this.getText(name, opts), name, this.label);
  }
}

// ---------------------------------------------------------------------------------------------
// In-memory map

export type FileData = ArrayBuffer | ArrayBufferView | Blob | string;

function toBlob(data: FileData): Blob {
  if (data instanceof Blob) return data;
  if (typeof data === 'string') return new Blob([data]);
  if (data instanceof ArrayBuffer) return new Blob([data]);
  return new Blob([new Uint8Array(data.buffer as ArrayBuffer, data.byteOffset, data.byteLength)]);
}

/** Files held as Blobs by name: the in-memory map and the picked-folder FileList alike. */
class BlobMapSource extends BlobSource {
  constructor(
    readonly kind: 'map' | 'files',
    private readonly files: Map<string, Blob>,
    readonly label: string,
  ) {
    super();
  }
  protected async find(name: string): Promise<Blob | null> {
    return this.files.get(name) ?? null;
  }
  async list(): Promise<string[]> {
    return [...this.files.keys()].sort();
  }
}

/** A source over files held in memory: name -> ArrayBuffer, typed array, Blob or text. */
export function mapSource(
  files: Record<string, FileData> | Map<string, FileData>,
  opts: { label?: string } = {},
): ModelSource {
  const entries = files instanceof Map ? [...files.entries()] : Object.entries(files);
  const m = new Map<string, Blob>();
  for (const [name, data] of entries) m.set(checkFileName(name), toBlob(data));
  return new BlobMapSource('map', m, opts.label ?? 'in-memory files');
}

// ---------------------------------------------------------------------------------------------
// A picked folder: FileList from <input type="file" webkitdirectory>

/**
 * A source over the Files of a picked folder. Paths come from `webkitRelativePath`
 * ("SmolLM2/config.json"); the folder's own name, shared by every path, is dropped and becomes
 * the label. Files without a relative path (a multi-select of loose files) keep their names.
 */
export function filesSource(files: ArrayLike<File> | Iterable<File>, opts: { label?: string } = {}): ModelSource {
  const list = Array.from(files as ArrayLike<File>);
  const paths = list.map((f) => (f.webkitRelativePath || f.name).replace(/\\/g, '/'));
  const firsts = new Set(paths.map((p) => (p.includes('/') ? p.slice(0, p.indexOf('/')) : null)));
  const shared = firsts.size === 1 && !firsts.has(null) ? [...firsts][0] : null;
  const m = new Map<string, Blob>();
  list.forEach((f, i) => {
    const rel = shared !== null ? paths[i].slice(shared.length + 1) : paths[i];
    m.set(checkFileName(rel), f);
  });
  return new BlobMapSource('files', m, opts.label ?? (shared !== null ? `folder ${shared}` : 'selected files'));
}

// ---------------------------------------------------------------------------------------------
// A picked folder: FileSystemDirectoryHandle (File System Access API)

/** The part of FileSystemDirectoryHandle used here (a real handle fits; tests pass a stub). */
export interface DirectoryHandleLike {
  readonly name: string;
  getFileHandle(name: string): Promise<{ getFile(): Promise<File> }>;
  getDirectoryHandle(name: string): Promise<DirectoryHandleLike>;
  values?(): AsyncIterable<{ readonly kind: string; readonly name: string }>;
}

function isNotFound(e: unknown): boolean {
  const name = (e as { name?: unknown } | null)?.name;
  return name === 'NotFoundError' || name === 'TypeMismatchError';
}

class DirectorySource extends BlobSource {
  readonly kind = 'directory' as const;
  readonly label: string;
  private readonly root: DirectoryHandleLike;
  constructor(root: DirectoryHandleLike, label: string) {
    super();
    this.root = root;
    this.label = label;
  }
  protected async find(name: string): Promise<Blob | null> {
    const parts = name.split('/');
    try {
      let dir = this.root;
      for (const p of parts.slice(0, -1)) dir = await dir.getDirectoryHandle(p);
      const fh = await dir.getFileHandle(parts[parts.length - 1]);
      return await fh.getFile();
    } catch (e) {
      if (isNotFound(e)) return null;
      throw new ModelSourceError(`${name} from ${this.label}: ${(e as Error).message ?? String(e)}`);
    }
  }
  /** Files of the folder and of its subfolders two levels down (HF folders are nearly flat). */
  async list(): Promise<string[] | null> {
    if (!this.root.values) return null;
    const out: string[] = [];
    const queue: [DirectoryHandleLike, string, number][] = [[this.root, '', 0]];
    while (queue.length > 0) {
      const [dir, prefix, depth] = queue.shift()!;
      if (!dir.values) continue;
      for await (const entry of dir.values()) {
        if (entry.kind === 'file') out.push(prefix + entry.name);
        else if (entry.kind === 'directory' && depth < 2) {
          queue.push([await dir.getDirectoryHandle(entry.name), `${prefix}${entry.name}/`, depth + 1]);
        }
      }
    }
    return out.sort();
  }
}

/** A source over a directory handle from showDirectoryPicker(). */
export function directorySource(handle: DirectoryHandleLike, opts: { label?: string } = {}): ModelSource {
  return new DirectorySource(handle, opts.label ?? `folder ${handle.name}`);
}

// ---------------------------------------------------------------------------------------------
// A base URL, with Cache Storage

/** The part of the Cache Storage API used here (window.caches fits; tests pass a stub). */
export interface CacheStorageLike {
  open(name: string): Promise<{
    match(request: string): Promise<Response | undefined>;
    put(request: string, response: Response): Promise<void>;
  }>;
  delete?(name: string): Promise<boolean>;
}

// The cache name and the file-name rules are shared with the page (contract/modelSource.ts).
export { checkFileName, DEFAULT_CACHE_NAME };
const MISSING_HEADER = 'x-sparring-missing';

export interface UrlSourceOptions {
  /** For messages; defaults to the base URL. */
  label?: string;
  /** fetch to use (defaults to globalThis.fetch). */
  fetch?: typeof globalThis.fetch;
  /** Extra request headers, e.g. { Authorization: 'Bearer hf_...' } for gated models. */
  headers?: Record<string, string>;
  /**
   * Cache Storage to keep downloads in. Defaults to globalThis.caches when it exists (browsers,
   * secure contexts); Node has none and skips caching. false turns caching off.
   */
  cache?: CacheStorageLike | false;
  cacheName?: string;
  /** Maps a file name to its URL; defaults to the base URL joined with the encoded name. */
  fileUrl?: (name: string) => string;
  /** What a failed request (no answer at all) means in the user's words, e.g. "cannot reach the Hugging Face hub: offline?". */
  unreachable?: string;
  /** What an answer with X-Error-Code RepoNotFound (the hub's, on 401 or 404) means, e.g. "no such repository". */
  repoNotFound?: string;
}

function defaultCaches(): CacheStorageLike | null {
  const c = (globalThis as { caches?: CacheStorageLike }).caches;
  return c && typeof c.open === 'function' ? c : null;
}

class UrlSource implements ModelSource {
  readonly kind = 'url' as const;
  readonly label: string;
  private readonly base: string;
  private readonly opts: UrlSourceOptions;
  private readonly cacheStorage: CacheStorageLike | null;
  private readonly cacheName: string;
  /** Answers to has() already known this session: a missing file is asked about once. */
  private readonly known = new Map<string, boolean>();

  constructor(baseUrl: string | URL, opts: UrlSourceOptions) {
    let base = String(baseUrl);
    try {
      new URL(base);
    } catch {
      throw new ModelSourceError(`invalid model base URL ${brief(base)}`);
    }
    if (!base.endsWith('/')) base += '/';
    this.base = base;
    this.opts = opts;
    this.label = opts.label ?? base;
    this.cacheStorage = opts.cache === false ? null : (opts.cache ?? defaultCaches());
    this.cacheName = opts.cacheName ?? DEFAULT_CACHE_NAME;
  }

  urlOf(name: string): string {
    checkFileName(name);
    return this.opts.fileUrl ? this.opts.fileUrl(name) : new URL(encodePath(name), this.base).href;
  }

  async list(): Promise<null> {
    return null;
  }

  private async cache() {
    if (!this.cacheStorage) return null;
    try {
      return await this.cacheStorage.open(this.cacheName);
    } catch {
      return null; // storage disabled (private mode, quota): download without caching
    }
  }

  private async cached(url: string): Promise<Response | null> {
    const c = await this.cache();
    if (!c) return null;
    try {
      return (await c.match(url)) ?? null;
    } catch {
      return null;
    }
  }

  private async store(url: string, response: Response): Promise<void> {
    const c = await this.cache();
    if (!c) return;
    try {
      await c.put(url, response);
    } catch {
      // Quota exceeded and the like: the download itself succeeded, so carry on uncached.
    }
  }

  private async request(name: string, method: 'GET' | 'HEAD', signal?: AbortSignal): Promise<Response> {
    const url = this.urlOf(name);
    const doFetch = this.opts.fetch ?? globalThis.fetch;
    const once = () => doFetch(url, { method, headers: this.opts.headers, signal });
    try {
      // A GET or HEAD that got no answer at all is sent once more: a kept-alive connection the
      // server closed as it was reused fails with "fetch failed" although the host is up (Node's
      // undici; seen on the test hub at load 2 on 2 cores). A second failure is reported.
      const res = await once().catch((e: unknown) => {
        if (signal?.aborted) throw e;
        return once();
      });
      // A static host with a single-page-app fallback (vite dev/preview, many CDNs) answers a
      // missing file with index.html and status 200; for a model file that means "missing".
      const html = (res.headers.get('content-type') ?? '').toLowerCase().startsWith('text/html');
      if (res.ok && html && !/\.html?$/i.test(name))
        return new Response(null, { status: 404, statusText: 'Not Found (HTML fallback page)' });
      return res;
    } catch (e) {
      if (signal?.aborted) throw abortError(signal);
      const why = (e as Error).message;
      if (this.opts.unreachable)
        throw new ModelSourceError(`${this.opts.unreachable} (${name} from ${this.label}: ${why} at ${url})`);
      throw new ModelSourceError(`${name} from ${this.label}: could not reach ${url}: ${why}`);
    }
  }

  private httpError(name: string, res: Response): ModelSourceError {
    const url = this.urlOf(name);
    if (this.opts.repoNotFound && res.headers.get('x-error-code') === 'RepoNotFound')
      return new ModelSourceError(`${this.opts.repoNotFound} (${name}: HTTP ${res.status} at ${url})`);
    if (res.status === 404) return new MissingModelFileError(name, this.label, `HTTP 404 at ${url}`);
    if (res.status === 401 || res.status === 403) {
      return new ModelSourceError(
        `${name} from ${this.label}: HTTP ${res.status} at ${url}: the model is gated or private; ` +
          'accept its licence on the hub and pass an access token',
      );
    }
    return new ModelSourceError(`${name} from ${this.label}: HTTP ${res.status} ${res.statusText} at ${url}`.trim());
  }

  async has(name: string, opts: ReadOptions = {}): Promise<boolean> {
    const url = this.urlOf(name);
    const known = this.known.get(name);
    if (known !== undefined) return known;
    const hit = await this.cached(url);
    if (hit) {
      const ok = hit.ok && hit.headers.get(MISSING_HEADER) === null;
      this.known.set(name, ok);
      return ok;
    }
    const res = await this.request(name, 'HEAD', opts.signal);
    if (res.status === 404) {
      this.known.set(name, false);
      // Remember the absence too, so an offline reload does not stall on optional files.
      await this.store(url, new Response(null, { status: 404, headers: { [MISSING_HEADER]: '1' } }));
      return false;
    }
    if (!res.ok) throw this.httpError(name, res);
    this.known.set(name, true);
    return true;
  }

  async getBytes(name: string, opts: ReadOptions = {}): Promise<ArrayBuffer> {
    const url = this.urlOf(name);
    const hit = await this.cached(url);
    if (hit) {
      if (!hit.ok || hit.headers.get(MISSING_HEADER) !== null)
        throw new MissingModelFileError(name, this.label, 'cached as absent');
      return this.readResponse(hit, name, true, opts);
    }
    const res = await this.request(name, 'GET', opts.signal);
    if (!res.ok) {
      if (res.status === 404) this.known.set(name, false);
      throw this.httpError(name, res);
    }
    const bytes = await this.readResponse(res, name, false, opts);
    this.known.set(name, true);
    await this.store(
      url,
      // The Response copies the bytes, and put() has read them all before it resolves, so the
      // caller may transfer `bytes` once this returns. (Peak memory: twice the file, briefly.)
      new Response(bytes, {
        status: 200,
        headers: {
          'content-type': res.headers.get('content-type') ?? 'application/octet-stream',
          'content-length': String(bytes.byteLength),
        },
      }),
    );
    return bytes;
  }

  private async readResponse(res: Response, name: string, local: boolean, opts: ReadOptions): Promise<ArrayBuffer> {
    // A compressed body's content-length counts compressed bytes, not what the stream yields.
    const len = res.headers.get('content-length');
    const total = len !== null && /^\d+$/.test(len) && !res.headers.get('content-encoding') ? Number(len) : null;
    if (!res.body) {
      const buf = await res.arrayBuffer();
      opts.onProgress?.({ file: name, loaded: buf.byteLength, total: buf.byteLength, local, done: true });
      return buf;
    }
    return readStream(res.body, total, name, this.label, local, opts);
  }

  async getBlob(name: string, opts: ReadOptions = {}): Promise<Blob> {
    return new Blob([await this.getBytes(name, opts)]);
  }
  async getText(name: string, opts: ReadOptions = {}): Promise<string> {
    return new TextDecoder().decode(await this.getBytes(name, opts));
  }
  async getJson<T = unknown>(name: string, opts: ReadOptions = {}): Promise<T> {
    return parseJson<T>(await this.getText(name, opts), name, this.label);
  }
}

/** A source over files under a base URL (`${base}/${name}`). */
export function urlSource(
  baseUrl: string | URL,
  opts: UrlSourceOptions = {},
): ModelSource & { urlOf(name: string): string } {
  return new UrlSource(baseUrl, opts);
}

/** Drops every cached model download (Cache Storage); false when there was nothing to drop. */
export async function clearModelCache(opts: { cache?: CacheStorageLike; cacheName?: string } = {}): Promise<boolean> {
  const c = opts.cache ?? defaultCaches();
  if (!c?.delete) return false;
  return c.delete(opts.cacheName ?? DEFAULT_CACHE_NAME);
}

// ---------------------------------------------------------------------------------------------
// Weights

export const INDEX_FILE = 'model.safetensors.index.json';
export const SINGLE_WEIGHTS_FILE = 'model.safetensors';

/**
 * The shard files named in a parsed model.safetensors.index.json's weight_map, each once,
 * sorted (model-00001-of-00002.safetensors before model-00002-...).
 */
export function shardFilesFromIndex(index: unknown, file = INDEX_FILE): string[] {
  const wm = (index as { weight_map?: unknown } | null)?.weight_map;
  if (wm === null || typeof wm !== 'object' || Array.isArray(wm)) {
    throw new ModelSourceError(`${file}: field "weight_map" is missing or not an object`);
  }
  const shards = new Set<string>();
  for (const [tensor, shard] of Object.entries(wm as Record<string, unknown>)) {
    if (typeof shard !== 'string')
      throw new ModelSourceError(`${file}: field "weight_map.${tensor}" must be a file name`);
    try {
      checkFileName(shard);
    } catch {
      throw new ModelSourceError(
        `${file}: field "weight_map.${briefText(tensor)}" names ${brief(shard)}, not a file in the folder`,
      );
    }
    shards.add(shard);
  }
  if (shards.size === 0) throw new ModelSourceError(`${file}: field "weight_map" names no shard files`);
  return [...shards].sort();
}

/**
 * Which safetensors files hold the weights: the shards of model.safetensors.index.json when
 * the folder has one, else model.safetensors.
 */
export async function listWeightFiles(source: ModelSource, opts: ReadOptions = {}): Promise<string[]> {
  if (await source.has(INDEX_FILE, { signal: opts.signal })) {
    const index = await source.getJson(INDEX_FILE, { signal: opts.signal });
    return shardFilesFromIndex(index, `${INDEX_FILE} from ${source.label}`);
  }
  if (await source.has(SINGLE_WEIGHTS_FILE, { signal: opts.signal })) return [SINGLE_WEIGHTS_FILE];
  throw new MissingModelFileError(SINGLE_WEIGHTS_FILE, source.label, `nor ${INDEX_FILE}`);
}
