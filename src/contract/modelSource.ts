// Model sources as both sides see them: the error every source throws, the file-name rules, and the
// model cache (the worker's URL source reads Cache Storage under DEFAULT_CACHE_NAME before the
// network; the page puts a picked local folder there under the same URLs).
import { brief } from './brief';

/** A model source failed: a bad id, a missing or unreadable file (model/sources.ts has the rest). */
export class ModelSourceError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ModelSourceError';
  }
}

export const DEFAULT_CACHE_NAME = 'sparring-models-v1';

/** Rejects names that could escape the folder once joined to a URL or a directory. */
export function checkFileName(name: string): string {
  if (
    typeof name !== 'string' ||
    name.length === 0 ||
    name.startsWith('/') ||
    name.includes('\\') ||
    name.split('/').some((seg) => seg === '' || seg === '.' || seg === '..')
  ) {
    throw new ModelSourceError(
      `invalid model file name ${brief(name)}: expected a relative path such as "config.json"`,
    );
  }
  return name;
}

/** A relative file path as a URL path: each segment percent-encoded, the slashes kept. */
export function encodePath(name: string): string {
  return name.split('/').map(encodeURIComponent).join('/');
}

/** The URL of file `name` of the model folder at `folderUrl`: what the cache keys it under. */
export function folderFileUrl(folderUrl: string, name: string): string {
  const base = folderUrl.endsWith('/') ? folderUrl : `${folderUrl}/`;
  return new URL(encodePath(checkFileName(name)), base).href;
}
