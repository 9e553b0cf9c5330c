// `npm run lab -- <command> [--flags]`: the lab's headless entry point.
//
// A dispatcher: each command is one entry of COMMANDS (summary, flags, run). Results go to
// stdout as one line of JSON; errors go to stderr as one line naming the file or argument,
// with exit code 1 (bad input) or 2 (bad usage). Tensors run on tfjs-wasm (the fastest CPU path;
// --backend cpu for tfjs-cpu; the backend in use is named on stderr), or with --backend webgpu on WebGPU through Dawn, where generate and logits take the planned decode path
// unless --path tfjs. --vulkan picks Dawn's Vulkan driver (swiftshader or lavapipe: CPU drivers;
// system: the machine's GPU; --swiftshader is short for --vulkan swiftshader) and --kernels the
// kernel variants (gpu: the GPU kernels on any adapter, software: the software-adapter ones,
// auto: by adapter), so the GPU kernels can be checked against golden logits on a CPU driver.
//
//   logits    --model DIR --ids 1,5,9                  {"logits": [[...] per position], "entropy": [...]}
//             [--backend wasm|cpu|webgpu [--vulkan swiftshader|lavapipe|system] [--kernels auto|gpu|software]
//             [--path planned|tfjs]] (webgpu: Node + Dawn; the planned path computes positions 1..
//             teacher-forced, the prefill gives position 0)
//   generate  --model DIR --ids 1,5,9 [--max-new-tokens N] [--greedy] [--temperature T]
//             [--top-k K] [--top-p P] [--seed S] [--stop 2,3 | --stop-eos] [--stats]
//                                                      [ids...]  (or {"ids","logprobs","entropy"} with --stats)
//   info      --model DIR                              the parsed config record
//   split     [--seed S] [--split-seed K] [--json]     the evaluation split's two sides (goals with
//             template ids, benign tasks, a seed-S minmax run's QA items) and what they share (nothing);
//             without --json only sizes, template ids and shared counts
//   --recipe NAME --steps N --seed S --out FILE.jsonl [--set field=value ...] [--model REF]
//             runs a registered recipe headless (src/cli/recipe-run.ts); --list lists them
//   export-verl --recipe NAME [--set field=value ...] [--seed S] [--steps N] [--attacker-prompts] --out DIR
//             writes the recipe as a veRL (and TRL) job folder (src/cli/export-verl.ts)

import { backendLine } from './backendLine';
import * as tf from '@tensorflow/tfjs';
import { useTrainingBackend } from './nodeBackend';
import { entropyFromLogits, generate } from '../model/generate';
import { disposeLlama, forward, type LlamaModel } from '../model/llama';
import { loadModel, loadModelConfig } from '../model/load';
import { exportVerlMain } from './export-verl';
import { SANDBOX_SPLIT_SEED } from '../data/sandbox/split';
import { splitListing, type SplitSide } from '../recipes/splitListing';
import { folderSource } from './fs-source';
import { recipeMain } from './recipe-run';
import { plannedForcedLogits, type DecodePath } from '../model/planned/decode';
import { engineOptions, setEngineOptions, type KernelVariants } from '../engine/index';
import type { VulkanDriver } from './node/dawn';

class UsageError extends Error {}

type FlagKind = 'string' | 'bool';
interface Command {
  summary: string;
  flags: Record<string, FlagKind>;
  required: string[];
  run(args: Args): Promise<unknown>;
}
type Args = Record<string, string | boolean>;

function parseArgs(argv: string[], cmd: string, spec: Command): Args {
  const out: Args = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('--')) throw new UsageError(`${cmd}: unexpected argument ${JSON.stringify(a)}`);
    let key = a.slice(2);
    let value: string | undefined;
    const eq = key.indexOf('=');
    if (eq >= 0) {
      value = key.slice(eq + 1);
      key = key.slice(0, eq);
    }
    const kind = spec.flags[key];
    if (!kind)
      throw new UsageError(
        `${cmd}: unknown flag --${key} (known: ${Object.keys(spec.flags)
          .map((f) => `--${f}`)
          .join(', ')})`,
      );
    if (kind === 'bool') {
      if (value !== undefined) throw new UsageError(`${cmd}: --${key} takes no value`);
      out[key] = true;
    } else {
      value ??= argv[++i];
      if (value === undefined || value.startsWith('--')) throw new UsageError(`${cmd}: --${key} needs a value`);
      out[key] = value;
    }
  }
  for (const r of spec.required) if (out[r] === undefined) throw new UsageError(`${cmd}: --${r} is required`);
  return out;
}

/** "1,5,9" -> [1, 5, 9]; anything else is a usage error naming the flag. */
function parseIds(s: string, flag: string): number[] {
  const parts = s.split(',').map((p) => p.trim());
  if (parts.length === 0 || parts.some((p) => !/^\d+$/.test(p))) {
    throw new UsageError(`--${flag} must be comma-separated non-negative integers, got ${JSON.stringify(s)}`);
  }
  return parts.map(Number);
}

function num(args: Args, flag: string, dflt: number, check: (x: number) => boolean, what: string): number {
  const v = args[flag];
  if (v === undefined) return dflt;
  const x = Number(v);
  if (typeof v !== 'string' || v.trim() === '' || !Number.isFinite(x) || !check(x)) {
    throw new UsageError(`--${flag} must be ${what}, got ${JSON.stringify(v)}`);
  }
  return x;
}

async function withModel<T>(dir: string, fn: (m: LlamaModel) => Promise<T>): Promise<T> {
  const model = await loadModel(folderSource(dir));
  try {
    return await fn(model);
  } finally {
    disposeLlama(model);
  }
}

function checkVocab(ids: number[], model: LlamaModel, flag: string): void {
  const bad = ids.find((t) => t >= model.config.vocabSize);
  if (bad !== undefined) {
    throw new UsageError(`--${flag}: token id ${bad} is outside the model's vocabulary [0, ${model.config.vocabSize})`);
  }
}

const BACKEND_FLAGS: Record<string, FlagKind> = {
  backend: 'string',
  vulkan: 'string',
  swiftshader: 'bool',
  kernels: 'string',
  path: 'string',
};

/** Position 0 from the prefill, positions 1.. from the planned decode step, teacher-forced. */
async function plannedLogits(model: LlamaModel, ids: number[]): Promise<{ logits: number[][]; entropy: number[] }> {
  const first = forward(model, [ids.slice(0, 1)]);
  const rows: Float32Array[] = [(await first.data()) as Float32Array];
  first.dispose();
  rows.push(
    ...(await plannedForcedLogits(
      model,
      [ids.slice(0, 1)],
      ids.slice(1).map((t) => [t]),
    )),
  );
  const entropy = rows.map((r) => {
    let m = -Infinity;
    for (const v of r) m = Math.max(m, v);
    let z = 0;
    let ez = 0;
    for (const v of r) {
      const e = Math.exp(v - m);
      z += e;
      ez += e * v;
    }
    return Math.log(z) + m - ez / z;
  });
  return { logits: rows.map((r) => Array.from(r)), entropy };
}

/**
 * --backend wasm (default: the fastest CPU path, cpu when wasm cannot start), cpu or webgpu (Node +
 * Dawn); --path picks the decode path on webgpu. The backend in use is named on stderr.
 */
async function useBackend(a: Args): Promise<void> {
  const backend = a.backend ?? 'wasm';
  if (backend !== 'wasm' && backend !== 'cpu' && backend !== 'webgpu')
    throw new UsageError(`--backend must be wasm, cpu or webgpu, got ${JSON.stringify(backend)}`);
  if (a.path !== undefined && a.path !== 'planned' && a.path !== 'tfjs')
    throw new UsageError(`--path must be planned or tfjs, got ${JSON.stringify(a.path)}`);
  for (const f of ['swiftshader', 'vulkan', 'kernels'])
    if (a[f] !== undefined && backend !== 'webgpu') throw new UsageError(`--${f} needs --backend webgpu`);
  if (a.swiftshader && a.vulkan !== undefined && a.vulkan !== 'swiftshader')
    throw new UsageError(`--swiftshader contradicts --vulkan ${String(a.vulkan)}`);
  if (backend === 'webgpu') {
    const dawn = await import('./node/dawn');
    let vulkan: VulkanDriver = a.swiftshader ? 'swiftshader' : 'system';
    let kernels: KernelVariants = 'auto';
    try {
      if (typeof a.vulkan === 'string') vulkan = dawn.parseVulkanDriver(a.vulkan);
      if (typeof a.kernels === 'string') kernels = dawn.parseKernelVariants(a.kernels);
    } catch (e) {
      throw new UsageError((e as Error).message);
    }
    await dawn.startDawn({ vulkan });
    dawn.useKernelVariants(kernels);
    setEngineOptions({ decodePath: (a.path as DecodePath | undefined) ?? 'planned' });
    return;
  }
  await useTrainingBackend(backend);
}

const COMMANDS: Record<string, Command> = {
  logits: {
    summary: 'logits and next-token entropy at every position of one sequence',
    flags: { model: 'string', ids: 'string', ...BACKEND_FLAGS },
    required: ['model', 'ids'],
    run: async (a) => {
      const ids = parseIds(a.ids as string, 'ids');
      return withModel(a.model as string, async (model) => {
        checkVocab(ids, model, 'ids');
        if (a.backend === 'webgpu' && engineOptions().decodePath === 'planned' && ids.length > 1)
          return plannedLogits(model, ids);
        const logits = forward(model, [ids]);
        const ent = entropyFromLogits(logits);
        const out = { logits: (await logits.array())[0], entropy: (await ent.array()) as number[][] };
        tf.dispose([logits, ent]);
        return { logits: out.logits, entropy: out.entropy[0] };
      });
    },
  },
  generate: {
    summary: 'continue one sequence (greedy or seeded sampling) and print the generated ids',
    flags: {
      model: 'string',
      ids: 'string',
      'max-new-tokens': 'string',
      greedy: 'bool',
      temperature: 'string',
      'top-k': 'string',
      'top-p': 'string',
      seed: 'string',
      stop: 'string',
      'stop-eos': 'bool',
      stats: 'bool',
      ...BACKEND_FLAGS,
    },
    required: ['model', 'ids'],
    run: async (a) => {
      const ids = parseIds(a.ids as string, 'ids');
      const maxNewTokens = num(a, 'max-new-tokens', 16, (x) => Number.isInteger(x) && x >= 0, 'a non-negative integer');
      const temperature = num(a, 'temperature', 1, (x) => x >= 0, 'a non-negative number');
      const topK = num(a, 'top-k', 0, (x) => Number.isInteger(x) && x >= 0, 'a non-negative integer');
      const topP = num(a, 'top-p', 1, (x) => x > 0 && x <= 1, 'in (0, 1]');
      const seed = num(a, 'seed', 0, (x) => Number.isInteger(x), 'an integer');
      const stopIds = a.stop !== undefined ? parseIds(a.stop as string, 'stop') : [];
      return withModel(a.model as string, async (model) => {
        checkVocab(ids, model, 'ids');
        const stopTokens = [...stopIds, ...(a['stop-eos'] ? model.config.eosTokenIds : [])];
        const r = await generate(model, [ids], {
          maxNewTokens,
          greedy: a.greedy === true,
          temperature,
          topK,
          topP,
          seed,
          stopTokens,
        });
        const n = r.lengths[0];
        if (!a.stats) return r.tokens[0].slice(0, n);
        return { ids: r.tokens[0].slice(0, n), logprobs: r.logprobs[0].slice(0, n), entropy: r.entropy[0].slice(0, n) };
      });
    },
  },
  split: {
    summary: 'both sides of the sandbox evaluation split: goals by template, benign tasks, QA items',
    flags: { seed: 'string', 'split-seed': 'string', json: 'bool' },
    required: [],
    run: async (a) => {
      const seed = num(a, 'seed', 1, (x) => Number.isInteger(x), 'an integer');
      const splitSeed = num(a, 'split-seed', SANDBOX_SPLIT_SEED, (x) => Number.isInteger(x), 'an integer');
      const l = splitListing(seed, splitSeed);
      if (a.json) return l;
      const sizes = (s: SplitSide) => ({
        templates: [...new Set(s.goals.map((g) => g.template))],
        goals: s.goals.length,
        benign: s.benign.length,
        qa: s.qa.length,
      });
      const shared = { templates: l.shared.templates.length, benign: l.shared.benign.length, qa: l.shared.qa.length };
      return { splitSeed: l.splitSeed, seed: l.seed, train: sizes(l.train), eval: sizes(l.eval), shared };
    },
  },
  info: {
    summary: 'print the parsed config.json of a model folder',
    flags: { model: 'string' },
    required: ['model'],
    run: async (a) => loadModelConfig(folderSource(a.model as string)),
  },
};

function usage(): string {
  const lines = [
    'usage: npm run lab -- <command> [--flags]',
    '       npm run lab -- --recipe NAME --steps N --seed S --out FILE.jsonl [--set field=value ...]',
    '       npm run lab -- export-verl --recipe NAME [--set field=value ...] [--seed S] [--steps N] [--attacker-prompts] --out DIR   (a veRL / TRL job folder)',
    '',
    'commands:',
  ];
  for (const [name, c] of Object.entries(COMMANDS)) {
    lines.push(`  ${name.padEnd(10)} ${c.summary}`);
    lines.push(
      `  ${''.padEnd(10)} flags: ${Object.entries(c.flags)
        .map(([f, k]) => (k === 'bool' ? `--${f}` : `--${f} X`))
        .join(' ')}`,
    );
  }
  return lines.join('\n');
}

export async function main(argv: string[]): Promise<number> {
  if (argv[0] === '--recipe' || argv[0]?.startsWith('--recipe=') || argv[0] === '--list') return recipeMain(argv);
  if (argv[0] === 'export-verl') return exportVerlMain(argv.slice(1));
  const [cmd, ...rest] = argv;
  if (!cmd || cmd === '--help' || cmd === '-h' || cmd === 'help') {
    (cmd ? process.stdout : process.stderr).write(usage() + '\n');
    return cmd ? 0 : 2;
  }
  const spec = COMMANDS[cmd];
  try {
    if (!spec)
      throw new UsageError(`unknown command ${JSON.stringify(cmd)} (commands: ${Object.keys(COMMANDS).join(', ')})`);
    const args = parseArgs(rest, cmd, spec);
    await useBackend(args);
    process.stderr.write(`lab ${cmd}: ${await backendLine()}\n`);
    const result = await spec.run(args);
    process.stdout.write(JSON.stringify(result) + '\n');
    return 0;
  } catch (e) {
    const err = e as Error;
    process.stderr.write(`lab ${cmd}: ${err.message}\n`);
    if (e instanceof UsageError) {
      process.stderr.write(`run "npm run lab -- --help" for usage\n`);
      return 2;
    }
    return 1;
  }
}

// Run when executed directly (tsx src/cli/lab.ts ...), not when imported by a test.
const invoked = process.argv[1] ?? '';
if (/lab\.ts$|lab\.js$/.test(invoked)) {
  // tfjs greets Node users on the console; keep stdout clean for JSON by silencing that one line.
  const warn = console.warn;
  console.warn = (...a: unknown[]) => {
    if (typeof a[0] === 'string' && a[0].includes('tfjs-node')) return;
    warn(...a);
  };
  main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
