// AdamW on the GPU over one flat parameter buffer: the global grad norm (two-pass tree reduction),
// clipping to a max norm, the skip of the whole update on a non-finite norm, and the
// bias-corrected update with decoupled weight decay, in three dispatches of one compute pass.
// Per step the host writes one uniform slot and reads back 12 bytes (norm, clip coefficient,
// skipped): the step count advances only when the GPU says the update was taken. Semantics are
// src/rl/optim.ts's (AdamW + clipByGlobalNorm + the skip in learnStep), which it is tested against.
// All buffers are made in the constructor; a step creates none.
import partialWgsl from '../../../shaders/adamw/plan_grad_norm_partial.wgsl?raw';
import finishWgsl from '../../../shaders/adamw/plan_grad_norm_finish.wgsl?raw';
import adamwWgsl from '../../../shaders/adamw/plan.wgsl?raw';
import treeSumWgsl from '../../../shaders/adamw/plan_tree_sum.wgsl?raw';
import type { PlanKernel } from './kernel';
import { GpuPlan } from './plan';

const WG = 256;
/** Workgroups of the norm's first pass: at most WG, so one workgroup sums their partials. */
const MAX_PARTS = WG;
/**
 * Fewest squares each thread of the first pass sums: a LoRA of 100k parameters needs a dozen
 * workgroups, not 256 (each pays a tree of barriers, slow on CPU adapters); millions fill all 256.
 */
const PER_THREAD = 32;
/** Largest readback of a state export at a time (the staging buffer is made once, this size). */
const STAGING_BYTES = 4 * 2 ** 20;
const F32 = 4;

const HYPER_STRUCT = `const WG : u32 = ${WG}u;
struct Hyper {
  n : u32, parts : u32, wx : u32, forceSkip : u32,
  b1 : f32, omb1 : f32, b2 : f32, omb2 : f32,
  eps : f32, decay : f32, stepSize : f32, bc2 : f32,
  maxNorm : f32, pad0 : f32, pad1 : f32, pad2 : f32,
}`;

/** A kernel of the step: the per-step uniform H first, then flat f32 buffers. */
function kernel(key: string, body: string, buffers: [string, 'read' | 'rw'][]): PlanKernel {
  return {
    key: `adamw/${key}`,
    bindings: [
      { name: 'H', kind: 'dyn', type: 'Hyper' },
      ...buffers.map(([name, kind]) => ({ name, kind, type: 'array<f32>' })),
    ],
    prelude: HYPER_STRUCT,
    body,
  };
}

const KERNELS = {
  partial: kernel('norm-partial', `${treeSumWgsl}\n${partialWgsl}`, [
    ['grads', 'read'],
    ['partials', 'rw'],
  ]),
  finish: kernel('norm-finish', `${treeSumWgsl}\n${finishWgsl}`, [
    ['partials', 'read'],
    ['stats', 'rw'],
  ]),
  update: kernel('update', adamwWgsl, [
    ['stats', 'read'],
    ['grads', 'read'],
    ['params', 'rw'],
    ['m', 'rw'],
    ['v', 'rw'],
  ]),
};

export interface AdamWHyper {
  lr: number;
  beta1?: number;
  beta2?: number;
  eps?: number;
  weightDecay?: number;
}

/** One named tensor of the flat buffer: elements [offset, offset + size). */
export interface FlatSegment {
  name: string;
  shape: number[];
  offset: number;
  size: number;
}

/** Lays named tensors end to end, in the order given (the order the gradients arrive in). */
export function flatLayout(tensors: { name: string; shape: readonly number[] }[]): {
  segments: FlatSegment[];
  total: number;
} {
  const seen = new Set<string>();
  let offset = 0;
  const segments = tensors.map(({ name, shape }) => {
    if (seen.has(name)) throw new Error(`flat layout: tensor "${name}" is listed twice`);
    seen.add(name);
    const size = shape.reduce((a, b) => a * b, 1);
    const s = { name, shape: shape.slice(), offset, size };
    offset += size;
    return s;
  });
  return { segments, total: offset };
}

/** Per step: what came back from the GPU. */
export interface AdamWStepResult {
  /** Global L2 norm of the gradients before clipping (NaN / Infinity when they are not finite). */
  norm: number;
  /** True when nothing changed (non-finite norm, or skip asked for). */
  skipped: boolean;
}

/** Same shape as src/rl/optim.ts's AdamWState, so checkpoints read and write either. */
export interface FlatAdamWState {
  step: number;
  moments: Record<string, { shape: number[]; m: Float32Array; v: Float32Array }>;
}

export class AdamWPlan {
  readonly config: Required<AdamWHyper>;
  readonly segments: FlatSegment[];
  readonly n: number;
  /** Flat f32 buffers, [n] each: the parameters, the gradients and the two moments. */
  readonly params: GPUBuffer;
  readonly grads: GPUBuffer;
  readonly m: GPUBuffer;
  readonly v: GPUBuffer;
  private readonly plan: GpuPlan;
  private readonly stats: GPUBuffer;
  private readonly statsRead: GPUBuffer;
  private readonly staging: GPUBuffer;
  private readonly parts: number;
  private readonly wx: number;
  private readonly hyper = new ArrayBuffer(64);
  private t = 0;
  private busy = false;

  /**
   * `grads`: a flat f32 gradient buffer another plan writes (the planned backward's, in the same
   * tensor order), read in place instead of copied into one of ours.
   */
  constructor(
    readonly device: GPUDevice,
    tensors: { name: string; shape: readonly number[] }[],
    config: AdamWHyper,
    opts: { grads?: GPUBuffer } = {},
  ) {
    this.config = { beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0.01, ...config };
    const { segments, total } = flatLayout(tensors);
    if (total === 0) throw new Error('AdamWPlan: no parameters');
    this.segments = segments;
    this.n = total;
    const bytes = total * F32;
    const bind = device.limits.maxStorageBufferBindingSize;
    if (bytes > bind)
      throw new Error(
        `AdamWPlan: ${total} parameters are ${bytes} bytes, over this device's maxStorageBufferBindingSize of ${bind}`,
      );
    const groups = Math.ceil(total / WG);
    this.wx = Math.min(groups, device.limits.maxComputeWorkgroupsPerDimension);
    this.parts = Math.min(MAX_PARTS, Math.ceil(total / (WG * PER_THREAD)));

    const plan = (this.plan = new GpuPlan(device, 1, 'adamw'));
    this.params = plan.buffer('params', bytes);
    if (opts.grads && (opts.grads.size < bytes || !(opts.grads.usage & GPUBufferUsage.STORAGE))) {
      throw new Error(
        `AdamWPlan: the gradient buffer given has ${opts.grads.size} bytes${opts.grads.usage & GPUBufferUsage.STORAGE ? '' : ' and no STORAGE usage'}, ${total} parameters need ${bytes}`,
      );
    }
    this.grads = opts.grads ?? plan.buffer('grads', bytes);
    this.m = plan.buffer('m', bytes);
    this.v = plan.buffer('v', bytes);
    const partials = plan.buffer('partials', MAX_PARTS * F32);
    this.stats = plan.buffer('stats', 4 * F32);
    this.statsRead = plan.buffer('stats readback', 4 * F32, GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST);
    this.staging = plan.buffer(
      'state readback',
      Math.min(bytes, STAGING_BYTES),
      GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
    );
    plan.add('step', KERNELS.partial, ['dyn', { buffer: this.grads }, { buffer: partials }], [this.parts, 1, 1]);
    plan.add('step', KERNELS.finish, ['dyn', { buffer: partials }, { buffer: this.stats }], [1, 1, 1]);
    plan.add(
      'step',
      KERNELS.update,
      [
        'dyn',
        { buffer: this.stats },
        { buffer: this.grads },
        { buffer: this.params },
        { buffer: this.m },
        { buffer: this.v },
      ],
      [this.wx, Math.ceil(groups / this.wx), 1],
    );
    plan.finalize();
  }

  /** Optimiser steps taken (skipped steps do not count). */
  get step(): number {
    return this.t;
  }

  /** Dispatches per step. */
  get dispatches(): number {
    return this.plan.count('step');
  }

  /** Bytes of every buffer the optimiser owns. */
  get bytes(): number {
    return this.plan.bytes;
  }

  /**
   * Writes this step's uniform and records the three dispatches and the stats copy into
   * `encoder`; submit it, then `finish()`. Callers that gather gradients or scatter parameters
   * with copies record those around this, in the same encoder.
   */
  encode(encoder: GPUCommandEncoder, lr = this.config.lr, maxNorm = Infinity, forceSkip = false): void {
    if (this.busy) throw new Error('AdamWPlan: a step is still being read back');
    if (!Number.isFinite(lr)) throw new Error(`AdamWPlan: lr must be finite, got ${lr}`);
    const { beta1: b1, beta2: b2, eps, weightDecay: wd } = this.config;
    const t = this.t + 1; // the step this update would be: counted in finish() only if the GPU took it
    const u = new Uint32Array(this.hyper);
    const f = new Float32Array(this.hyper);
    u[0] = this.n;
    u[1] = this.parts;
    u[2] = this.wx;
    u[3] = forceSkip ? 1 : 0;
    f[4] = b1;
    f[5] = 1 - b1;
    f[6] = b2;
    f[7] = 1 - b2;
    f[8] = eps;
    f[9] = 1 - lr * wd;
    f[10] = lr / (1 - b1 ** t);
    f[11] = 1 - b2 ** t;
    f[12] = maxNorm;
    this.device.queue.writeBuffer(this.plan.dyn, 0, this.hyper);
    const pass = encoder.beginComputePass({ label: 'adamw' });
    this.plan.encode(pass, 'step', 0);
    pass.end();
    encoder.copyBufferToBuffer(this.stats, 0, this.statsRead, 0, 4 * F32);
    this.busy = true;
  }

  /** Reads back the step's norm and skip flag (after the encoder of `encode` was submitted). */
  async finish(): Promise<AdamWStepResult> {
    if (!this.busy) throw new Error('AdamWPlan: finish() without encode()');
    try {
      await this.statsRead.mapAsync(GPUMapMode.READ);
      const s = new Float32Array(this.statsRead.getMappedRange().slice(0));
      this.statsRead.unmap();
      const skipped = s[2] !== 0;
      if (!skipped) this.t += 1;
      return { norm: s[0], skipped };
    } finally {
      this.busy = false;
    }
  }

  /** One step on the gradients already in `grads`. */
  async stepOnce(lr = this.config.lr, maxNorm = Infinity, forceSkip = false): Promise<AdamWStepResult> {
    const encoder = this.device.createCommandEncoder({ label: 'adamw' });
    this.encode(encoder, lr, maxNorm, forceSkip);
    this.device.queue.submit([encoder.finish()]);
    return this.finish();
  }

  /** Copies a flat f32 buffer out to the host, in staging-sized pieces. */
  async read(which: 'params' | 'grads' | 'm' | 'v'): Promise<Float32Array> {
    const src = this[which];
    const out = new Float32Array(this.n);
    const chunk = this.staging.size / F32;
    for (let at = 0; at < this.n; at += chunk) {
      const len = Math.min(chunk, this.n - at);
      const encoder = this.device.createCommandEncoder({ label: 'adamw read' });
      encoder.copyBufferToBuffer(src, at * F32, this.staging, 0, len * F32);
      this.device.queue.submit([encoder.finish()]);
      await this.staging.mapAsync(GPUMapMode.READ, 0, len * F32);
      out.set(new Float32Array(this.staging.getMappedRange(0, len * F32)), at);
      this.staging.unmap();
    }
    return out;
  }

  write(which: 'params' | 'grads' | 'm' | 'v', data: Float32Array): void {
    if (data.length !== this.n) throw new Error(`AdamWPlan: ${which} needs ${this.n} values, got ${data.length}`);
    this.device.queue.writeBuffer(this[which], 0, data);
  }

  /** Step count and both moments per tensor name (the tfjs optimiser's checkpoint format). */
  async exportState(): Promise<FlatAdamWState> {
    const step = this.t;
    const m = await this.read('m');
    const v = await this.read('v');
    const moments: FlatAdamWState['moments'] = {};
    for (const s of this.segments)
      moments[s.name] = {
        shape: s.shape.slice(),
        m: m.slice(s.offset, s.offset + s.size),
        v: v.slice(s.offset, s.offset + s.size),
      };
    return { step, moments };
  }

  /**
   * Replaces step count and moments. Every entry is checked before anything is written; tensors
   * the state does not name start from zero moments (the tfjs optimiser makes them lazily too).
   */
  importState(state: FlatAdamWState): void {
    if (!Number.isSafeInteger(state.step) || state.step < 0)
      throw new Error(`AdamWPlan: step must be a non-negative integer, got ${state.step}`);
    const byName = new Map(this.segments.map((s) => [s.name, s]));
    for (const [name, { shape, m, v }] of Object.entries(state.moments)) {
      const s = byName.get(name);
      if (!s) throw new Error(`AdamWPlan: the state has moments for "${name}", which this optimiser does not hold`);
      if (shape.length !== s.shape.length || shape.some((d, i) => d !== s.shape[i]))
        throw new Error(`AdamWPlan: moments of "${name}" have shape [${shape}], the tensor is [${s.shape}]`);
      if (m.length !== s.size || v.length !== s.size)
        throw new Error(
          `AdamWPlan: moments of "${name}" hold ${m.length} and ${v.length} values, shape [${shape}] needs ${s.size}`,
        );
    }
    const m = new Float32Array(this.n);
    const v = new Float32Array(this.n);
    for (const s of this.segments) {
      const e = state.moments[s.name];
      if (!e) continue;
      m.set(e.m, s.offset);
      v.set(e.v, s.offset);
    }
    this.write('m', m);
    this.write('v', v);
    this.t = state.step;
  }

  dispose(): void {
    this.plan.dispose();
  }
}
