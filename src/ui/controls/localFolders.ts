// A model folder picked from disk (<input webkitdirectory>) becomes a URL model the engine worker
// can load without any new protocol: its files are put into the model cache (Cache Storage, the
// cache urlSource reads before the network) under this site's local-models/<folder>/ URL. The
// worker then loads that URL like any cached hub or URL model, and a reload still finds it.
import { DEFAULT_CACHE_NAME, folderFileUrl } from '../../contract/modelSource';
import { siteRoot } from '../../contract/siteRoot';

export const LOCAL_MODELS_PATH = 'local-models/';

/** The URL a picked folder is served from (out of the cache). */
export function localFolderUrl(folder: string, root: string = siteRoot()): string {
  return new URL(`${LOCAL_MODELS_PATH}${encodeURIComponent(folder)}/`, root).href;
}

type RelFile = File & { webkitRelativePath?: string };

/** The folder's name and its top-level files (sub-folders hold no model files). */
export function topLevelFiles(files: ArrayLike<File>): { folder: string; files: Map<string, File> } {
  const list = Array.from(files) as RelFile[];
  if (list.length === 0) throw new Error('the picked folder is empty');
  const folder = (list[0].webkitRelativePath ?? '').split('/')[0] || 'folder';
  const byName = new Map<string, File>();
  for (const f of list) {
    const rel = (f.webkitRelativePath || f.name).split('/');
    if (rel.length <= 2) byName.set(rel[rel.length - 1], f);
  }
  if (!byName.has('config.json'))
    throw new Error(
      `the folder "${folder}" has no config.json: pick a Hugging Face model folder (config.json, tokenizer.json, *.safetensors)`,
    );
  if (![...byName.keys()].some((n) => n.endsWith('.safetensors')))
    throw new Error(`the folder "${folder}" has no .safetensors weights`);
  return { folder, files: byName };
}

/** Puts a picked folder into the model cache (replacing an earlier pick of the same name); returns its URL. */
export async function cacheLocalFolder(picked: ArrayLike<File>): Promise<{ folder: string; url: string }> {
  const { folder, files } = topLevelFiles(picked);
  if (!('caches' in globalThis))
    throw new Error(
      'this browser has no Cache Storage (a private window?): local folders cannot be handed to the engine',
    );
  const url = localFolderUrl(folder);
  const cache = await caches.open(DEFAULT_CACHE_NAME);
  for (const req of await cache.keys()) if (req.url.startsWith(url)) await cache.delete(req);
  for (const [name, file] of files) {
    await cache.put(
      folderFileUrl(url, name),
      new Response(file, {
        status: 200,
        headers: { 'content-type': file.type || 'application/octet-stream', 'content-length': String(file.size) },
      }),
    );
  }
  return { folder, url };
}

/** config.json of a picked folder, from the cache. */
export async function cachedConfigText(url: string): Promise<string> {
  const hit = await (await caches.open(DEFAULT_CACHE_NAME)).match(folderFileUrl(url, 'config.json'));
  if (!hit) throw new Error(`the local folder at ${url} is not in the model cache any more: pick it again`);
  return hit.text();
}
