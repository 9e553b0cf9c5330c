// `npm run lab -- export-verl --recipe NAME [--set field=value ...] [--model REF] [--seed S]
//  [--steps N] --out DIR`: writes the recipe as a veRL job (src/recipes/verl/): verl_config.yaml,
// reward.py, data/*.parquet, run.sh, README.md, trl_grpo.py where TRL fits, and the sandbox model
// the recipe trains when it is one (from public/models or --models DIR). --set takes lab names,
// veRL keys or TRL names. Bad input fails before anything is written, naming the field.
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { getRecipe } from '../recipes/registry.ts';
import { ConfigError } from '../recipes/schema.ts';
import { exportModelField, exportVerl, modelPathFor } from '../recipes/verl/index.ts';
import { DEFAULT_MODELS_DIR } from './recipe-env.ts';
import { parseRecipeArgs, recipeInput, RecipeUsageError } from './recipe-run.ts';

function sandboxFiles(dir: string): Record<string, Uint8Array> {
  const out: Record<string, Uint8Array> = {};
  for (const f of readdirSync(dir)) out[f] = new Uint8Array(readFileSync(join(dir, f)));
  return out;
}

export async function exportVerlMain(argv: string[], opts: { stderr?: (s: string) => void } = {}): Promise<number> {
  const err = opts.stderr ?? ((s: string) => process.stderr.write(s));
  try {
    const a = parseRecipeArgs(argv);
    if (!a.recipe) throw new RecipeUsageError('--recipe NAME is required');
    if (!a.out) throw new RecipeUsageError('--out DIR is required');
    const recipe = getRecipe(a.recipe);
    const modelField = exportModelField(recipe.name);
    const input = recipeInput(a);
    const ref = String(input[modelField] ?? recipe.schema[modelField].default);
    const sandbox = modelPathFor(ref).sandbox;
    const modelDir = sandbox ? join(a.models ?? DEFAULT_MODELS_DIR, sandbox) : null;
    const modelFiles = modelDir && existsSync(modelDir) ? sandboxFiles(modelDir) : undefined;
    const steps = argv.some((x) => x === '--steps' || x.startsWith('--steps=')) ? a.steps : undefined;
    const labVersion = `v${(JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version}`;
    const ex = exportVerl({ recipe, config: input, seed: a.seed, steps, modelFiles, labVersion });
    for (const [path, content] of Object.entries(ex.files)) {
      const file = join(a.out, path);
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, content);
    }
    err(`[export-verl] ${recipe.name} -> ${a.out}: ${Object.keys(ex.files).length} files; launch: bash ${join(a.out, 'run.sh')}\n`);
    if (ex.unsupported.length) err(`[export-verl] ${ex.unsupported.length} parts of the recipe veRL cannot express are listed in ${join(a.out, 'README.md')}\n`);
    return 0;
  } catch (e) {
    err(`lab export-verl: ${(e as Error).message}\n`);
    return e instanceof RecipeUsageError || e instanceof ConfigError || /^unknown recipe|no veRL export/.test((e as Error).message) ? 2 : 1;
  }
}
