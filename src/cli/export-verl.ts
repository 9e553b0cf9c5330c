// `npm run lab -- export-verl --recipe NAME [--set field=value ...] [--model REF] [--seed S]
//  [--steps N] [--attacker-prompts] --out DIR`: writes the recipe as a veRL job (src/export/verl/, entries in src/recipes/<name>/export.ts): verl_config.yaml,
// reward.py, data/*.parquet, run.sh, README.md, trl_grpo.py where TRL fits, and the sandbox model
// the recipe trains when it is one (from public/models or --models DIR). --set takes lab names,
// veRL keys or TRL names. --attacker-prompts (defend, arena): the attacker model writes the
// dataset's harmful prompts, one per goal, instead of the sandbox's tactic templates. Bad input
// fails before anything is written, naming the field.
import { budgetFit } from '../recipes/kit/promptBudget';
import { backendLine } from './backendLine';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { getRecipe } from '../recipes/registry';
import { ConfigError } from '../contract/schema';
import { attackerSource } from '../data/sandbox/index';
import { useTrainingBackend } from './nodeBackend';
import { hash3 } from '../model/random';
import { loadAttacker, type DefendConfig } from '../recipes/defend/defend';
import { asUserMessage, sampleReplies } from '../recipes/kit/rollout';
import type { RecipeEnv } from '../recipes/kit/types';
import { attackerPlan, exportModelField, exportVerl, frozenSandboxes, modelPathFor } from '../recipes/exports';
import { DEFAULT_MODELS_DIR, nodeRecipeEnv } from './recipe-env';
import { parseRecipeArgs, recipeInput, RecipeUsageError } from './recipe-run';

function sandboxFiles(dir: string): Record<string, Uint8Array> {
  const out: Record<string, Uint8Array> = {};
  for (const f of readdirSync(dir)) out[f] = new Uint8Array(readFileSync(join(dir, f)));
  return out;
}

/** One prompt per goal from the recipe's attacker (defend: with its checkpoint's adapter), as the recipe's step samples them. */
async function sampleAttackPrompts(
  plan: NonNullable<ReturnType<typeof attackerPlan>>,
  seed: number,
  modelsDir: string | undefined,
  env?: RecipeEnv,
): Promise<Record<string, string>> {
  const c = plan.config;
  const e = env ?? nodeRecipeEnv({ modelsDir, backend: await useTrainingBackend('wasm') });
  // What generated the attacker prompts (stderr: stdout stays the job's JSON).
  if (!env) process.stderr.write(`export-verl: attacker prompts on ${await backendLine()}\n`);
  const atk = await loadAttacker(e, c as DefendConfig);
  try {
    const sampling = {
      maxNewTokens: c.attackerMaxTokens as number,
      temperature: c.attackerTemperature as number,
      topP: c.attackerTopP as number,
    };
    const r = await sampleReplies(
      atk,
      plan.goals.map((g) => attackerSource(g.text)),
      1,
      sampling,
      hash3(seed, 0xa77ac, 0x5e7),
      budgetFit(
        c as DefendConfig,
        plan.goals.map((g) => g.id),
      ),
    );
    return Object.fromEntries(plan.goals.map((g, i) => [g.id, asUserMessage(r.answers[i])]));
  } finally {
    atk.dispose();
  }
}

export async function exportVerlMain(
  argv: string[],
  opts: { stderr?: (s: string) => void; env?: RecipeEnv } = {},
): Promise<number> {
  const err = opts.stderr ?? ((s: string) => process.stderr.write(s));
  try {
    const sampleAttacker = argv.includes('--attacker-prompts');
    const a = parseRecipeArgs(argv.filter((x) => x !== '--attacker-prompts'));
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
    let attackPrompts: Record<string, string> | undefined;
    if (sampleAttacker) {
      const plan = attackerPlan({ recipe, config: input, seed: a.seed, steps });
      if (!plan)
        throw new RecipeUsageError(
          `--attacker-prompts: recipe ${recipe.name} has no attacker model (defend and arena do)`,
        );
      err(`[export-verl] sampling ${plan.goals.length} attacker prompts from ${String(plan.config.attacker)}\n`);
      attackPrompts = await sampleAttackPrompts(plan, a.seed, a.models, opts.env);
    }
    const labVersion = `v${(JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version}`;
    // Sandbox models reward.py asks (attack's frozen defender) ship beside the trained one.
    const frozenModelFiles: Record<string, Record<string, Uint8Array>> = {};
    for (const name of frozenSandboxes(recipe.name, input, recipe.schema)) {
      const dir = join(a.models ?? DEFAULT_MODELS_DIR, name);
      if (existsSync(dir)) frozenModelFiles[name] = sandboxFiles(dir);
    }
    const ex = exportVerl({
      recipe,
      config: input,
      seed: a.seed,
      steps,
      modelFiles,
      frozenModelFiles,
      labVersion,
      attackPrompts,
    });
    for (const [path, content] of Object.entries(ex.files)) {
      const file = join(a.out, path);
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, content);
    }
    err(
      `[export-verl] ${recipe.name} -> ${a.out}: ${Object.keys(ex.files).length} files; launch: bash ${join(a.out, 'run.sh')}\n`,
    );
    if (ex.unsupported.length)
      err(
        `[export-verl] ${ex.unsupported.length} parts of the recipe veRL cannot express are listed in ${join(a.out, 'README.md')}\n`,
      );
    return 0;
  } catch (e) {
    err(`lab export-verl: ${(e as Error).message}\n`);
    return e instanceof RecipeUsageError ||
      e instanceof ConfigError ||
      /^unknown recipe|no veRL export/.test((e as Error).message)
      ? 2
      : 1;
  }
}
