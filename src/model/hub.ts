// The Hugging Face hub as a model source: `${endpoint}/${owner}/${name}/resolve/${revision}/${file}`,
// with the endpoint injectable (a mirror, or the local server the tests start), and the loader that
// gathers a model folder's files from any source. Parsing a hub reference is contract/hubRef.ts.

import {
  DEFAULT_REVISION,
  HUB_ENDPOINT,
  hubFileUrl,
  validateModelId,
  validateRevision,
  type HubOptions,
} from '../contract/hubRef';
import {
  INDEX_FILE,
  listWeightFiles,
  shardFilesFromIndex,
  urlSource,
  type FileProgress,
  type ModelSource,
  type ProgressListener,
  type UrlSourceOptions,
} from './sources';

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
    // A mistyped id and a real one read apart offline (both were a bare "Failed to fetch").
    unreachable: `cannot reach the Hugging Face hub${endpoint === HUB_ENDPOINT ? '' : ` (${endpoint})`}: offline?`,
    repoNotFound: `no such repository on the Hugging Face hub: ${id} (or it is private: pass an access token)`,
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
  const tokenizerJson =
    requireTok || (await optional('tokenizer.json')) ? await source.getJson('tokenizer.json', read) : null;
  const tokenizerConfig = (await optional('tokenizer_config.json'))
    ? await source.getJson('tokenizer_config.json', read)
    : null;
  const generationConfig = (await optional('generation_config.json'))
    ? await source.getJson('generation_config.json', read)
    : null;
  const chatTemplateJinja = (await optional('chat_template.jinja'))
    ? await source.getText('chat_template.jinja', read)
    : null;
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
  return {
    label: source.label,
    config,
    tokenizerJson,
    tokenizerConfig,
    generationConfig,
    chatTemplateJinja,
    weightFiles,
    weightIndex,
    weights,
  };
}
