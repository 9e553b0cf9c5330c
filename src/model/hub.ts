// The Hugging Face hub as a model source: `${endpoint}/${owner}/${name}/resolve/${revision}/${file}`,
// with the endpoint injectable (a mirror, or the local server the tests start), and the loader that
// gathers a model folder's files from any source.

import { brief } from '../contract/brief.ts';
import {
  INDEX_FILE,
  listWeightFiles,
  ModelSourceError,
  shardFilesFromIndex,
  urlSource,
  type FileProgress,
  type ModelSource,
  type ProgressListener,
  type UrlSourceOptions,
} from './sources.ts';

export const HUB_ENDPOINT = 'https://huggingface.co';
export const DEFAULT_REVISION = 'main';

export class InvalidModelIdError extends ModelSourceError {
  constructor(id: unknown, why: string) {
    super(`invalid model id ${brief(id)}: ${why}; expected "owner/name", e.g. "HuggingFaceTB/SmolLM2-135M-Instruct"`);
    this.name = 'InvalidModelIdError';
  }
}

// The hub's rules for user, organisation and repository names: letters, digits, '-', '_', '.',
// at most 96 characters, no leading or trailing '-' or '.', no '--' or '..'.
const PART = /^[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,94}[A-Za-z0-9_])?$/;

/** Returns the id when it is a valid `owner/name`, else throws InvalidModelIdError saying why. */
export function validateModelId(id: string): string {
  if (typeof id !== 'string' || id.trim() === '') throw new InvalidModelIdError(id, 'it is empty');
  if (id !== id.trim()) throw new InvalidModelIdError(id, 'it has leading or trailing spaces');
  const parts = id.split('/');
  if (parts.length !== 2) throw new InvalidModelIdError(id, parts.length === 1 ? 'the owner is missing' : 'it has more than one "/"');
  for (const [what, p] of [['owner', parts[0]], ['name', parts[1]]] as const) {
    if (!PART.test(p) || p.includes('--') || p.includes('..')) {
      throw new InvalidModelIdError(
        id,
        `the ${what} ${brief(p)} must be 1-96 letters, digits, "-", "_" or ".", not starting or ending with "-" or "." and without "--" or ".."`,
      );
    }
  }
  return id;
}

function validateRevision(revision: string): string {
  if (typeof revision !== 'string' || revision === '' || /\s/.test(revision) || revision.split('/').includes('..')) {
    throw new ModelSourceError(`invalid revision ${brief(revision)}: expected a branch, tag or commit such as "main"`);
  }
  return revision;
}

export interface HubRef {
  id: string;
  revision: string;
}

/**
 * Reads what a person pastes: "owner/name", "owner/name@revision", or a hub page URL
 * (https://huggingface.co/owner/name, .../tree/revision, .../resolve/revision/file).
 */
export function parseHubRef(input: string): HubRef {
  const s = String(input ?? '').trim();
  if (/^https?:\/\//i.test(s)) {
    let url: URL;
    try {
      url = new URL(s);
    } catch {
      throw new InvalidModelIdError(input, 'it is not a valid URL');
    }
    const segs = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
    if (segs.length < 2) throw new InvalidModelIdError(input, 'the URL names no model');
    const id = validateModelId(`${segs[0]}/${segs[1]}`);
    const revision = ['tree', 'blob', 'resolve'].includes(segs[2]) && segs[3] ? segs[3] : DEFAULT_REVISION;
    return { id, revision: validateRevision(revision) };
  }
  const at = s.indexOf('@');
  if (at >= 0) return { id: validateModelId(s.slice(0, at)), revision: validateRevision(s.slice(at + 1)) };
  return { id: validateModelId(s), revision: DEFAULT_REVISION };
}

export interface HubOptions {
  revision?: string;
  /** Defaults to https://huggingface.co; tests point it at a local server. */
  endpoint?: string;
}

function encodePath(name: string): string {
  return name.split('/').map(encodeURIComponent).join('/');
}

/** The download URL of one file of a hub model. */
export function hubFileUrl(id: string, file: string, opts: HubOptions = {}): string {
  validateModelId(id);
  const revision = validateRevision(opts.revision ?? DEFAULT_REVISION);
  const endpoint = (opts.endpoint ?? HUB_ENDPOINT).replace(/\/+$/, '');
  // A revision such as "refs/pr/1" is one path segment on the hub, so it is encoded whole.
  return `${endpoint}/${id}/resolve/${encodeURIComponent(revision)}/${encodePath(file)}`;
}

export interface HubSourceOptions extends HubOptions, Omit<UrlSourceOptions, 'fileUrl' | 'label'> {
  /** A hub access token, for gated or private models (sent as a Bearer header). */
  token?: string;
}

/** A model on the hub (or a mirror with the same URL layout) as a ModelSource. */
export function hubSource(id: string, opts: HubSourceOptions = {}): ModelSource & { urlOf(name: string): string } {
  validateModelId(id);
  const revision = validateRevision(opts.revision ?? DEFAULT_REVISION);
  const endpoint = (opts.endpoint ?? HUB_ENDPOINT).replace(/\/+$/, '');
  const headers = { ...opts.headers, ...(opts.token ? { Authorization: `Bearer ${opts.token}` } : {}) };
  return urlSource(`${endpoint}/${id}/resolve/${encodeURIComponent(revision)}/`, {
    ...opts,
    headers,
    label: `hub model ${id}${revision === DEFAULT_REVISION ? '' : `@${revision}`}`,
    fileUrl: (name) => hubFileUrl(id, name, { revision, endpoint }),
  });
}

/** Sums per-file progress into one figure for a progress bar. */
export class ProgressTally {
  private readonly files = new Map<string, FileProgress>();
  /** Records an event and returns the sums; total is null while any file's size is unknown. */
  update(p: FileProgress): { loaded: number; total: number | null } {
    this.files.set(p.file, p);
    return this.sums();
  }
  sums(): { loaded: number; total: number | null } {
    let loaded = 0;
    let total: number | null = 0;
    for (const p of this.files.values()) {
      loaded += p.loaded;
      total = total === null || p.total === null ? null : total + p.total;
    }
    return { loaded, total };
  }
}

/** A model folder's files, parsed where they are JSON; weights stay raw bytes. */
export interface ModelFiles {
  /** The source's label (model id or folder). */
  label: string;
  config: unknown;
  tokenizerJson: unknown | null;
  tokenizerConfig: unknown | null;
  generationConfig: unknown | null;
  chatTemplateJinja: string | null;
  /** model.safetensors, or the shards named in model.safetensors.index.json, in order. */
  weightFiles: string[];
  /** Parsed model.safetensors.index.json when the checkpoint is sharded. */
  weightIndex: unknown | null;
  /** Raw bytes per weight file (empty when weights were not asked for). */
  weights: Map<string, ArrayBuffer>;
}

export interface LoadModelFilesOptions {
  onProgress?: ProgressListener;
  signal?: AbortSignal;
  /** Download the safetensors files too (default true). */
  weights?: boolean;
  /** Require tokenizer.json (default true); false for a weights-only folder. */
  requireTokenizer?: boolean;
}

/**
 * Fetches what a model needs from any source: config.json and (by default) tokenizer.json are
 * required; tokenizer_config.json, generation_config.json and chat_template.jinja are read when
 * present; then the weights. Files are fetched one after another so progress reads top to bottom
 * and a phone's memory holds one download at a time.
 */
export async function loadModelFiles(source: ModelSource, opts: LoadModelFilesOptions = {}): Promise<ModelFiles> {
  const read = { onProgress: opts.onProgress, signal: opts.signal };
  const optional = async (name: string): Promise<boolean> => source.has(name, { signal: opts.signal });
  const config = await source.getJson('config.json', read);
  const requireTok = opts.requireTokenizer ?? true;
  const tokenizerJson = requireTok || (await optional('tokenizer.json')) ? await source.getJson('tokenizer.json', read) : null;
  const tokenizerConfig = (await optional('tokenizer_config.json')) ? await source.getJson('tokenizer_config.json', read) : null;
  const generationConfig = (await optional('generation_config.json')) ? await source.getJson('generation_config.json', read) : null;
  const chatTemplateJinja = (await optional('chat_template.jinja')) ? await source.getText('chat_template.jinja', read) : null;
  let weightIndex: unknown | null = null;
  let weightFiles: string[];
  if (await optional(INDEX_FILE)) {
    weightIndex = await source.getJson(INDEX_FILE, read);
    weightFiles = shardFilesFromIndex(weightIndex, `${INDEX_FILE} from ${source.label}`);
  } else {
    weightFiles = await listWeightFiles(source, { signal: opts.signal });
  }
  const weights = new Map<string, ArrayBuffer>();
  if (opts.weights ?? true) {
    for (const f of weightFiles) weights.set(f, await source.getBytes(f, read));
  }
  return { label: source.label, config, tokenizerJson, tokenizerConfig, generationConfig, chatTemplateJinja, weightFiles, weightIndex, weights };
}
