// The sandbox models the site serves under public/models/, and the message for a name that is
// none of them. A static host answers a missing folder with its index.html (vite preview does), so
// without this check a typo read "config.json: not valid JSON: Unexpected token '<'".
import { briefName } from './brief';
import { closestNames } from './closest';
import { malformedEscape } from './uriDecode';

/** Models the site serves under public/models/ (a unit test checks the folder has exactly these). */
export const SANDBOX_MODELS = ['attacker', 'defender', 'judge', 'qa'] as const;

/** Reads as a sandbox model name (`defender`), as opposed to a hub id, a path or a URL. */
export function looksLikeSandboxName(ref: string): boolean {
  return /^[a-z][a-z0-9_-]*$/.test(ref);
}

/**
 * The one message for a model reference that reads as a sandbox name but names none, or a URL
 * whose percent escapes do not decode (a link's `%E0%A4%A`); null otherwise.
 */
export function unknownModelError(ref: string): string | null {
  const bad = /^[a-z][a-z0-9+.-]*:/i.test(ref) ? malformedEscape(ref) : null;
  if (bad !== null)
    return `the model URL ${briefName(ref)} holds a malformed percent escape ${briefName(bad)}: expected a hub id (owner/name), a URL or a picked folder`;
  if (!looksLikeSandboxName(ref) || (SANDBOX_MODELS as readonly string[]).includes(ref)) return null;
  const near = closestNames(ref, SANDBOX_MODELS, 1);
  return (
    `there is no model named ${briefName(ref)}${near.length ? ` (did you mean ${near[0]}?)` : ''}: ` +
    `the sandbox models are ${SANDBOX_MODELS.join(', ')}; other models are a hub id (owner/name), a URL or a picked folder`
  );
}
