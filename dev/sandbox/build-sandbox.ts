// npm run build:sandbox — trains the sandbox tokenizer and the built-in models (defender,
// attacker, judge, qa) from scratch and writes them to public/models/<name>/ as Hugging Face folders.
// Deterministic for a seed and backend. See dev/sandbox/train.ts and the README there.
//
//   --out DIR            output folder (default public/models)
//   --seed N             default 2024
//   --quick              tiny model and 3 steps per model: proves the pipeline in seconds
//   --only a,b           train only these models (defender, attacker, judge, qa)
//   --steps N            steps of every model (overrides the budget)
//   --<model>-steps N    steps of one model, e.g. --defender-steps 800
//   --batch N            sequences per step
//   --batching length|prompt  batch bucketing of every model (overrides the budget; see trainSft)
//   --backend wasm|cpu   default wasm (falls back to cpu)
//   --bf16               store BF16 weights instead of F32
//   --critic-steps N     steps of the qa model's critic phase (its third)
//   --critic-lr X        learning rate of the critic phase (default 3e-3)
//   --soft-steps N       steps of the qa model's format blind spot phase (its fourth; 0 = none)
//   --soft-lr X          learning rate of the format blind spot phase (default 2e-3)
//   --qa-critic-from DIR start the qa model from DIR/model.safetensors (a model holding its first three
//                        phases, up to the critic, for this seed) and run only the format blind spot phase
//   --qa-from DIR        start the qa model from DIR/model.safetensors (a model holding its first two
//                        phases, drills and main data, for this seed) and run the critic and format blind spot phases
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  buildSandboxModels,
  DEFAULT_BUDGETS,
  DEFAULT_SPEC,
  QUICK_BUDGETS,
  QUICK_SPEC,
  SANDBOX_MODELS,
  type ModelBudget,
  type SandboxModelName,
} from '../../dev/sandbox/train';
import { useTrainingBackend } from '../../src/cli/nodeBackend';

function parseArgs(argv: string[]): Map<string, string | true> {
  const out = new Map<string, string | true>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('--')) throw new Error(`build-sandbox: unexpected argument ${a}`);
    const [k, v] = a.slice(2).split('=', 2);
    if (v !== undefined) out.set(k, v);
    else if (i + 1 < argv.length && !argv[i + 1].startsWith('--')) out.set(k, argv[++i]);
    else out.set(k, true);
  }
  return out;
}

function int(args: Map<string, string | true>, key: string): number | undefined {
  const v = args.get(key);
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0)
    throw new Error(`build-sandbox: --${key} must be a positive integer, got ${String(v)}`);
  return n;
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const known = new Set([
    'out',
    'seed',
    'quick',
    'only',
    'steps',
    'batch',
    'backend',
    'bf16',
    'batching',
    'critic-steps',
    'critic-lr',
    'qa-from',
    'soft-steps',
    'soft-lr',
    'qa-critic-from',
    ...SANDBOX_MODELS.map((m) => `${m}-steps`),
  ]);
  for (const k of args.keys()) if (!known.has(k)) throw new Error(`build-sandbox: unknown flag --${k}`);
  const quick = args.has('quick');
  const out = String(args.get('out') ?? 'public/models');
  const seed = args.has('seed') ? Number(args.get('seed')) : 2024;
  const only = args.has('only') ? (String(args.get('only')).split(',') as SandboxModelName[]) : SANDBOX_MODELS;
  for (const m of only)
    if (!SANDBOX_MODELS.includes(m)) throw new Error(`build-sandbox: --only names unknown model ${m}`);
  const base = quick ? QUICK_BUDGETS : DEFAULT_BUDGETS;
  const batching = args.get('batching');
  if (batching !== undefined && batching !== 'length' && batching !== 'prompt') {
    throw new Error(`build-sandbox: --batching must be length or prompt, got ${String(batching)}`);
  }
  const criticLr = args.has('critic-lr') ? Number(args.get('critic-lr')) : undefined;
  if (criticLr !== undefined && !(criticLr > 0 && Number.isFinite(criticLr)))
    throw new Error(`build-sandbox: --critic-lr must be a positive number, got ${String(args.get('critic-lr'))}`);
  const softLr = args.has('soft-lr') ? Number(args.get('soft-lr')) : undefined;
  if (softLr !== undefined && !(softLr > 0 && Number.isFinite(softLr)))
    throw new Error(`build-sandbox: --soft-lr must be a positive number, got ${String(args.get('soft-lr'))}`);
  const softSteps = args.get('soft-steps') === '0' ? 0 : int(args, 'soft-steps');
  const budgets = {} as Record<SandboxModelName, ModelBudget>;
  for (const m of SANDBOX_MODELS) {
    budgets[m] = {
      ...base[m],
      steps: int(args, `${m}-steps`) ?? int(args, 'steps') ?? base[m].steps,
      batchSize: int(args, 'batch') ?? base[m].batchSize,
      batching: batching ?? base[m].batching,
      criticSteps: (m === 'qa' ? int(args, 'critic-steps') : undefined) ?? base[m].criticSteps,
      criticLr: criticLr ?? base[m].criticLr,
      softSteps: (m === 'qa' ? softSteps : undefined) ?? base[m].softSteps,
      softLr: softLr ?? base[m].softLr,
    };
  }
  const backend = await useTrainingBackend(args.get('backend') === 'cpu' ? 'cpu' : 'wasm');
  const t0 = Date.now();
  const log = (msg: string) => console.log(`[${((Date.now() - t0) / 1000).toFixed(0).padStart(5)}s] ${msg}`);
  log(`backend ${backend}, seed ${seed}, out ${out}${quick ? ', quick' : ''}`);
  const result = await buildSandboxModels({
    seed,
    spec: quick ? QUICK_SPEC : DEFAULT_SPEC,
    budgets,
    only,
    dtype: args.has('bf16') ? 'BF16' : 'F32',
    tokenizerCorpus: quick ? 500 : undefined,
    log,
    logEvery: quick ? 1 : 25,
    // Read before the build: DIR may be the output folder, which the build overwrites.
    qaFrom: args.has('qa-from') ? readFileSync(join(String(args.get('qa-from')), 'model.safetensors')) : undefined,
    qaCriticFrom: args.has('qa-critic-from')
      ? readFileSync(join(String(args.get('qa-critic-from')), 'model.safetensors'))
      : undefined,
  });
  let total = 0;
  for (const m of result.models) {
    const dir = join(out, m.name);
    mkdirSync(dir, { recursive: true });
    for (const [file, data] of m.files) {
      writeFileSync(join(dir, file), data);
      total += typeof data === 'string' ? Buffer.byteLength(data) : data.byteLength;
    }
  }
  console.log('\nmodel     params   weights      steps  train s  loss first -> last');
  for (const m of result.models) {
    console.log(
      `${m.name.padEnd(9)} ${String(m.parameters).padStart(7)} ${(m.weightBytes / 1e6).toFixed(2).padStart(6)} MB ${[
        m.drill,
        m.result,
        m.critic,
        m.soft,
      ]
        .filter((r) => r !== undefined)
        .map((r) => r.steps)
        .join('+')
        .padStart(9)} ` +
        `${((m.result.ms + (m.drill?.ms ?? 0) + (m.critic?.ms ?? 0) + (m.soft?.ms ?? 0)) / 1000).toFixed(1).padStart(8)}  ${(m.soft ?? m.critic ?? m.result).firstLoss.toFixed(3)} -> ${(m.soft ?? m.critic ?? m.result).lastLoss.toFixed(3)}`,
    );
  }
  console.log(
    `\nwrote ${result.models.length} folders to ${out} (${(total / 1e6).toFixed(2)} MB), total ${(result.ms / 1000).toFixed(1)} s`,
  );
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});
