// The learning step's optimiser update on the GPU (issue 21, step 3). After the planned learning
// step the LoRA gradients are already one flat buffer in the AdamW layout (the learn plans'): the
// planned AdamW reads it in place. Gradients that are separate tfjs tensors (the tfjs learn path,
// a value head) are gathered into the planned AdamW's own flat buffer instead, by one command
// encoder with the parameters (copies, no dispatch); then its three dispatches (grad norm, clip /
// skip, AdamW) and copies of the new parameters into fresh tensors from tfjs's pool, which the
// variables then take. One readback: norm and skip.
// The moments stay in the flat buffers between steps (the AdamW object's MomentHolder), so a
// checkpoint exports them and a tfjs update (the switch flipped back) takes them back.
// tfjs's AdamW (src/rl/optim.ts) stays the reference and the fallback off WebGPU.
import * as tf from '@tensorflow/tfjs';
import { webgpuDevice, engineOptions, AdamWPlan, emptyTensor, flushTfjs, tensorBuffer, type ExecutionPath, type AdamWStepResult } from '../engine/index.ts';
import type { AdamW, AdamWState, MomentHolder } from './optim';
import type { FlatGrads } from '../model/planned/learnStep';

/** Which path updates the parameters on WebGPU (EngineOptions.optimizerPath). */
export type OptimizerPath = ExecutionPath;

/** Whether learnStep's next update runs on the planned GPU optimiser. */
export function plannedOptimizerActive(): boolean {
  return engineOptions().optimizerPath === 'planned' && tf.getBackend() === 'webgpu';
}

const F32 = 4;

/** The flat GPU state of one AdamW for one set of variables (names and shapes, in gradient order). */
class PlannedMoments implements MomentHolder {
  constructor(
    readonly plan: AdamWPlan,
    readonly key: string,
  ) {}

  exportMoments(): Promise<AdamWState['moments']> {
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
const layoutKey = (tensors: { name: string; shape: number[] }[], grads?: GPUBuffer) => tensors.map((t) => `${t.name}[${t.shape}]`).join(';') + (grads ? `@${bufferId(grads)}` : '');

/**
 * The optimiser's planned state for these variables (reading `grads` in place when given): built
 * (seeded from its tfjs moments, or a previous layout's handed back through them) when missing or stale.
 */
function plannedFor(opt: AdamW, tensors: { name: string; shape: number[] }[], grads?: GPUBuffer): PlannedMoments {
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
      if (mv.m.size !== s.size) throw new Error(`AdamW: variable "${s.name}" changed shape from [${mv.m.shape}] to [${s.shape}]`);
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
export async function plannedUpdate(opt: AdamW, vars: Record<string, tf.Variable>, grads: tf.NamedTensorMap, lr: number, maxNorm: number, skip = false, flat?: FlatGrads): Promise<AdamWStepResult> {
  const names = Object.keys(grads);
  const tensors = [...(flat?.tensors ?? []).map((t) => t.name), ...names].map((name) => {
    const p = vars[name];
    if (!p) throw new Error(`AdamW: gradient for "${name}" has no variable`);
    if (p.dtype !== 'float32' || (name in grads && grads[name].dtype !== 'float32')) throw new Error(`AdamW: "${name}" is not float32`);
    return { name, shape: p.shape.slice() };
  });
  const inPlace = flat && names.length === 0 ? flat.buffer : undefined;
  const held = plannedFor(opt, tensors, inPlace);
  const { plan } = held;
  // Buffers first: a tensor whose values are still on the host is uploaded by tfjs's encoder,
  // which flushTfjs then submits ahead of ours.
  const src = plan.segments.map((s) => ({ s, g: grads[s.name] ? tensorBuffer(grads[s.name]) : null, p: tensorBuffer(vars[s.name]) }));
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
