// `npm run bench`: every custom kernel and whole prefill/decode beside the obvious way with stock
// tfjs ops, as tables of medians and ratios.
//   node part:    model throughput in Node on the tfjs wasm backend (cpu if wasm fails)
//   browser part: kernels and model throughput in Chromium on WebGPU (SwiftShader without a GPU)
// Flags: --learn (only the planned-vs-tfjs learning step in the browser, then the whole GRPO step on
//        each path; --no-step leaves that out; --learn-shape PxGxN+T, default 8x8x64+64), --only node|browser, --quick (fewer reps, skip the 135M model in the browser),
//        --full (also the synthetic SmolLM2-135M model in the browser, slow on SwiftShader).
import { resolve } from 'node:path';
import { existsSync } from 'node:fs';
import * as tf from '@tensorflow/tfjs';
import { preview } from 'vite';
import { loadModel } from '../../src/model/load';
import { SMOLLM2_135M_CONFIG, syntheticModel } from './synthetic';
import { measureThroughput, type ThroughputCase, type ThroughputResult } from './throughput';
import type { HarnessApi, KernelBenchRow } from '../harness/harnessApi';
import { launchChromium } from '../browser/chromium';
import { folderSource } from '../../src/cli/fs-source';
import { serveFolder } from '../servers/staticServer';
import { formatTable } from './table';
import { kernelTable } from './kernelTable';
import {
  LEARN_BENCH_CASE,
  LEARN_BENCH_HEADER,
  learnBenchRows,
  learnBenchTitle,
  parseLearnCase,
  STEP_BENCH_HEADER,
  stepBenchRows,
  stepBenchTitle,
} from './learnBench';
import { ROOFLINE_HEADER, rooflineRows, type Roofline } from './roofline';
import { flagValue } from './benchReport';
import { decodeBenchRows, DECODE_BENCH_HEADER, rolloutBenchRows, ROLLOUT_BENCH_HEADER } from './decodeBench';

const args = process.argv.slice(2);
const only = args.includes('--only') ? args[args.indexOf('--only') + 1] : null;
const quick = args.includes('--quick');
const full = args.includes('--full');
// --decode: only the planned-vs-tfjs decode table, in the browser.
const decodeOnly = args.includes('--decode');
/** With --decode: only the whole-rollout table (tfjs / planned after a tfjs prefill / planned throughout). */
const rolloutOnly = args.includes('--rollout');
// --learn: only the planned-vs-tfjs learning-step table, in the browser.
const learnOnly = args.includes('--learn');
const learnShape = flagValue(args, '--learn-shape');
const FIXTURE = resolve('dev', 'fixtures', 'tiny-llama-f32');

const THROUGHPUT_HEADER = [
  'model',
  'batch',
  'prompt',
  'prefill tok/s',
  'decode tok/s (KV cache)',
  'decode tok/s (no cache)',
  'ratio',
];
const throughputRow = (name: string, r: ThroughputResult) => [
  name,
  r.batch,
  r.promptLen,
  r.prefillTokPerS,
  r.decodeTokPerS,
  r.noCacheTokPerS,
  `${(r.decodeTokPerS / r.noCacheTokPerS).toFixed(2)}x`,
];

async function nodeBench(): Promise<void> {
  try {
    await import('@tensorflow/tfjs-backend-wasm');
    if (!(await tf.setBackend('wasm'))) throw new Error('setBackend(wasm) failed');
  } catch {
    await tf.setBackend('cpu');
  }
  await tf.ready();
  console.log(`\n== Node, tfjs ${tf.getBackend()} backend: model throughput (medians)\n`);
  const rows: (string | number)[][] = [];
  const reps = quick ? 1 : 3;
  if (existsSync(FIXTURE)) {
    const model = await loadModel(folderSource(FIXTURE));
    for (const batch of [1, 8])
      rows.push(
        throughputRow(
          'tiny-llama-f32',
          await measureThroughput(model, { batch, promptLen: 12, decodeSteps: 16, reps: 5 }),
        ),
      );
  }
  const smol = await syntheticModel(SMOLLM2_135M_CONFIG);
  for (const batch of [1, 8]) {
    const c: ThroughputCase = { batch, promptLen: 8, decodeSteps: quick ? 2 : 4, reps };
    rows.push(throughputRow('SmolLM2-135M shape', await measureThroughput(smol, c)));
  }
  console.log(formatTable(THROUGHPUT_HEADER, rows));
}

async function browserBench(): Promise<void> {
  const outDir = process.env.SPARRING_DIST ?? 'dist';
  if (!existsSync(`${outDir}/index.html`))
    throw new Error(`${outDir}/ is missing: run \`npm run build:harness\` first (npm run bench does)`);
  const server = await preview({
    build: { outDir },
    preview: { host: '127.0.0.1', port: 4180, strictPort: false },
    logLevel: 'warn',
  });
  const fixtures = await serveFolder(resolve(FIXTURE, '..'));
  const browser = await launchChromium();
  try {
    const page = await browser.newPage();
    // The harness page: the lab on the harness worker, whose benchmarks the lab's own worker lacks.
    // WebGPU forced: on a software adapter (SwiftShader, headless) the lab's own choice is wasm.
    await page.goto(
      server.resolvedUrls!.local[0].replace('127.0.0.1', 'localhost') + 'dev/harness/index.html?backend=webgpu',
    );
    await page.waitForSelector('[data-testid="device-badge"][data-backend]:not([data-backend=""])', {
      timeout: 90_000,
    });
    type Api = { sparring: { engine: HarnessApi } };
    const status = await page.evaluate(() => (window as unknown as Api).sparring.engine.status());
    const adapter = status.probe.available ? `${status.probe.vendor} ${status.probe.architecture}`.trim() : 'none';
    console.log(`\n== Chromium, tfjs ${status.backend.backend} backend (adapter: ${adapter})`);
    const reps = quick ? 3 : 7;
    const appUrl = server.resolvedUrls!.local[0].replace('127.0.0.1', 'localhost');
    if (learnOnly) {
      await learnTable(page, status, appUrl);
      return;
    }
    if (!decodeOnly) await kernelAndThroughputTables(page, status, reps, fixtures.url);
    await decodeTable(page, status, appUrl);
  } finally {
    await browser.close();
    await server.close();
    await fixtures.close();
  }
}

type Api = { sparring: { engine: HarnessApi } };
type Page = Awaited<ReturnType<Awaited<ReturnType<typeof launchChromium>>['newPage']>>;
type Status = Awaited<ReturnType<HarnessApi['status']>>;

async function kernelAndThroughputTables(page: Page, status: Status, reps: number, fixturesUrl: string): Promise<void> {
  {
    console.log('\n== kernels (medians)\n');
    const kernels = await page.evaluate((n) => (window as unknown as Api).sparring.engine.benchKernels(n), reps);
    console.log(kernelTable(kernels));
    console.log(
      '\nstock = the same work with stock tfjs ops (sampling: read logits back, sample on the CPU); GPU ms from',
    );
    console.log(
      'timestamp queries where the adapter has them; % roofline = achieved / the measured stream or matmul row.',
    );

    console.log(`\n== Chromium, tfjs ${status.backend.backend} backend: model throughput (medians)\n`);
    const rows: (string | number)[][] = [];
    if (existsSync(FIXTURE)) {
      const baseUrl = `${fixturesUrl}tiny-llama-f32/`;
      await page.evaluate(
        (u) => (window as unknown as Api).sparring.engine.loadModel('fixture', { kind: 'url', baseUrl: u }),
        baseUrl,
      );
      for (const batch of [1, 8]) {
        const c: ThroughputCase = { batch, promptLen: 12, decodeSteps: 16, reps: 5 };
        rows.push(
          throughputRow(
            'tiny-llama-f32',
            await page.evaluate(([cc]) => (window as unknown as Api).sparring.engine.benchModel('fixture', cc), [
              c,
            ] as const),
          ),
        );
      }
    }
    if (full) {
      await page.evaluate(() => (window as unknown as Api).sparring.engine.loadSyntheticModel('smol', 'smollm2-135m'));
      for (const batch of [1, 8]) {
        const c: ThroughputCase = { batch, promptLen: 8, decodeSteps: 4, reps: 3 };
        rows.push(
          throughputRow(
            'SmolLM2-135M shape',
            await page.evaluate(([cc]) => (window as unknown as Api).sparring.engine.benchModel('smol', cc), [
              c,
            ] as const),
          ),
        );
      }
    }
    console.log(formatTable(THROUGHPUT_HEADER, rows));
    if (existsSync(FIXTURE)) {
      console.log(
        `\n== Chromium, tfjs ${status.backend.backend} backend: whole steps on tiny-llama-f32, custom kernels on vs off (medians)\n`,
      );
      const steps = await page.evaluate(
        (n) => (window as unknown as Api).sparring.engine.benchWholeSteps('fixture', n),
        quick ? 2 : 5,
      );
      console.log(
        formatTable(
          ['step', 'shape', 'kernels ms', 'stock ms', 'speed-up'],
          steps.map((k: KernelBenchRow) => [
            k.name,
            k.shape,
            k.oursMs,
            k.stockMs,
            `${(k.stockMs / k.oursMs).toFixed(2)}x`,
          ]),
        ),
      );
    }
    if (!full) console.log('(pass --full to also time the synthetic SmolLM2-135M model here; slow on SwiftShader)');
  }
}

async function decodeTable(page: Page, status: Status, appUrl: string): Promise<void> {
  const formats = [
    ['f32', undefined],
    ['int8', { kind: 'int8' as const }],
    ['int4', { kind: 'int4' as const, groupSize: 32 }],
    ['f16', { kind: 'f16' as const }],
  ] as const;
  const load = (fmt: (typeof formats)[number]) =>
    page.evaluate(
      ([u, q]) =>
        (window as unknown as Api).sparring.engine.loadModel(
          'defender',
          { kind: 'url', baseUrl: u },
          q ? { quantize: q } : {},
        ),
      [`${appUrl}models/defender/`, fmt[1]] as const,
    );
  const unload = () => page.evaluate(() => (window as unknown as Api).sparring.engine.unloadModel('defender'));
  if (!rolloutOnly) {
    const rf = await rooflineTable(page, status);
    console.log(
      `\n== Chromium, tfjs ${status.backend.backend} backend: decode, planned path vs tfjs op by op (same run; medians)\n`,
    );
    const decodeRows: (string | number)[][] = [];
    for (const fmt of formats) {
      await load(fmt);
      // batch 64 x 32 tokens is a sandbox rollout (the issue's Chromium target)
      for (const c of [
        { batch: 1, promptLen: 16, steps: 16, reps: quick ? 2 : 3 },
        { batch: 8, promptLen: 16, steps: 16, reps: quick ? 2 : 3 },
        { batch: 64, promptLen: 16, steps: 32, reps: quick ? 1 : 3 },
      ]) {
        const r = await page.evaluate(
          ([cc]) => (window as unknown as Api).sparring.engine.benchDecode('defender', cc),
          [c] as const,
        );
        decodeRows.push(...decodeBenchRows('sandbox defender', fmt[0], r, rf.streamGBps));
      }
      await unload();
    }
    console.log(formatTable(DECODE_BENCH_HEADER, decodeRows));
  }
  console.log(
    `\n== Chromium, tfjs ${status.backend.backend} backend: whole sandbox rollouts, 64 rows x (16 prompt + 16 new) tokens (medians)\n`,
  );
  const rows: (string | number)[][] = [];
  for (const fmt of formats) {
    await load(fmt);
    const c = { batch: 64, promptLen: 16, newTokens: 16, reps: quick ? 2 : 3 };
    rows.push(
      ...rolloutBenchRows(
        'sandbox defender',
        fmt[0],
        await page.evaluate(([cc]) => (window as unknown as Api).sparring.engine.benchRollout('defender', cc), [
          c,
        ] as const),
      ),
    );
    await unload();
  }
  console.log(formatTable(ROLLOUT_BENCH_HEADER, rows));
}

/** The adapter's matmul and stream roofline in this run (SwiftShader: a 512^3 product, 256^3 with --quick). */
async function rooflineTable(page: Page, status: Status): Promise<Roofline> {
  const rf = await page.evaluate(([n, r]) => (window as unknown as Api).sparring.engine.benchRoofline(n, r), [
    quick ? 256 : 512,
    3,
  ] as const);
  console.log(`\n== Chromium, tfjs ${status.backend.backend} backend: measured roofline (medians of 3)\n`);
  console.log(formatTable(ROOFLINE_HEADER, rooflineRows(rf)));
  return rf;
}

async function learnTable(page: Page, status: Status, appUrl: string): Promise<void> {
  const rf = await rooflineTable(page, status);
  const c = learnShape ? parseLearnCase(learnShape) : LEARN_BENCH_CASE;
  const rows: (string | number)[][] = [];
  const stepRows: (string | number)[][] = [];
  for (const [fmt, q] of [
    ['f32', undefined],
    ['int4', { kind: 'int4' as const, groupSize: 32 }],
  ] as const) {
    await page.evaluate(
      ([u, qq]) =>
        (window as unknown as Api).sparring.engine.loadModel(
          'defender',
          { kind: 'url', baseUrl: u },
          qq ? { quantize: qq } : {},
        ),
      [`${appUrl}models/defender/`, q] as const,
    );
    const r = await page.evaluate(
      ([cc, n]) => (window as unknown as Api).sparring.engine.benchLearn('defender', cc, n),
      [c, quick ? 1 : 3] as const,
    );
    for (const x of r)
      console.error(`  sandbox defender ${fmt} ${x.path}: ${x.ms.toFixed(0)} ms, ${x.dispatches} dispatches`);
    rows.push(...learnBenchRows('sandbox defender', fmt, r, rf.matmulGflops));
    if (!args.includes('--no-step')) {
      const st = await page.evaluate(
        ([cc, n]) => (window as unknown as Api).sparring.engine.benchGrpoStep('defender', cc, n),
        [c, quick ? 1 : 2] as const,
      );
      for (const x of st) console.error(`  step sandbox defender ${fmt} ${x.path}: ${x.totalMs.toFixed(0)} ms`);
      stepRows.push(...stepBenchRows('sandbox defender', fmt, st));
    }
    await page.evaluate(() => (window as unknown as Api).sparring.engine.unloadModel('defender'));
  }
  console.log(`\n${learnBenchTitle(`Chromium, tfjs ${status.backend.backend} backend`, c)}\n`);
  console.log(formatTable(LEARN_BENCH_HEADER, rows));
  console.log(
    `GFLOP/s: the step's matrix-product FLOPs (dev/bench/learnFlops.ts) / learn ms, against the matmul roofline above (${rf.matmulGflops.toPrecision(4)} GFLOP/s); peak MiB: buffers the step holds outside tfjs's pool + tfjs's in-use high-water mark.`,
  );
  if (stepRows.length > 0) {
    console.log(`\n${stepBenchTitle(`Chromium, tfjs ${status.backend.backend} backend`, c)}\n`);
    console.log(formatTable(STEP_BENCH_HEADER, stepRows));
  }
}

if (only !== 'browser' && !decodeOnly && !learnOnly) await nodeBench();
if (only !== 'node') await browserBench();
