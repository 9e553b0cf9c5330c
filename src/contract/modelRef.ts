// Whether a model field's text names something the lab can load, checked before Start as every
// other field is: a sandbox name, a hub id ("owner/name", "owner/name@rev"), an http(s) / blob URL
// of a model folder, or a site path ("/…", "./…"). Anything else ("not a hub id!!") would have
// been fetched as a relative URL and failed with the browser's bare "Failed to fetch".
import { brief } from './brief';
import { parseHubRef } from './hubRef';
import { unknownModelError } from './sandboxModels';

const URLISH = /^(https?:\/\/|blob:)/i;
const PATHISH = /^(\/|\.\.?\/)/;

/**
 * The one message for a model field's text that names no model; null when it does. Empty is
 * null: an optional model (a guard) is off when empty, and a required one is its schema's nonEmpty.
 */
export function modelRefError(ref: string): string | null {
  const s = ref.trim();
  if (s === '') return null;
  const unknown = unknownModelError(s);
  if (unknown) return unknown;
  if (URLISH.test(s)) {
    try {
      new URL(s);
      return null;
    } catch {
      return `${brief(s)} is not a valid URL`;
    }
  }
  if (PATHISH.test(s) || /^[a-z][a-z0-9_-]*$/.test(s)) return null;
  try {
    parseHubRef(s);
    return null;
  } catch (e) {
    return (e as Error).message;
  }
}
