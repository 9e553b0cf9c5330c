// "veRL job (zip)": a setup (recipe, field values, seed, max steps) exported as a veRL / TRL job
// folder by the same generator the CLI uses (src/recipes/verl/), zipped with fflate, in the worker
// so the page holds no exporter. A sandbox model the recipe trains is fetched from the lab's own
// /models/NAME/ and shipped in the zip; if that fails the README says where to copy it from.
import { zipSync } from 'fflate';
import { getRecipe } from '../recipes/registry';
import { exportModelField, exportVerl, frozenSandboxes, modelPathFor } from '../recipes/exports';
import type { VerlJobZip } from '../contract/workerApi';
import { sandboxModelUrl } from '../contract/siteRoot';

const SANDBOX_FILES = [
  'config.json',
  'generation_config.json',
  'model.safetensors',
  'tokenizer.json',
  'tokenizer_config.json',
];

async function sandboxFiles(name: string): Promise<Record<string, Uint8Array> | undefined> {
  try {
    const base = new URL(sandboxModelUrl(name));
    const entries = await Promise.all(
      SANDBOX_FILES.map(async (f) => {
        const res = await fetch(new URL(f, base));
        if (!res.ok) throw new Error(`${f}: HTTP ${res.status}`);
        return [f, new Uint8Array(await res.arrayBuffer())] as const;
      }),
    );
    return Object.fromEntries(entries);
  } catch {
    return undefined;
  }
}

export async function verlJobZip(
  recipeName: string,
  values: Record<string, unknown>,
  seed: number,
  steps: number | undefined,
): Promise<VerlJobZip> {
  const recipe = getRecipe(recipeName);
  const field = exportModelField(recipe.name);
  const sandbox = modelPathFor(String(values[field] ?? recipe.schema[field]?.default)).sandbox;
  const modelFiles = sandbox ? await sandboxFiles(sandbox) : undefined;
  const frozenModelFiles: Record<string, Record<string, Uint8Array>> = {};
  for (const name of frozenSandboxes(recipe.name, values, recipe.schema)) {
    const files = name === sandbox ? modelFiles : await sandboxFiles(name);
    if (files) frozenModelFiles[name] = files;
  }
  const ex = exportVerl({ recipe, config: values, seed, steps, modelFiles, frozenModelFiles });
  const dir = `sparring-${recipe.name}-verl`;
  const tree: Record<string, Uint8Array> = {};
  const enc = new TextEncoder();
  for (const [path, content] of Object.entries(ex.files))
    tree[`${dir}/${path}`] = typeof content === 'string' ? enc.encode(content) : content;
  return {
    fileName: `${dir}.zip`,
    bytes: zipSync(tree, { level: 6 }),
    unsupported: ex.unsupported,
    modelShipped: !!modelFiles,
  };
}
