// Which schema fields get a dedicated picker in the setup form: model references (sandbox name,
// hub id, URL, local folder), the judge, and the RL algorithm choices; and how a model reference
// string reads as a picker mode. Recipes only declare strings and enums; this is the UI's reading.
import { DEFAULT_REVISION, HUB_ENDPOINT, parseHubRef } from '../../contract/hubRef';
import type { Field } from '../../contract/schema';
import { decodeUriPart } from '../../contract/uriDecode';

import { SANDBOX_MODELS } from '../../contract/sandboxModels';

export { SANDBOX_MODELS };
/** Judges every browser env has (src/recipes/kit/env.ts); llm-guard and http read the guard / judgeUrl fields. */
export const KNOWN_JUDGES = ['rules', 'rules-partial', 'classifier', 'llm-guard', 'http'] as const;
/** Enum fields that choose the RL algorithm. */
export const ALGORITHM_FIELDS = ['advantage', 'policyLoss', 'klLossEstimator', 'aggregation'] as const;

export type FieldKind = 'model' | 'weights' | 'dataset' | 'judge' | 'algorithm' | 'plain';

export function fieldKind(name: string, f: Field): FieldKind {
  if (f.type === 'string' && name === 'judge') return 'judge';
  if (f.type === 'string' && (name === 'dataset' || /\bJSONL\b/.test(f.help))) return 'dataset';
  if (
    f.type === 'string' &&
    (/sandbox name/i.test(f.help) || (SANDBOX_MODELS as readonly string[]).includes(f.default))
  )
    return 'model';
  // A model field's weight format sits with the models (contract/weightFields.ts).
  if (f.type === 'enum' && name.endsWith('Weights') && f.options.includes('int8')) return 'weights';
  if (f.type === 'enum' && (ALGORITHM_FIELDS as readonly string[]).includes(name)) return 'algorithm';
  return 'plain';
}

export type ModelChoice =
  | { mode: 'sandbox'; name: string }
  | { mode: 'hub'; id: string; revision: string }
  | { mode: 'url'; url: string }
  /** A picked folder, served to the worker from the model cache at `url` (localFolders.ts). */
  | { mode: 'local'; folder: string; url: string };

/** The folder URL a hub id loads from (the worker reads any URL folder). */
export function hubFolderUrl(id: string, revision = DEFAULT_REVISION, endpoint = HUB_ENDPOINT): string {
  return `${endpoint.replace(/\/+$/, '')}/${id}/resolve/${encodeURIComponent(revision)}/`;
}

const HUB_FOLDER = /^https:\/\/huggingface\.co\/([^/]+\/[^/]+)\/resolve\/([^/]+)\/?$/;
const LOCAL_FOLDER = /\/local-models\/([^/]+)\/$/;

/**
 * How a model reference string reads in the picker. Never throws (it runs during render): a
 * folder or revision whose percent escapes do not decode reads as a plain URL, which the fit check
 * and Start refuse with unknownModelError's message.
 */
export function readModelRef(ref: string): ModelChoice {
  if ((SANDBOX_MODELS as readonly string[]).includes(ref)) return { mode: 'sandbox', name: ref };
  const local = LOCAL_FOLDER.exec(ref);
  const folder = local && decodeUriPart(local[1]);
  if (local && folder !== null) return { mode: 'local', folder, url: ref };
  const hub = HUB_FOLDER.exec(ref);
  const revision = hub && decodeUriPart(hub[2]);
  if (hub && revision !== null) return { mode: 'hub', id: hub[1], revision };
  return { mode: 'url', url: ref };
}

/** The reference string of a picker choice; a bad hub id throws (the picker shows the message). */
export function writeModelRef(c: ModelChoice): string {
  switch (c.mode) {
    case 'sandbox':
      return c.name;
    case 'hub': {
      const ref = parseHubRef(c.revision && c.revision !== DEFAULT_REVISION ? `${c.id}@${c.revision}` : c.id);
      return hubFolderUrl(ref.id, ref.revision);
    }
    case 'url':
      return c.url;
    case 'local':
      return c.url;
  }
}
