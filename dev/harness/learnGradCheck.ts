// What the Chromium tests of the planned learning step ask of the worker (e2e/learnChromium.e2e.ts):
// the gradients learnStep computes on each path for a batch and trainer config the test states,
// captured at the optimiser (so every loss type, aggregation, KL term, entropy bonus and value
// head goes through learnStep's own code), the planned reference pass beside tfjs's and the GPU
// buffers made by a repeated step; and a short RL run on the planned paths.
import * as tf from '@tensorflow/tfjs';
import type { LlamaModel } from '../../src/model/llama';
import { attachLora, type LoraConfig, type LoraSet } from '../../src/model/lora';
import { mulberry32 } from '../../src/model/random';
import { rlStep, type RlLoopConfig } from '../../src/rl/loop';
import { AdamW } from '../../src/rl/optim';
import { plannedReferenceLogp, type LearnPath } from '../../src/rl/plannedLearn';
import { plannedMicroBatches } from '../../src/model/planned/learnStep';
import { referenceStats, ValueHead } from '../../src/rl/policy';
import { learnStep, type LearnBatch, type LearnMetrics, type TrainerConfig } from '../../src/rl/trainer';
import { fromRows } from '../../src/rl/types';
import { engineOptions, setEngineOptions } from '../../src/engine/index';

/** A scored batch as plain rows ([B][T] each; prompts ragged). */
export interface GradCheckBatch {
  prompts: number[][];
  responses: number[][];
  mask: number[][];
  oldLogp: number[][];
  advantages: number[][];
  refLogp?: number[][];
  lossMask?: number[][];
  regMask?: number[][];
  values?: number[][];
  returns?: number[][];
}

export interface GradCheckCase {
  label: string;
  lora: LoraConfig;
  batch: GradCheckBatch;
  /** learnStep's config; maxGradNorm is forced off (the gradient is captured before any clip). */
  trainer: TrainerConfig;
  /** Overrides of `trainer` on the planned path only (micro-batches against tfjs's one pass: the same gradient). */
  plannedTrainer?: TrainerConfig;
  /** A PPO value head (weights drawn), trained beside the adapters. */
  valueHead?: boolean;
  /** Also the GPU buffers created by the planned step and by a second identical one. */
  countBuffers?: boolean;
  /** Also the reference log-probs (adapters off) by the plan's reference pass and by tfjs. */
  reference?: boolean;
}

export interface NamedValues {
  /** The variable's name without the set's process-wide id (`model.layers.0.self_attn.q_proj.lora_A`). */
  name: string;
  values: number[];
}

export interface GradCheckPath {
  /** Micro-batches that ran on the planned pass (0: tfjs, also by a silent fallback). */
  plannedMicroBatches: number;
  metrics: LearnMetrics;
  /** Wall ms of the step. */
  ms: number;
  /** d loss / d variable, adapters (A then B, model order) then the value head. */
  grads: NamedValues[];
}

export interface GradCheckResult {
  label: string;
  tfjs: GradCheckPath;
  planned: GradCheckPath;
  /** The adapters' and head's values the gradients were taken at. */
  params: NamedValues[];
  /**
   * Labels of the GPU buffers created by the planned step (the first for this plan shape, which
   * builds the plan: labels `learn:...`) and by a second identical one (tfjs's own are unlabelled).
   */
  buffers?: { first: string[]; second: string[] };
  reference?: { planned: number[]; tfjs: number[] };
}

const shortName = (n: string) => n.replace(/^lora\d+\//, '').replace(/^value_head\d+/, 'value_head');

/** An AdamW that records the gradients learnStep hands it and leaves the variables as they are. */
class GradCapture extends AdamW {
  grads: tf.NamedTensorMap = {};
  override applyGradients(_vars: Record<string, tf.Variable>, grads: tf.NamedTensorMap): void {
    tf.dispose(Object.values(this.grads));
    this.grads = Object.fromEntries(Object.entries(grads).map(([n, g]) => [n, tf.keep(g.clone())]));
  }
  override dispose(): void {
    tf.dispose(Object.values(this.grads));
    super.dispose();
  }
}

/** Seeded adapters with B drawn too (a fresh B = 0 leaves dA = 0 and would hide a wrong dA). */
export function drawnAdapters(model: LlamaModel, cfg: LoraConfig): LoraSet {
  const lora = attachLora(model, cfg);
  const rand = mulberry32(11);
  for (const a of lora.adapters) {
    const b = tf.tensor2d(
      Float32Array.from({ length: a.B.size }, () => (rand() * 2 - 1) * 0.2),
      a.B.shape as [number, number],
    );
    a.B.assign(b);
    b.dispose();
  }
  return lora;
}

function drawnHead(model: LlamaModel): ValueHead {
  const H = model.config.hiddenSize;
  const head = new ValueHead(H);
  const rand = mulberry32(5);
  const w = tf.tensor2d(
    Float32Array.from({ length: H }, () => rand() * 2 - 1),
    [H, 1],
  );
  head.w.assign(w);
  w.dispose();
  return head;
}

function toLearnBatch(b: GradCheckBatch): LearnBatch {
  const m = (x?: number[][]) => (x ? fromRows(x) : undefined);
  return {
    prompts: b.prompts,
    responses: b.responses,
    mask: b.mask,
    oldLogp: fromRows(b.oldLogp),
    advantages: fromRows(b.advantages),
    refLogp: m(b.refLogp),
    lossMask: m(b.lossMask),
    regMask: m(b.regMask),
    values: m(b.values),
    returns: m(b.returns),
  };
}

export const readAll = async (vars: tf.Variable[]): Promise<NamedValues[]> =>
  Promise.all(vars.map(async (v) => ({ name: shortName(v.name), values: Array.from(await v.data()) })));

/** Runs fn with GPUDevice.createBuffer counted (labels kept); restored after, also on a throw. */
async function countBuffers<T>(fn: () => Promise<T>): Promise<{ result: T; labels: string[] }> {
  const dev = GPUDevice.prototype;
  const create = dev.createBuffer;
  const labels: string[] = [];
  dev.createBuffer = function (this: GPUDevice, d: GPUBufferDescriptor) {
    labels.push(d.label ?? '');
    return create.call(this, d);
  };
  try {
    return { result: await fn(), labels };
  } finally {
    dev.createBuffer = create;
  }
}

/** The learn and optimiser paths set for fn, put back after. */
async function withPaths<T>(learn: LearnPath, fn: () => Promise<T>): Promise<T> {
  const [l0, o0] = [engineOptions().learnPath, engineOptions().optimizerPath];
  setEngineOptions({ learnPath: learn });
  // tfjs's AdamW takes the update, so GradCapture sees the gradients (the planned AdamW has its own tests).
  setEngineOptions({ optimizerPath: 'tfjs' });
  try {
    return await fn();
  } finally {
    setEngineOptions({ learnPath: l0, optimizerPath: o0 });
  }
}

/** One case on one path: learnStep's gradients at the case's seeded adapters. */
async function onePath(
  model: LlamaModel,
  c: GradCheckCase,
  path: LearnPath,
  extra?: (lora: LoraSet, step: () => Promise<LearnMetrics>, firstBuffers: string[]) => Promise<void>,
): Promise<GradCheckPath & { params: NamedValues[] }> {
  const lora = drawnAdapters(model, c.lora);
  const head = c.valueHead ? drawnHead(model) : undefined;
  const optimizer = new GradCapture({ lr: 1e-3 });
  try {
    return await withPaths(path, async () => {
      const batch = toLearnBatch(c.batch);
      const config = { ...c.trainer, ...(path === 'planned' ? c.plannedTrainer : {}), maxGradNorm: 1e9 };
      const step = () => learnStep({ model, lora, optimizer, valueHead: head }, batch, config);
      const n0 = plannedMicroBatches();
      const t0 = performance.now();
      const { result: metrics, labels } = await countBuffers(step);
      const ms = performance.now() - t0;
      const plannedCount = plannedMicroBatches() - n0;
      const vars = [...lora.variables(), ...(head?.variables() ?? [])];
      const grads = await Promise.all(
        vars.map(async (v) => {
          const g = optimizer.grads[v.name];
          return { name: shortName(v.name), values: g ? Array.from(await g.data()) : [] };
        }),
      );
      const params = await readAll(vars);
      await extra?.(lora, step, labels);
      return { plannedMicroBatches: plannedCount, metrics, ms, grads, params };
    });
  } finally {
    optimizer.dispose();
    head?.dispose();
    lora.dispose();
  }
}

/** Each case on tfjs (the reference) and on the planned path, from the same adapters. */
export async function learnGradCheck(model: LlamaModel, cases: GradCheckCase[]): Promise<GradCheckResult[]> {
  const out: GradCheckResult[] = [];
  for (const c of cases) {
    const ref = await onePath(model, c, 'tfjs');
    const r: Partial<GradCheckResult> = {};
    const got = await onePath(model, c, 'planned', async (lora, step, first) => {
      if (c.countBuffers) r.buffers = { first, second: (await countBuffers(step)).labels };
      if (c.reference) {
        const opts = { temperature: c.trainer.temperature, padTokenId: c.trainer.padTokenId };
        const planned = await plannedReferenceLogp(model, lora, c.batch, opts);
        const s = referenceStats(model, lora, c.batch, opts);
        r.reference = { planned: planned ? Array.from(planned.data) : [], tfjs: Array.from(await s.logp.data()) };
        tf.dispose([s.logp, s.entropy]);
      }
    });
    const { params, ...planned } = got;
    const { params: _p, ...tfjs } = ref;
    out.push({ label: c.label, tfjs, planned, params, ...r });
  }
  return out;
}

export interface LearnRunCase {
  prompts: number[][];
  /** Reward 1 when the first sampled token is this id, else 0. */
  target: number;
  /** At most this many steps; the run stops once the mean reward is over 0.9. */
  steps: number;
  config: RlLoopConfig;
  /** A PPO critic (for advantage gae). */
  valueHead?: boolean;
  lr: number;
}

/** rlStep on the planned paths from fresh adapters: the mean reward per step and the planned micro-batches. */
export async function learnRunCheck(
  model: LlamaModel,
  c: LearnRunCase,
): Promise<{ curve: number[]; plannedMicroBatches: number }> {
  const lora = attachLora(model, { r: 4, alpha: 8, targets: ['q', 'k', 'v', 'o', 'gate', 'up', 'down'], seed: 7 });
  const valueHead = c.valueHead ? new ValueHead(model.config.hiddenSize) : undefined;
  const optimizer = new AdamW({ lr: c.lr, weightDecay: 0 });
  const [l0, o0] = [engineOptions().learnPath, engineOptions().optimizerPath];
  setEngineOptions({ learnPath: 'planned', optimizerPath: 'planned' });
  const n0 = plannedMicroBatches();
  try {
    const curve: number[] = [];
    for (let step = 0; step < c.steps && !(curve[curve.length - 1] > 0.9); step++) {
      const rep = await rlStep(
        {
          learner: { model, lora, optimizer, valueHead },
          rewardFn: ({ response }) => (response[0] === c.target ? 1 : 0),
        },
        c.prompts,
        step,
        c.config,
      );
      curve.push(rep.metrics['reward/mean']);
    }
    return { curve, plannedMicroBatches: plannedMicroBatches() - n0 };
  } finally {
    setEngineOptions({ learnPath: l0, optimizerPath: o0 });
    optimizer.dispose();
    valueHead?.dispose();
    lora.dispose();
  }
}
