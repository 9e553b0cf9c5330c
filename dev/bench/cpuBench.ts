// `npm run bench:cpu [-- --reps N] [--warmup N] [--models defender,smollm2] [--rows forward,decode,learn,grpo]
// [--backend wasm|cpu] [--baseline DIR]`: the tfjs CPU
// path (wasm by default, one thread) against PyTorch on the same CPU, the same model and the same
// work (issue 42). Two persistent workers, one per side (dev/bench/cpu/), each loads the model
// once; their forwards are checked equal before anything is timed; then each case runs a warm-up
// on both sides and `reps` timed repeats alternating wasm, torch, wasm, torch..., so a load that
// comes and goes on a shared machine falls on both. One worker runs at a time. Memory: fresh
// processes run the SmolLM2-shape learning step alone and report their peak RSS.
//
// PyTorch: the first of `python3`, `/usr/bin/python3` that imports torch (Debian: apt-get install
// python3-torch); one thread, and OpenBLAS when libopenblas0-pthread is installed (Debian's torch
// calls whatever libblas.so.3 the loader finds, the reference BLAS by default): the table says
// which library was mapped.
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { SMOLLM2_135M_CONFIG, syntheticWeights } from './synthetic';
import { DEFENDER_CASES, SMOLLM2_CASES, type CpuCase } from './cpu/work';

const argv = process.argv.slice(2);
const flag = (name: string, dflt: string) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : dflt);
const REPS = Number(flag('--reps', '5'));
/**
 * Untimed runs of each case on each side first: tfjs-wasm's learning step settles over ~3 (a
 * fresh process ran its first steps at 192, 107, 85, 73 ms CPU: V8 tiering its code up).
 */
const WARMUP = Math.max(1, Number(flag('--warmup', '1')));
const MODELS = flag('--models', 'defender,smollm2').split(',');
const BACKEND = flag('--backend', 'wasm');
/** Work kinds to time (all by default); the memory rows run with smollm2 and 'learn'. */
const ROWS = flag('--rows', 'forward,decode,learn,grpo').split(',');
/**
 * Another checkout of the project (a git worktree of an older commit, with node_modules): its own
 * wasm worker takes PyTorch's place, so the table is old vs new in one run (same load on both).
 */
const BASELINE = flag('--baseline', '');
const RANK = 16;
const OPENBLAS = '/usr/lib/x86_64-linux-gnu/openblas-pthread';

class Worker {
  private readonly proc: ChildProcessWithoutNullStreams;
  private readonly pending: { res: (v: Record<string, unknown>) => void; rej: (e: Error) => void }[] = [];
  constructor(cmd: string, args: string[], env: NodeJS.ProcessEnv, cwd = '.') {
    this.proc = spawn(cmd, args, { env: { ...process.env, ...env }, cwd });
    this.proc.on('exit', (code) => {
      for (const p of this.pending.splice(0)) p.rej(new Error(`${cmd} ${args.join(' ')}: exited (${code})`));
    });
    this.proc.stderr.on('data', (d: Buffer) => {
      const s = d.toString();
      if (/Error|Traceback/.test(s)) process.stderr.write(s);
    });
    createInterface({ input: this.proc.stdout }).on('line', (l) => {
      if (l.startsWith('@@')) this.pending.shift()?.res(JSON.parse(l.slice(2)) as Record<string, unknown>);
    });
  }
  send(cmd: Record<string, unknown>): Promise<Record<string, unknown>> {
    return new Promise((res, rej) => {
      this.pending.push({ res, rej });
      this.proc.stdin.write(JSON.stringify(cmd) + '\n');
    });
  }
  async quit(): Promise<void> {
    this.proc.stdin.write('{"op":"quit"}\n');
    await new Promise((r) => this.proc.once('exit', r));
  }
}

function torchPython(): string | null {
  for (const py of ['python3', '/usr/bin/python3']) {
    if (spawnSync(py, ['-c', 'import torch'], { stdio: 'ignore' }).status === 0) return py;
  }
  return null;
}

const torchEnv: NodeJS.ProcessEnv = {
  OMP_NUM_THREADS: '1',
  OPENBLAS_NUM_THREADS: '1',
  MKL_NUM_THREADS: '1',
  ...(existsSync(join(OPENBLAS, 'libblas.so.3')) ? { LD_LIBRARY_PATH: OPENBLAS } : {}),
};

const tfjsWorker = (dir = '.') =>
  new Worker(
    resolve('node_modules/.bin/tsx'),
    ['--import', './src/cli/node/wgsl-register.mjs', 'dev/bench/cpu/wasmWorker.ts', '--backend', BACKEND],
    {},
    dir,
  );
/** What the tfjs side is compared with: the baseline checkout's tfjs, else PyTorch (null: nothing). */
const otherWorker = (py: string | null) => (BASELINE ? tfjsWorker(BASELINE) : py ? torchWorker(py) : null);
const OTHER = BASELINE ? `baseline (${BASELINE})` : 'PyTorch';
const torchWorker = (py: string) => new Worker(py, ['dev/bench/cpu/torch_worker.py'], torchEnv);

/** The model's config.json and safetensors on disk (the SmolLM2 shape: seeded BF16 weights, written once). */
function modelFiles(name: string): { config: string; weights: string; cases: CpuCase[] } {
  if (name === 'defender') {
    const dir = resolve('public/models/defender');
    return { config: join(dir, 'config.json'), weights: join(dir, 'model.safetensors'), cases: DEFENDER_CASES };
  }
  if (name !== 'smollm2') throw new Error(`bench:cpu: unknown model "${name}" (defender, smollm2)`);
  const dir = join(tmpdir(), 'sparring-bench-cpu-smollm2');
  const config = join(dir, 'config.json');
  const weights = join(dir, 'model.safetensors');
  if (!existsSync(weights)) {
    mkdirSync(dir, { recursive: true });
    writeFileSync(config, JSON.stringify(SMOLLM2_135M_CONFIG));
    writeFileSync(weights, syntheticWeights(SMOLLM2_135M_CONFIG, 1));
  }
  return { config, weights, cases: SMOLLM2_CASES };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const fmt = (ms: number) => (ms >= 100 ? ms.toFixed(0) : ms.toFixed(1));
const spread = (xs: number[]) => `${fmt(Math.min(...xs))}–${fmt(Math.max(...xs))}`;

async function benchModel(name: string, py: string | null): Promise<string[]> {
  const files = modelFiles(name);
  const load = { op: 'load', config: files.config, weights: files.weights, rank: RANK };
  const tfjs = tfjsWorker();
  const torch = otherWorker(py);
  const info = await tfjs.send(load);
  const tinfo = torch ? await torch.send(load) : null;
  const lines = [
    `### ${name} (tfjs ${String(info.backend)}, ${String(info.threads ?? '?')} thread${
      BASELINE
        ? `; baseline: tfjs ${String(tinfo?.backend)} of ${BASELINE}`
        : tinfo
          ? `; torch ${String(tinfo.torch)}, ${String(tinfo.threads)} thread, BLAS ${(tinfo.blas as string[]).map((p) => p.split('/').pop()).join(', ') || 'torch built-in'}`
          : '; no torch'
    })`,
    '',
  ];
  if (torch) {
    // The two forwards must agree before any time is compared: rows' first, middle and last positions.
    const L = 64;
    const check = { op: 'logits', B: 2, L, positions: [0, L / 2, L - 1] };
    const a = (await tfjs.send(check)).logits as number[];
    const b = (await torch.send(check)).logits as number[];
    let diff = 0;
    let scale = 0;
    a.forEach((v, i) => {
      diff = Math.max(diff, Math.abs(v - b[i]));
      scale = Math.max(scale, Math.abs(b[i]));
    });
    if (!(diff <= 1e-4 * Math.max(1, scale))) throw new Error(`${name}: the forwards differ (max |diff| ${diff})`);
    const greedy = { op: 'greedy', B: 1, P: 16, new: 16 };
    const ga = JSON.stringify((await tfjs.send(greedy)).tokens);
    const gb = JSON.stringify((await torch.send(greedy)).tokens);
    lines.push(
      `Forwards checked equal before timing: max |logit diff| ${diff.toExponential(2)} (logits up to ${scale.toFixed(2)}); greedy 16 tokens ${ga === gb ? 'identical' : 'DIFFER'}.`,
      '',
    );
  }
  lines.push(
    `| work | tfjs ${String(info.backend)} ms (median, min–max) | ${OTHER} ms (median, min–max) | ${String(info.backend)} / ${BASELINE ? 'baseline' : 'torch'} | CPU ms ${String(info.backend)} / ${BASELINE ? 'baseline' : 'torch'} (medians) |`,
    '|---|---|---|---|---|',
  );
  for (const c of files.cases.filter((x) => ROWS.includes(x.work.kind))) {
    const work = { op: 'work', work: c.work };
    for (let w = 0; w < WARMUP; w++) {
      await tfjs.send({ ...work, seed: 0 });
      if (torch) await torch.send({ ...work, seed: 0 });
    }
    const tw: number[] = [];
    const tt: number[] = [];
    const cw: number[] = [];
    const ct: number[] = [];
    const phases: Record<string, number>[] = [];
    for (let r = 0; r < REPS; r++) {
      const res = await tfjs.send({ ...work, seed: r + 1 });
      tw.push(res.ms as number);
      cw.push(res.cpuMs as number);
      if (res.phases) phases.push(res.phases as Record<string, number>);
      if (torch) {
        const t = await torch.send({ ...work, seed: r + 1 });
        tt.push(t.ms as number);
        ct.push(t.cpuMs as number);
      }
    }
    const ratio = (a: number[], b: number[]) => (torch ? (median(a) / median(b)).toFixed(1) + 'x' : '–');
    const cpu = torch ? `${fmt(median(cw))} / ${fmt(median(ct))} = ${ratio(cw, ct)}` : fmt(median(cw));
    lines.push(
      `| ${c.name} | ${fmt(median(tw))} (${spread(tw)}) | ${torch ? `${fmt(median(tt))} (${spread(tt)})` : '–'} | ${ratio(tw, tt)} | ${cpu} |`,
    );
    if (phases.length) {
      const keys = Object.keys(phases[0]);
      const p = keys.map((k) => `${k} ${fmt(median(phases.map((x) => x[k])))}`).join(', ');
      lines.push(`|  ↳ tfjs phases (median ms) | ${p} | | | |`);
    }
    process.stderr.write(`bench:cpu ${name}: ${c.name} done\n`);
  }
  await tfjs.quit();
  await torch?.quit();
  return lines;
}

/** Peak memory of the SmolLM2-shape learning step, each side in a fresh process on its own. */
async function memory(py: string | null): Promise<string[]> {
  const files = modelFiles('smollm2');
  const work = { op: 'work', work: SMOLLM2_CASES.find((c) => c.work.kind === 'learn')!.work };
  const measure = async (w: Worker) => {
    await w.send({ op: 'load', config: files.config, weights: files.weights, rank: RANK });
    await w.send(work);
    await w.send(work);
    const m = await w.send({ op: 'memory' });
    await w.quit();
    return m;
  };
  const a = await measure(tfjsWorker());
  const other = otherWorker(py);
  const b = other ? await measure(other) : null;
  const mb = (x: unknown) => `${((x as number) / 2 ** 20).toFixed(0)} MiB`;
  return [
    '### Peak memory, SmolLM2-135M shape: load + two learning steps 1 x (32 + 32), LoRA r16 everywhere',
    '',
    `| | peak RSS | note |`,
    '|---|---|---|',
    `| tfjs ${BACKEND} | ${mb(a.peakRssBytes)} | wasm heap ${a.wasmHeapBytes ? mb(a.wasmHeapBytes) : '–'} (grows, never shrinks) |`,
    b
      ? `| ${OTHER} | ${mb(b.peakRssBytes)} | ${b.wasmHeapBytes ? `wasm heap ${mb(b.wasmHeapBytes)}` : ''} |`
      : '| PyTorch | – | not installed |',
    b ? `| ratio | ${((a.peakRssBytes as number) / (b.peakRssBytes as number)).toFixed(2)}x | |` : '',
  ];
}

const py = torchPython();
if (!py) process.stderr.write('bench:cpu: no python3 imports torch (apt-get install python3-torch); tfjs side only\n');
const out = [
  `bench:cpu — ${new Date().toISOString().slice(0, 16)}Z, ${REPS} alternating repeats after ${WARMUP === 1 ? 'one warm-up' : `${WARMUP} warm-ups`} each`,
  '',
];
for (const m of MODELS) out.push(...(await benchModel(m, py)), '');
if (MODELS.includes('smollm2') && ROWS.includes('learn')) out.push(...(await memory(py)));
console.log(out.join('\n'));
