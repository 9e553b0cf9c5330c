// Prints what the decode and learning planners build for the sandbox defender and each family
// fixture, over the layouts they take (GEMV split / thread / tiled GEMM, split-K attention, LoRA
// on some or all projections, kept / recomputed activations, dropout, each weight format): per
// plan its dispatch counts, its buffer bytes, and one hash of every buffer (name, bytes, usage),
// every dispatch (phase, kernel key and source, bindings, uniform bytes, workgroups, FLOPs) and
// every upload the constructor makes; also learnMemory's buffer list for the same shapes. A
// planner refactor that changes none of these prints the same text before and after (diff them).
//   tsx --import ./src/cli/node/wgsl-register.mjs dev/tools/planFingerprint.ts > after.txt
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { startDawn } from '../../src/cli/node/dawn';
import { webgpuDevice } from '../../src/engine/webgpu/wgslProgram';
import { GpuPlan, type BindingValue } from '../../src/engine/plan/plan';
import { kernelSource, type PlanKernel } from '../../src/engine/plan/kernel';
import { DecodePlan, type DecodeModelRef, type DecodePlanOptions } from '../../src/engine/plan/decodePlan';
import { LearnPlan, type LearnPlanOptions } from '../../src/engine/plan/learnPlan';
import { learnStepBuffers } from '../../src/contract/learnMemory';
import { parseModelConfig } from '../../src/contract/modelConfig';
import { parseSafetensors } from '../../src/model/safetensors';
import { disposeLlama, loadLlama, type LoadOptions } from '../../src/model/llama';
import { modelRef } from '../../src/model/planned/decode';
import { f16Quantizer, int4Quantizer, int8Quantizer } from '../../src/model/quant';

let log: string[] = [];
const labelOf = (b: GPUBuffer) => b.label || `#${b.size}`;
const hex = (u: ArrayBufferLike | ArrayBufferView) =>
  createHash('sha256')
    .update(ArrayBuffer.isView(u) ? new Uint8Array(u.buffer, u.byteOffset, u.byteLength) : new Uint8Array(u))
    .digest('hex')
    .slice(0, 16);
const valueOf = (v: BindingValue) =>
  v === 'dyn'
    ? 'dyn'
    : 'uniform' in v
      ? `u:${hex(v.uniform)}`
      : `${labelOf(v.buffer)}@${v.offset ?? 0}+${v.size ?? '*'}`;

const proto = GpuPlan.prototype as unknown as Record<string, (...a: unknown[]) => unknown>;
const add = proto.add;
proto.add = function (this: GpuPlan, ...a: unknown[]) {
  const [phase, kernel, values, wg, flops] = a as [string, PlanKernel, BindingValue[], number[], number?];
  log.push(
    `add ${phase} ${kernel.key} ${hex(new TextEncoder().encode(kernelSource(kernel)))} [${values.map(valueOf)}] [${wg}] ${flops ?? 0}`,
  );
  return add.apply(this, a);
};
const buffer = proto.buffer;
proto.buffer = function (this: GpuPlan, ...a: unknown[]) {
  log.push(`buffer ${String(a[0])} ${String(a[1])} ${String(a[2] ?? 'storage')}`);
  return buffer.apply(this, a);
};

await startDawn({ vulkan: 'swiftshader' });
const device = webgpuDevice();
const queue = device.queue;
const write = queue.writeBuffer.bind(queue);
queue.writeBuffer = ((b: GPUBuffer, off: number, data: BufferSource, dataOff?: number, size?: number) => {
  log.push(`write ${labelOf(b)}@${off} ${hex(data as ArrayBufferView)} ${dataOff ?? 0} ${size ?? '*'}`);
  return write(b, off, data, dataOff, size);
}) as GPUQueue['writeBuffer'];
const encoder = device.createCommandEncoder.bind(device);
device.createCommandEncoder = ((d?: GPUCommandEncoderDescriptor) => {
  const e = encoder(d);
  const copy = e.copyBufferToBuffer.bind(e) as (...a: unknown[]) => void;
  (e as unknown as { copyBufferToBuffer: (...a: unknown[]) => void }).copyBufferToBuffer = (...a: unknown[]) => {
    const [src, so, dst, doff, n] = a as [GPUBuffer, number, GPUBuffer, number, number];
    log.push(`copy ${labelOf(src)}@${so} -> ${labelOf(dst)}@${doff} ${n}`);
    copy(...a);
  };
  return e;
}) as GPUDevice['createCommandEncoder'];

const load = (dir: string, opts: LoadOptions = {}) => {
  const d = resolve(dir);
  return loadLlama(
    parseModelConfig(readFileSync(`${d}/config.json`, 'utf8')),
    parseSafetensors(new Uint8Array(readFileSync(`${d}/model.safetensors`))),
    opts,
  );
};
const MODELS: [string, string, LoadOptions][] = [
  ['defender f32', 'public/models/defender', {}],
  ['defender int8', 'public/models/defender', { quantize: int8Quantizer() }],
  ['defender int4', 'public/models/defender', { quantize: int4Quantizer() }],
  ['defender f16', 'public/models/defender', { quantize: f16Quantizer() }],
  ...['qwen3-bias', 'qwen3-tied', 'gemma3-tied', 'gemma3-untied'].map(
    (n) => [n, `dev/fixtures/families/${n}`, {}] as [string, string, LoadOptions],
  ),
  ['qwen3-bias int4 g8', 'dev/fixtures/families/qwen3-bias', { quantize: int4Quantizer(8) }],
  ['gemma3-untied int8', 'dev/fixtures/families/gemma3-untied', { quantize: int8Quantizer() }],
];
const LORAS: [string, (n: number) => DecodeModelRef['lora']][] = [
  ['no lora', (n) => Array.from({ length: n }, () => ({}))],
  [
    'lora all r4',
    (n) =>
      Array.from({ length: n }, () =>
        Object.fromEntries(['q', 'k', 'v', 'o', 'gate', 'up', 'down'].map((p) => [p, { r: 4, scale: 2 }])),
      ),
  ],
  [
    'lora q,v layer 0 r8',
    (n) => Array.from({ length: n }, (_, i) => (i === 0 ? { q: { r: 8, scale: 0.5 }, v: { r: 8, scale: 0.5 } } : {})),
  ],
];
const DECODES: [string, Omit<DecodePlanOptions, 'batch' | 'capacity' | 'tokensPerRun'>, number, number][] = [
  ['B1 C64 split', { gemv: 'split' }, 1, 64],
  ['B4 C64 thread', { gemv: 'thread' }, 4, 64],
  ['B4 C64 split gemm', { gemv: 'split', gemmMinRows: 32 }, 4, 64],
  ['B2 C2048 split', { gemv: 'split' }, 2, 2048],
];
const LEARNS: [string, Partial<LearnPlanOptions>][] = [
  ['keep direct', {}],
  ['recompute direct', { recompute: true }],
  ['keep tiled dropout', { gemm: 'tiled', dropout: true }],
  ['recompute tiled dropout', { gemm: 'tiled', dropout: true, recompute: true }],
];

const digest = () => createHash('sha256').update(log.join('\n')).digest('hex').slice(0, 16);
for (const [name, dir, opts] of MODELS) {
  const model = load(dir, opts);
  const nL = model.layers.length;
  for (const [loraName, lora] of LORAS) {
    const ref = modelRef(model, lora(nL));
    for (const [dn, o, B, C] of DECODES) {
      log = [];
      const p = new DecodePlan(device, ref, { ...o, batch: B, capacity: C, tokensPerRun: 4 });
      const d = p.dispatchesPerToken();
      const pre = p.prefillDispatches();
      console.log(
        `decode ${name} | ${loraName} | ${dn}: per token ${d.total} (draw ${d.draw} embed ${d.embed} layers ${d.layers} head ${d.head}), prefill chunk ${pre.perChunk} + head ${pre.head}, attention ${p.attention}, bytes ${p.plan.bytes}, hash ${digest()} (${log.length} records)`,
      );
      p.dispose();
    }
    if (loraName === 'no lora') continue;
    for (const [ln, o] of LEARNS) {
      log = [];
      const p = new LearnPlan(device, ref, { rows: 3, promptLength: 5, responseLength: 4, temperature: 0.7, ...o });
      const d = p.dispatches();
      console.log(
        `learn ${name} | ${loraName} | ${ln}: ref ${d.ref} fwd ${d.fwd} bwd ${d.bwd}, bytes ${p.plan.bytes}, hash ${digest()} (${log.length} records)`,
      );
      p.dispose();
    }
  }
  const c = model.config;
  for (const rec of [false, true]) {
    const bufs = learnStepBuffers(
      c,
      { r: 4, targets: ['q', 'k', 'v', 'o', 'gate', 'up', 'down'], dropout: rec },
      { promptLen: 5, responseLen: 4 },
      3,
      rec,
    );
    const bytes = bufs.reduce((a, b) => a + b.bytes * b.count, 0);
    console.log(
      `learnMemory ${name} | recompute ${rec}: ${bufs.length} entries, bytes ${bytes}, hash ${createHash('sha256').update(JSON.stringify(bufs)).digest('hex').slice(0, 16)}`,
    );
  }
  disposeLlama(model);
}
process.exit(0);
