// An AdamW update on the GPU for tfjs variables (the learning step's, issue 21): the gradients
// are gathered into the AdamWPlan's flat buffer by one command encoder with the parameters
// (copies, no dispatch), or read in place where they already are one flat buffer (the planned
// learning step's LoRA gradients); then its three dispatches (grad norm, clip / skip, AdamW) and
// copies of the new parameters into fresh tensors from tfjs's pool, which the variables then take.
// One readback: norm and skip. The moments stay in the flat buffers between steps (a
// PlannedMomentHolder the AdamW holds), so a checkpoint exports them and a tfjs update takes them
// back. The optimiser itself (its step count, its tfjs update) is src/rl/optim.ts's AdamW.
import * as tf from '@tensorflow/tfjs';
import { webgpuDevice } from '../webgpu/wgslProgram';
import { AdamWPlan, type AdamWHyper, type AdamWStepResult, type FlatAdamWState } from './adamwPlan';
import { emptyTensor, flushTfjs, tensorBuffer } from './tfjsInterop';

/** A flat f32 gradient buffer another plan wrote, and the tensors laid in it end to end from 0. */
export interface FlatGradBuffer {
  buffer: GPUBuffer;
  tensors: { name: string; shape: number[] }[];
}

/** Where an AdamW's moments live while the planned update owns them (src/rl/optim.ts MomentHolder). */
export interface PlannedMomentHolder {
  /** Both moments per variable name (read from the device). */
  exportMoments(): Promise<FlatAdamWState['moments']>;
  /** The moments as new tfjs tensors by name; the holder is spent after this. */
  takeBack(): Record<string, { m: tf.Tensor; v: tf.Tensor }>;
  dispose(): void;
}

/** What the planned update needs of an AdamW (src/rl/optim.ts's AdamW has it). */
export interface AdamWHost {
  readonly config: AdamWHyper;
  readonly step: number;
  readonly momentHolder: PlannedMomentHolder | null;
  /** Takes `holder` as the moments' keeper for `names`, returning their current tfjs moments. */
  handOver(holder: PlannedMomentHolder, names: ReadonlySet<string>): Map<string, { m: tf.Tensor; v: tf.Tensor }>;
  /** Counts a step the holder's update took. */
  countStep(): void;
}

const F32 = 4;

/** The flat GPU state of one AdamW for one set of variables (names and shapes, in gradient order). */
class PlannedMoments implements PlannedMomentHolder {
  constructor(
    readonly plan: AdamWPlan,
    readonly key: string,
  ) {}

  exportMoments(): Promise<FlatAdamWState['moments']> {
    return this.plan.exportState().then((s) => s.moments);
  }

  takeBack(): Record<string, { m: tf.Tensor; v: tf.Tensor }> {
    const out: Record<string, { m: tf.Tensor; v: tf.Tensor }> = {};
    const enc = this.plan.device.createCommandEncoder({ label: 'adamw moments to tfjs' });
    for (const s of this.plan.segments) {
      const m = emptyTensor(s.shape);
      const v = emptyTensor(s.shape);
      enc.copyBufferToBuffer(this.plan.m, s.offset * F32, m.buffer, 0, s.size * F32);
      enc.copyBufferToBuffer(this.plan.v, s.offset * F32, v.buffer, 0, s.size * F32);
      out[s.name] = { m: m.tensor, v: v.tensor };
    }
    flushTfjs();
    this.plan.device.queue.submit([enc.finish()]);
    return out;
  }

  dispose(): void {
    this.plan.dispose();
  }
}

const bufferIds = new WeakMap<GPUBuffer, number>();
let nextBufferId = 0;
const bufferId = (b: GPUBuffer) => bufferIds.get(b) ?? (bufferIds.set(b, ++nextBufferId), nextBufferId);
const layoutKey = (tensors: { name: string; shape: number[] }[], grads?: GPUBuffer) =>
  tensors.map((t) => `${t.name}[${t.shape}]`).join(';') + (grads ? `@${bufferId(grads)}` : '');

/**
 * The optimiser's planned state for these variables (reading `grads` in place when given): built
 * (seeded from its tfjs moments, or a previous layout's handed back through them) when missing or stale.
 */
function plannedFor(opt: AdamWHost, tensors: { name: string; shape: number[] }[], grads?: GPUBuffer): PlannedMoments {
  const key = layoutKey(tensors, grads);
  const held = opt.momentHolder;
  if (held instanceof PlannedMoments && held.key === key) return held;
  const device = webgpuDevice();
  const plan = new AdamWPlan(device, tensors, opt.config, { grads });
  const holder = new PlannedMoments(plan, key);
  // handOver first reclaims a stale holder's moments into tfjs tensors, then passes this layout's here.
  const moments = opt.handOver(holder, new Set(tensors.map((t) => t.name)));
  try {
    plan.importState({ step: opt.step, moments: {} });
    const enc = device.createCommandEncoder({ label: 'adamw moments from tfjs' });
    for (const s of plan.segments) {
      const mv = moments.get(s.name);
      if (!mv) continue;
      if (mv.m.size !== s.size)
        throw new Error(`AdamW: variable "${s.name}" changed shape from [${mv.m.shape}] to [${s.shape}]`);
      enc.copyBufferToBuffer(tensorBuffer(mv.m), 0, plan.m, s.offset * F32, s.size * F32);
      enc.copyBufferToBuffer(tensorBuffer(mv.v), 0, plan.v, s.offset * F32, s.size * F32);
    }
    flushTfjs();
    device.queue.submit([enc.finish()]);
  } finally {
    for (const { m, v } of moments.values()) tf.dispose([m, v]);
  }
  return holder;
}

/**
 * One clipped AdamW update of `vars` from `grads` on the GPU (learnStep's clipByGlobalNorm, skip
 * and applyGradients in one). `flat`: more gradients, already one flat buffer (the planned
 * learning step's LoRA gradients), laid first; read in place when `grads` is empty, else copied
 * in as one block. `skip`: take no step whatever the norm (a non-finite loss).
 * Returns the pre-clip global norm and whether the update was skipped.
 */
export async function plannedAdamWUpdate(
  opt: AdamWHost,
  vars: Record<string, tf.Variable>,
  grads: tf.NamedTensorMap,
  lr: number,
  maxNorm: number,
  skip = false,
  flat?: FlatGradBuffer,
): Promise<AdamWStepResult> {
  const names = Object.keys(grads);
  const tensors = [...(flat?.tensors ?? []).map((t) => t.name), ...names].map((name) => {
    const p = vars[name];
    if (!p) throw new Error(`AdamW: gradient for "${name}" has no variable`);
    if (p.dtype !== 'float32' || (name in grads && grads[name].dtype !== 'float32'))
      throw new Error(`AdamW: "${name}" is not float32`);
    return { name, shape: p.shape.slice() };
  });
  const inPlace = flat && names.length === 0 ? flat.buffer : undefined;
  const held = plannedFor(opt, tensors, inPlace);
  const { plan } = held;
  // Buffers first: a tensor whose values are still on the host is uploaded by tfjs's encoder,
  // which flushTfjs then submits ahead of ours.
  const src = plan.segments.map((s) => ({
    s,
    g: grads[s.name] ? tensorBuffer(grads[s.name]) : null,
    p: tensorBuffer(vars[s.name]),
  }));
  const outs = plan.segments.map((s) => emptyTensor(s.shape));
  flushTfjs();
  const enc = plan.device.createCommandEncoder({ label: 'adamw step' });
  const flatFloats = flat ? plan.segments.slice(0, flat.tensors.length).reduce((n, s) => n + s.size, 0) : 0;
  if (flat && !inPlace) enc.copyBufferToBuffer(flat.buffer, 0, plan.grads, 0, flatFloats * F32);
  for (const { s, g, p } of src) {
    if (g) enc.copyBufferToBuffer(g, 0, plan.grads, s.offset * F32, s.size * F32);
    enc.copyBufferToBuffer(p, 0, plan.params, s.offset * F32, s.size * F32);
  }
  plan.encode(enc, lr, maxNorm, skip);
  plan.segments.forEach((s, i) => enc.copyBufferToBuffer(plan.params, s.offset * F32, outs[i].buffer, 0, s.size * F32));
  plan.device.queue.submit([enc.finish()]);
  let r: AdamWStepResult;
  try {
    r = await plan.finish();
  } catch (e) {
    tf.dispose(outs.map((o) => o.tensor));
    throw e;
  }
  if (r.skipped) tf.dispose(outs.map((o) => o.tensor));
  else {
    plan.segments.forEach((s, i) => {
      vars[s.name].assign(outs[i].tensor);
      outs[i].tensor.dispose();
    });
    opt.countStep();
  }
  return r;
}
