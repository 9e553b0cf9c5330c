// What a person types to name a hub model ("owner/name", "owner/name@rev", a hub page URL), parsed
// and validated without touching the network: the page checks a pasted id before the worker loads
// it. The loader that downloads a model is model/hub.ts.
import { brief } from './brief';
import { encodePath, ModelSourceError } from './modelSource';
import { decodeUriPart, malformedEscape } from './uriDecode';

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
  if (parts.length !== 2)
    throw new InvalidModelIdError(id, parts.length === 1 ? 'the owner is missing' : 'it has more than one "/"');
  for (const [what, p] of [
    ['owner', parts[0]],
    ['name', parts[1]],
  ] as const) {
    if (!PART.test(p) || p.includes('--') || p.includes('..')) {
      throw new InvalidModelIdError(
        id,
        `the ${what} ${brief(p)} must be 1-96 letters, digits, "-", "_" or ".", not starting or ending with "-" or "." and without "--" or ".."`,
      );
    }
  }
  return id;
}

/** Returns the revision when it is a branch, tag or commit name, else throws ModelSourceError. */
export function validateRevision(revision: string): string {
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
    const bad = malformedEscape(url.pathname);
    if (bad !== null) throw new InvalidModelIdError(input, `the URL holds a malformed percent escape ${brief(bad)}`);
    const segs = url.pathname
      .split('/')
      .filter(Boolean)
      .map((seg) => decodeUriPart(seg) ?? seg);
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

/** The download URL of one file of a hub model. */
export function hubFileUrl(id: string, file: string, opts: HubOptions = {}): string {
  validateModelId(id);
  const revision = validateRevision(opts.revision ?? DEFAULT_REVISION);
  const endpoint = (opts.endpoint ?? HUB_ENDPOINT).replace(/\/+$/, '');
  // A revision such as "refs/pr/1" is one path segment on the hub, so it is encoded whole.
  return `${endpoint}/${id}/resolve/${encodeURIComponent(revision)}/${encodePath(file)}`;
}

/**
 * The hub model a reference names, or null when it names none: a bare id ("owner/name",
 * "owner/name@revision") or the hub folder URL the setup form's picker writes. A URL elsewhere, a
 * path starting with . or /, a sandbox name (no slash) or an invalid id is not one. The worker
 * loads such a reference from the hub (or the page's `?hub=` mirror), so the fit check reads its
 * config.json from the same place.
 */
export function hubRefOf(ref: string): HubRef | null {
  const hubUrl = /^https:\/\/huggingface\.co\/[^/]+\/[^/]+\/resolve\/[^/]+\/?$/.test(ref);
  if (!hubUrl && (/^(\.|\/|[a-z][a-z0-9+.-]*:)/i.test(ref) || !ref.includes('/'))) return null;
  try {
    return parseHubRef(ref);
  } catch {
    return null;
  }
}
