// The recipe environment of the CLI and the Node tests: model references resolve to folders on
// disk (a sandbox name to <modelsDir>/<name>, anything else to a path), files are read from disk.
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Judge } from '../judges/types';
import type { ModelFolder } from '../model/load';
import { createRecipeEnv, hubFolder, isSandboxName } from '../recipes/kit/env';
import type { LoadedModel, LoadModelRefOptions, RecipeEnv } from '../recipes/kit/types';
import { folderSource } from './fs-source';

export const DEFAULT_MODELS_DIR = 'public/models';

/** The folder a model reference names: <modelsDir>/<name> for a sandbox name that exists there, else the path itself. */
export function resolveModelDir(ref: string, modelsDir = DEFAULT_MODELS_DIR): string {
  if (isSandboxName(ref)) {
    const dir = join(modelsDir, ref);
    if (existsSync(dir) || !existsSync(ref)) return dir;
  }
  return ref;
}

/**
 * Node env. A reference that names no folder on disk but reads as a hub id ("owner/name[@rev]")
 * loads from the hub, or from `hubEndpoint` (default $HF_ENDPOINT, as huggingface_hub reads it).
 */
export function nodeRecipeEnv(
  opts: {
    modelsDir?: string;
    hubEndpoint?: string;
    backend?: string;
    judges?: Record<string, () => Judge>;
    load?: (folder: ModelFolder, ref: string, opts?: LoadModelRefOptions) => Promise<LoadedModel>;
  } = {},
): RecipeEnv {
  const modelsDir = opts.modelsDir ?? DEFAULT_MODELS_DIR;
  return createRecipeEnv({
    folder: (ref) => {
      const dir = resolveModelDir(ref, modelsDir);
      return (!existsSync(dir) && hubFolder(ref, opts.hubEndpoint ?? process.env.HF_ENDPOINT)) || folderSource(dir);
    },
    judges: opts.judges,
    backend: opts.backend,
    load: opts.load,
    readText: async (ref) => {
      const p = resolve(ref);
      if (!existsSync(p)) throw new Error(`${ref}: file not found`);
      return readFileSync(p, 'utf8');
    },
  });
}
