// "veRL job (zip)": the current setup (recipe, form values, seed, max steps) exported as a veRL /
// TRL job folder by the same generator the CLI uses (src/recipes/verl/), zipped with fflate. A
// sandbox model the recipe trains is fetched from the lab's own /models/NAME/ and shipped in the
// zip; if that fails the README says where to copy it from.
import { zipSync } from 'fflate';
import type { Schema } from '../../contract/schema.ts';
import { exportModelField, exportVerl, modelPathFor } from '../../recipes/verl/index';

const SANDBOX_FILES = ['config.json', 'generation_config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json'];

async function sandboxFiles(name: string): Promise<Record<string, Uint8Array> | undefined> {
  try {
    const base = new URL(`${import.meta.env.BASE_URL}models/${name}/`, window.location.href);
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

export interface VerlZip {
  fileName: string;
  bytes: Uint8Array;
  unsupported: string[];
  modelShipped: boolean;
}

export async function verlZip(recipe: { name: string; schema: Schema }, values: Record<string, unknown>, seed: number, steps: number | undefined): Promise<VerlZip> {
  const field = exportModelField(recipe.name);
  const sandbox = modelPathFor(String(values[field] ?? recipe.schema[field]?.default)).sandbox;
  const modelFiles = sandbox ? await sandboxFiles(sandbox) : undefined;
  const ex = exportVerl({ recipe, config: values, seed, steps, modelFiles });
  const dir = `sparring-${recipe.name}-verl`;
  const tree: Record<string, Uint8Array> = {};
  const enc = new TextEncoder();
  for (const [path, content] of Object.entries(ex.files)) tree[`${dir}/${path}`] = typeof content === 'string' ? enc.encode(content) : content;
  return { fileName: `${dir}.zip`, bytes: zipSync(tree, { level: 6 }), unsupported: ex.unsupported, modelShipped: !!modelFiles };
}
