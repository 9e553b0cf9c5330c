// `npm run lab -- --recipe NAME --steps N --seed S --out runs/NAME.jsonl [--set field=value ...]
//  [--model REF] [--models DIR] [--backend wasm|cpu|webgpu [--vulkan swiftshader|lavapipe|system]
//  [--kernels auto|gpu|software]] [--no-early-stop] [--save-checkpoint FILE]
//  [--metric-names lab|verl|trl] [--max-prompt-length N] [--truncation error|left|right|middle]`; --set takes the lab's field names or their veRL / TRL aliases
// runs a registered recipe headless: one StepReport JSON per line in --out, a one-line summary per
// step on stderr; --save-checkpoint writes the run's final checkpoint (checkpointFile.ts JSON),
// which other recipes read back (defend's attackerCheckpoint). `--recipe NAME --help` prints the recipe's fields; `--list` the recipes.
// Bad recipe names, fields or values fail before any model loads, with the field and its range.
import { backendLine } from './backendLine';
import { type LearnPath } from '../rl/plannedLearn';
import { NonFiniteError } from '../recipes/kit/common';
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { useTrainingBackend } from './nodeBackend';
import { checkpointFromJson, checkpointToJson } from '../recipes/kit/checkpointFile';
import { aliasNote, renameMetrics, resolveAliases, type Framework } from '../contract/aliases';
import { createTimedRun } from '../recipes/kit/judgeTiming';
import { getRecipe, listRecipes, validateRecipeConfig } from '../recipes/registry';
import type { StepReport } from '../contract/report';
import { ConfigError, describeSchema } from '../contract/schema';
import { TRUNCATIONS } from '../contract/promptBounds';
import type { RecipeEnv } from '../recipes/kit/types';
import { nodeRecipeEnv } from './recipe-env';
import { setEngineOptions, type KernelVariants } from '../engine/index';
import { parseKernelVariants, parseVulkanDriver, type VulkanDriver } from './node/dawn';

export class RecipeUsageError extends Error {}

/** tfjs on WebGPU through Dawn on `vulkan` with `kernels` variants: generate() then runs the planned decode path. */
export async function useDawn(vulkan: VulkanDriver, kernels: KernelVariants = 'auto'): Promise<string> {
  const { startDawn, useKernelVariants } = await import('./node/dawn');
  const adapter = await startDawn({ vulkan });
  useKernelVariants(kernels);
  return `webgpu (${adapter}${kernels === 'auto' ? '' : `, ${kernels} kernels`})`;
}

export interface RecipeCliArgs {
  recipe?: string;
  steps: number;
  seed: number;
  out?: string;
  saveCheckpoint?: string;
  /** A checkpoint file (--save-checkpoint's JSON) to continue: its recipe, config, seed and state. */
  resume?: string;
  /** Overwrite an existing --out file (without it a re-run refuses instead of truncating the log). */
  force: boolean;
  sets: Record<string, string>;
  model?: string;
  models?: string;
  /** webgpu: Node + Dawn (rollouts on the planned decode path); --vulkan swiftshader or lavapipe for a CPU adapter. */
  backend: 'wasm' | 'cpu' | 'webgpu';
  /** webgpu: Dawn's Vulkan driver (--vulkan; --swiftshader is short for --vulkan swiftshader). */
  vulkan?: VulkanDriver;
  /** webgpu: the kernel variants (--kernels auto|gpu|software). */
  kernels?: KernelVariants;
  /** webgpu: the learning step's path (src/rl/plannedLearn.ts); default planned. */
  learnPath?: LearnPath;
  /** Metric names in the JSONL log: the lab's, veRL's or TRL's (aliases.ts METRIC_ALIASES). */
  metricNames: 'lab' | Framework;
  earlyStop: boolean;
  help: boolean;
  list: boolean;
}

const VALUE_FLAGS = [
  'recipe',
  'steps',
  'seed',
  'out',
  'set',
  'model',
  'models',
  'backend',
  'save-checkpoint',
  'resume',
  'metric-names',
  'learn-path',
  'vulkan',
  'kernels',
  'truncation',
  'max-prompt-length',
] as const;
const BOOL_FLAGS = ['help', 'list', 'no-early-stop', 'swiftshader', 'force'] as const;

export function parseRecipeArgs(argv: string[]): RecipeCliArgs {
  const a: RecipeCliArgs = {
    steps: 10,
    seed: 0,
    sets: {},
    backend: 'wasm',
    metricNames: 'lab',
    earlyStop: true,
    help: false,
    list: false,
    force: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '-h') {
      a.help = true;
      continue;
    }
    if (!arg.startsWith('--')) throw new RecipeUsageError(`unexpected argument ${JSON.stringify(arg)}`);
    let key = arg.slice(2);
    let value: string | undefined;
    const eq = key.indexOf('=');
    if (eq >= 0 && key !== 'set') {
      value = key.slice(eq + 1);
      key = key.slice(0, eq);
    }
    if ((BOOL_FLAGS as readonly string[]).includes(key)) {
      if (key === 'help') a.help = true;
      else if (key === 'list') a.list = true;
      else if (key === 'force') a.force = true;
      else if (key === 'swiftshader') {
        if (a.vulkan && a.vulkan !== 'swiftshader')
          throw new RecipeUsageError(`--swiftshader contradicts --vulkan ${a.vulkan}`);
        a.vulkan = 'swiftshader';
      } else a.earlyStop = false;
      continue;
    }
    if (!(VALUE_FLAGS as readonly string[]).includes(key)) {
      throw new RecipeUsageError(
        `unknown flag --${key} (flags: ${[...VALUE_FLAGS, ...BOOL_FLAGS].map((f) => `--${f}`).join(', ')})`,
      );
    }
    value ??= argv[++i];
    if (value === undefined || (value.startsWith('--') && key !== 'set'))
      throw new RecipeUsageError(`--${key} needs a value`);
    const int = (what: string, min: number) => {
      const x = Number(value);
      if (value!.trim() === '' || !Number.isInteger(x) || x < min)
        throw new RecipeUsageError(`--${key} must be ${what}, got ${JSON.stringify(value)}`);
      return x;
    };
    switch (key) {
      case 'recipe':
        a.recipe = value;
        break;
      case 'steps':
        a.steps = int('a positive integer', 1);
        break;
      case 'seed':
        a.seed = int('a non-negative integer', 0);
        break;
      case 'out':
        a.out = value;
        break;
      case 'save-checkpoint':
        a.saveCheckpoint = value;
        break;
      case 'resume':
        a.resume = value;
        break;
      case 'model':
        a.model = value;
        break;
      case 'models':
        a.models = value;
        break;
      case 'backend':
        if (value !== 'wasm' && value !== 'cpu' && value !== 'webgpu')
          throw new RecipeUsageError(`--backend must be wasm, cpu or webgpu, got ${JSON.stringify(value)}`);
        a.backend = value;
        break;
      case 'learn-path':
        if (value !== 'planned' && value !== 'tfjs')
          throw new RecipeUsageError(`--learn-path must be planned or tfjs, got ${JSON.stringify(value)}`);
        a.learnPath = value;
        break;
      case 'vulkan':
        try {
          const v = parseVulkanDriver(value);
          if (a.vulkan === 'swiftshader' && v !== 'swiftshader')
            throw new Error(`--swiftshader contradicts --vulkan ${v}`);
          a.vulkan = v;
        } catch (e) {
          throw new RecipeUsageError((e as Error).message);
        }
        break;
      case 'kernels':
        try {
          a.kernels = parseKernelVariants(value);
        } catch (e) {
          throw new RecipeUsageError((e as Error).message);
        }
        break;
      case 'metric-names':
        if (value !== 'lab' && value !== 'verl' && value !== 'trl')
          throw new RecipeUsageError(`--metric-names must be lab, verl or trl, got ${JSON.stringify(value)}`);
        a.metricNames = value;
        break;
      // The prompt budget's two fields (promptBudget.ts), as flags: short for --set truncation=... / maxPromptLength=...
      case 'truncation':
        if (!(TRUNCATIONS as readonly string[]).includes(value))
          throw new RecipeUsageError(`--truncation must be ${TRUNCATIONS.join(', ')}, got ${JSON.stringify(value)}`);
        a.sets.truncation = value;
        break;
      case 'max-prompt-length':
        a.sets.maxPromptLength = String(int('a positive integer', 1));
        break;
      case 'set': {
        const k = value.indexOf('=');
        if (k <= 0) throw new RecipeUsageError(`--set needs field=value, got ${JSON.stringify(value)}`);
        a.sets[value.slice(0, k).trim()] = value.slice(k + 1);
        break;
      }
    }
  }
  return a;
}

/**
 * Recipe config input from --set (lab names, veRL keys or TRL names) and --model, keyed by lab
 * names. Throws a ConfigError naming a field set twice.
 */
export function recipeInput(a: RecipeCliArgs): Record<string, unknown> {
  const recipe = getRecipe(a.recipe!);
  const resolved = resolveAliases(recipe.name, recipe.schema, a.sets);
  if (Object.keys(resolved.errors).length) throw new ConfigError(`recipe ${recipe.name}`, resolved.errors);
  const input: Record<string, unknown> = resolved.input;
  if (a.model !== undefined) {
    if (!recipe.modelField) throw new RecipeUsageError(`recipe ${recipe.name} has no model field for --model`);
    if (input[recipe.modelField] !== undefined)
      throw new ConfigError(`recipe ${recipe.name}`, {
        [recipe.modelField]: `field "${recipe.modelField}" is set twice: by --model and by --set`,
      });
    input[recipe.modelField] = a.model;
  }
  return input;
}

function fmt(x: number | undefined): string {
  if (x === undefined || Number.isNaN(x)) return '-';
  if (Math.abs(x) >= 100) return x.toFixed(0);
  return x.toFixed(3);
}

/** The one-line stderr summary of a step. */
export function summaryLine(r: StepReport): string {
  const keys = [
    'loss/sft',
    'reward/mean',
    'judge/asr',
    'eval/asr',
    'eval/asr_at_stop',
    'kl/mean',
    'entropy/mean',
    'loss/policy',
    'grad/norm',
  ];
  const parts = keys.filter((k) => r.metrics[k] !== undefined).map((k) => `${k} ${fmt(r.metrics[k])}`);
  // Each judge's latency and share of the step (judgeTiming.ts).
  const judges = Object.keys(r.metrics)
    .filter((k) => k.startsWith('perf/judge_ms/'))
    .map((k) => {
      const name = k.slice('perf/judge_ms/'.length);
      return `judge ${name} ${fmt(r.metrics[k])} ms (${Math.round(100 * (r.metrics[`perf/judge_share/${name}`] ?? 0))}%)`;
    });
  return `[${r.recipe}] step ${r.step}  ${[...parts, ...judges].join('  ')}  ${fmt(r.timings.total_ms)} ms`;
}

export function recipeHelp(name?: string): string {
  if (!name) {
    return [
      'usage: npm run -s lab -- --recipe NAME --steps N --seed S --out FILE.jsonl [--set field=value ...] [--model REF]',
      '       [--models DIR] [--backend wasm|cpu|webgpu [--vulkan swiftshader|lavapipe|system] [--kernels auto|gpu|software] [--learn-path planned|tfjs]] [--no-early-stop] [--save-checkpoint FILE.json] [--resume FILE.json] [--force] [--metric-names lab|verl|trl]',
      '       [--max-prompt-length TOKENS] [--truncation error|left|right|middle]',
      '       --recipe NAME --help: its fields',
      '',
      "  --max-prompt-length N  each dataset prompt's budget in tokens, chat template included (veRL data.max_prompt_length; default 1024)",
      '  --truncation T         a prompt over the budget (veRL data.truncation): error refuses it naming its row (default),',
      '                         left keeps its last tokens, right its first, middle its first and last halves',
      '',
      'recipes:',
      ...listRecipes().map((r) => `  ${r.name.padEnd(14)} ${r.title} (${r.source})`),
    ].join('\n');
  }
  const r = getRecipe(name);
  return [
    `${r.name}: ${r.title} (${r.source})`,
    r.description,
    '',
    'fields (--set field=value; the veRL key or TRL name in brackets works too):',
    ...describeSchema(r.schema, (k) => aliasNote(r.name, r.schema, k)).map((l) => `  ${l}`),
  ].join('\n');
}

/** The lines of a JSONL run log whose step is below `step` (a line that does not parse is kept). */
export function logBefore(text: string, step: number): string {
  const keep = text.split('\n').filter((line) => {
    if (line.trim() === '') return false;
    try {
      return !(((JSON.parse(line) as { step?: unknown }).step as number) >= step);
    } catch {
      return true;
    }
  });
  return keep.length ? `${keep.join('\n')}\n` : '';
}

/** Runs the CLI; returns the exit code (0 ok, 1 failure, 2 usage). `env` is injectable for tests. */
export async function recipeMain(
  argv: string[],
  opts: { env?: RecipeEnv; stderr?: (s: string) => void; stdout?: (s: string) => void } = {},
): Promise<number> {
  const err = opts.stderr ?? ((s: string) => process.stderr.write(s));
  const out = opts.stdout ?? ((s: string) => process.stdout.write(s));
  try {
    const a = parseRecipeArgs(argv);
    if (a.list || (a.help && !a.recipe)) {
      out(recipeHelp() + '\n');
      return 0;
    }
    // --resume FILE: the checkpoint names the recipe, its config and seed (a --recipe must agree).
    const resumed = a.resume ? checkpointFromJson(readFileSync(a.resume, 'utf8'), a.resume) : null;
    if (resumed && a.recipe && a.recipe !== resumed.recipe)
      throw new RecipeUsageError(`--resume ${a.resume} is a ${resumed.recipe} checkpoint, not ${a.recipe}`);
    if (resumed) a.recipe = resumed.recipe;
    if (!a.recipe) throw new RecipeUsageError('--recipe NAME is required');
    const recipe = getRecipe(a.recipe);
    if (a.help) {
      out(recipeHelp(recipe.name) + '\n');
      return 0;
    }
    const v = validateRecipeConfig(recipe, resumed ? { ...resumed.config, ...recipeInput(a) } : recipeInput(a));
    if (!v.ok) throw new ConfigError(`recipe ${recipe.name}`, v.errors);
    if (a.learnPath && a.backend !== 'webgpu') throw new RecipeUsageError('--learn-path needs --backend webgpu');
    if ((a.vulkan || a.kernels) && a.backend !== 'webgpu')
      throw new RecipeUsageError(`--${a.vulkan ? 'vulkan' : 'kernels'} needs --backend webgpu`);
    const backend =
      opts.env?.backend ??
      (a.backend === 'webgpu' ? await useDawn(a.vulkan ?? 'system', a.kernels) : await useTrainingBackend(a.backend));
    if (a.learnPath) setEngineOptions({ learnPath: a.learnPath });
    const env = opts.env ?? nodeRecipeEnv({ modelsDir: a.models, backend });
    const seed = resumed?.seed ?? a.seed;
    if (a.out) {
      // A re-run used to truncate the log it wrote before; a resumed run appends to it.
      if (existsSync(a.out) && !a.force && !resumed)
        throw new RecipeUsageError(
          `--out ${a.out} exists: pass --force to overwrite it, or --resume a checkpoint to append to it`,
        );
      mkdirSync(dirname(a.out), { recursive: true });
      if (!resumed) writeFileSync(a.out, '');
      // Resumed: the log keeps its steps before the checkpoint's (the later ones are run again).
      else if (existsSync(a.out)) writeFileSync(a.out, logBefore(readFileSync(a.out, 'utf8'), resumed.step));
    }
    err(
      `[${recipe.name}] seed ${seed}, ${a.steps} steps${resumed ? ` from step ${resumed.step} (${a.resume})` : ''}, ${await backendLine()}\n`,
    );
    const run = await createTimedRun(recipe, env, v.config, seed);
    try {
      if (resumed) await run.restore(resumed);
      for (let s = 0; s < a.steps; s++) {
        let r;
        try {
          r = await run.step();
        } catch (e) {
          // A non-finite value stops the step before it changes anything: keep the last good state.
          if (e instanceof NonFiniteError && a.saveCheckpoint) {
            mkdirSync(dirname(a.saveCheckpoint), { recursive: true });
            writeFileSync(a.saveCheckpoint, checkpointToJson(await run.state()));
            err(`[${recipe.name}] last good state (after ${run.stepsDone} steps) -> ${a.saveCheckpoint}\n`);
          }
          throw e;
        }
        if (a.out)
          appendFileSync(
            a.out,
            JSON.stringify(a.metricNames === 'lab' ? r : { ...r, metrics: renameMetrics(r.metrics, a.metricNames) }) +
              '\n',
          );
        err(summaryLine(r) + '\n');
        if (a.earlyStop && run.done) {
          err(`[${recipe.name}] early stop after step ${r.step}: ${run.stopReason}\n`);
          break;
        }
      }
      if (a.saveCheckpoint) {
        mkdirSync(dirname(a.saveCheckpoint), { recursive: true });
        writeFileSync(a.saveCheckpoint, checkpointToJson(await run.state()));
        err(`[${recipe.name}] checkpoint after ${run.stepsDone} steps -> ${a.saveCheckpoint}\n`);
      }
    } finally {
      run.dispose();
    }
    return 0;
  } catch (e) {
    err(`lab --recipe: ${(e as Error).message}\n`);
    if (process.env.LAB_DEBUG) err(`${(e as Error).stack}\n`);
    if (e instanceof RecipeUsageError || e instanceof ConfigError || /^unknown recipe/.test((e as Error).message)) {
      err('run "npm run lab -- --recipe NAME --help" for the fields, "npm run lab -- --list" for the recipes\n');
      return 2;
    }
    return 1;
  }
}
