// The decode planner: from a description of a decoder-only model (dimensions and the GPU buffers
// of its weights; it knows no model names), a batch size and a cache capacity, it builds once
// every buffer, pipeline and bind group of a cached decode step, and then runs tokens as replays:
// per run of n tokens one write of n uniform slots, one compute pass, one submit and one
// readback of n x B x (id, log-prob, entropy).
//
// Per token, in one pass:
//   sample   sample (sample/op.wgsl), token statistics (token-stats/op.wgsl), embed + record
//   layers   per layer: [x·A for LoRA] q(+norm, RoPE), k(+norm, RoPE, cache), v(+norm, cache),
//            attention, [a·A] o(+residual), [x·A] gate+up(+norm, SwiGLU), [act·A] down(+residual)
//            (attention is two dispatches where it is split-K: segments, then their combine)
//   head     final norm + LM head (row blocks), writing the logits and the scaled logits
// 7 dispatches per layer (8 with split-K attention) and 4 + head blocks per token without LoRA;
// each adapted input adds one small x·A dispatch (up to 4 per layer).
//
// The prompt goes through the same kernels as a prefill: chunks of `prefillChunk(B)` prompt
// columns of every row at once (GEMV rows = B x chunk), each row's RoPE position read from a
// (row, slot) table so left pads do not advance it, attention causal within the chunk, and the
// LM head on the chunk's last column only:
//   pembed   prompt ids of the chunk's columns -> x
//   players  the layers above over B x chunk rows, keys and values written into the cache
//   phead    final norm + LM head of each row's last prompt column
//
// The constructor runs four named steps: the sizes (decodeLayout.ts `decodeSizes`, pure, checked
// against the device's limits), the buffers (`decodeBuffers`), the kernels (decodePasses.ts
// `DecodeOps`: each operation's kernel variant, bindings and grid) and the passes
// (`recordDecodePasses`: the phases' dispatches in order, the block read from each layer).
import { GpuPlan, type PhaseAt } from './plan';
import { packTok, type GemvShape } from './decodeKernels';
import { DYN_SLOT_BYTES } from './plan';
import { submitFlopBudget, type DecodeAttention } from '../options';
import { PROJ_KEYS, type LoraRef, type ProjKey, type DecodeModelRef } from './modelRef';
import { decodeBuffers, decodeSizes, type DecodePlanOptions, type LoraAt } from './decodeLayout';
import { DecodeOps, recordDecodePasses } from './decodePasses';

export {
  PROJ_KEYS,
  type WeightRef,
  type VectorRef,
  type LoraRef,
  type ProjectionRef,
  type ProjKey,
  type DecodeLayerRef,
  type DecodeModelRef,
} from './modelRef';
export {
  SPLITK_MIN_CAPACITY,
  TILE_MIN_ROWS,
  GEMM_MIN_ROWS,
  prefillChunk,
  type DecodeAttention,
  type DecodePlanOptions,
} from './decodeLayout';

export interface RunSampling {
  temperature: number;
  topK: number;
  topP: number;
  seedLo: number;
  seedHi: number;
}

/** A planned prefill's input: the left-padded prompts and what the decode after it needs. */
export interface PromptBegin extends Omit<DecodeBegin, 'prefill' | 'basePos' | 'slotValid'> {
  /** [B][P] left-padded prompt ids and their 0/1 mask (1: a real token). */
  ids: ArrayLike<number>[];
  mask: ArrayLike<number>[];
  /** Id of the extra left pads that round P up to whole chunks. */
  pad: number;
}

/** Inputs of one generation: positions and valid slots after the prefill, streams, sampling. */
export interface DecodeBegin {
  /** Slots the prefill filled (the same for every row: rows are left-padded). */
  prefill: number;
  /** Per row: RoPE position of its first generated token (its real prompt tokens). */
  basePos: ArrayLike<number>;
  /** Per row: 1 where a prefill slot holds a real token ([B][prefill] at least). */
  slotValid: ArrayLike<number>[];
  streams: ArrayLike<number>;
  sampling: RunSampling;
  loraOn: boolean;
  /** LoRA branches per layer and projection, matching the model's `lora` shapes (copied into the plan). */
  lora?: Partial<Record<ProjKey, LoraRef>>[];
}

/** The GPU failed under a plan (device lost, out of memory, a rejected command): nothing it ran is usable. */
export class PlanGpuError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PlanGpuError';
  }
}

const lostDevices = new WeakMap<GPUDevice, string>();
const watched = new WeakSet<GPUDevice>();

/** Remembers why a device was lost, so every plan on it fails with that reason instead of hanging. */
function watchDevice(device: GPUDevice): void {
  if (watched.has(device)) return;
  watched.add(device);
  void device.lost.then((info) => lostDevices.set(device, `${info.reason}: ${info.message}`));
}

export function deviceLostReason(device: GPUDevice): string | null {
  return lostDevices.get(device) ?? null;
}

export class DecodePlan {
  readonly plan: GpuPlan;
  readonly gemvShape: GemvShape;
  /** The decode steps' attention (a prefill chunk's always walks whole: its B x chunk rows already fill a GPU). */
  readonly attention: DecodeAttention;
  /** Key and value caches per layer, [B, nKV, capacity, D] float32 (the tfjs cache layout). */
  readonly kCache: GPUBuffer[];
  readonly vCache: GPUBuffer[];
  /** Logits [B, V] the sampler reads, and logits / statT the statistics read. */
  readonly logits: GPUBuffer;
  readonly scaled: GPUBuffer;
  private readonly aux: GPUBuffer;
  private readonly streams: GPUBuffer;
  private readonly record: GPUBuffer;
  private readonly readback: GPUBuffer;
  private readonly loraBuf: GPUBuffer;
  private readonly ids: GPUBuffer;
  private readonly auxOff: { pos: number; valid: number; ppos: number } & Record<string, number>;
  /** Prompt columns per prefill chunk, and the prompt ids table [B, capacity] the prefill embeds. */
  readonly chunk: number;
  private readonly promptIds: GPUBuffer;
  /** Validation and out-of-memory scopes of the last prefill, checked by the next run. */
  private prefillScopes: Promise<[GPUError | null, GPUError | null]> | null = null;
  private prefillTimed = false;
  /** Submits the last planned prefill was cut into (EngineOptions.submitBudgetMs). */
  lastPrefillSubmits = 0;
  /** GPU milliseconds of the last planned prefill (null without timestamp queries or none run). */
  lastPrefillGpuMs: number | null = null;
  /** Where each LoRA A and B goes in the plan's lora buffer (floats), per layer and projection. */
  private readonly loraAt: Partial<Record<ProjKey, LoraAt>>[];
  private begun: (DecodeBegin & { statT: number }) | null = null;
  /** Timestamp queries around each run's pass, where the device has them (GPU time per token). */
  private readonly timer: { set: GPUQuerySet; resolve: GPUBuffer; read: GPUBuffer } | null;
  /** GPU milliseconds of the last run's compute pass (null without timestamp queries). */
  lastGpuMs: number | null = null;
  private busy = false;
  /** Whether the GPU has accepted every buffer, pipeline and bind group of the plan (checked before the first run). */
  private accepted = false;

  constructor(
    readonly device: GPUDevice,
    readonly model: DecodeModelRef,
    readonly opts: DecodePlanOptions,
  ) {
    watchDevice(device);
    const sizes = decodeSizes(model, opts, device.limits);
    const bufs = decodeBuffers(device, model, sizes);
    recordDecodePasses(new DecodeOps(bufs.plan, model, sizes, bufs, opts, device));
    bufs.plan.finalize();
    this.plan = bufs.plan;
    this.gemvShape = sizes.gemvShape;
    this.attention = sizes.attention;
    this.chunk = sizes.Pc;
    this.auxOff = sizes.aux.offsets;
    this.loraAt = sizes.lora.at;
    ({
      kCache: this.kCache,
      vCache: this.vCache,
      logits: this.logits,
      scaled: this.scaled,
      aux: this.aux,
      streams: this.streams,
      record: this.record,
      readback: this.readback,
      lora: this.loraBuf,
      ids: this.ids,
      promptIds: this.promptIds,
      timer: this.timer,
    } = bufs);
  }

  /** Dispatches per token: sampling, the embedding (+ record), the layers and the head. */
  dispatchesPerToken(): { draw: number; embed: number; layers: number; head: number; perLayer: number; total: number } {
    const [draw, embed, layers, head] = ['draw', 'embed', 'layers', 'head'].map((p) => this.plan.count(p));
    return {
      draw,
      embed,
      layers,
      head,
      perLayer: layers / this.model.layers.length,
      total: draw + embed + layers + head,
    };
  }

  /**
   * Starts a generation: uploads positions, valid slots and streams, and copies the LoRA
   * branches in. The caller has put the prefill's caches and first logits into kCache / vCache,
   * logits and scaled (logits / statT) before the first run.
   */
  begin(b: DecodeBegin): void {
    const { batch: B, capacity: C } = this.opts;
    if (b.basePos.length !== B || b.streams.length !== B || b.slotValid.length !== B)
      throw new Error(`decode plan: begin needs ${B} rows of positions, slots and streams`);
    if (b.prefill < 1 || b.prefill > C) throw new Error(`decode plan: prefill of ${b.prefill} slots outside [1, ${C}]`);
    const pos = new Float32Array(B);
    const valid = new Float32Array(B * C);
    for (let r = 0; r < B; r++) {
      pos[r] = b.basePos[r];
      for (let j = 0; j < C; j++) valid[r * C + j] = j < b.prefill ? (b.slotValid[r][j] ? 1 : 0) : 1;
    }
    const q = this.device.queue;
    q.writeBuffer(this.aux, this.auxOff.pos * 4, pos);
    q.writeBuffer(this.aux, this.auxOff.valid * 4, valid);
    q.writeBuffer(this.streams, 0, Int32Array.from(b.streams));
    const enc = this.device.createCommandEncoder();
    this.loraAt.forEach((at, li) => {
      for (const p of PROJ_KEYS) {
        const e = at[p];
        if (!e) continue;
        const ref = b.lora?.[li]?.[p];
        if (!ref || ref.r !== e.r || ref.scale !== this.model.lora[li]?.[p]?.scale) {
          throw new Error(
            `decode plan: layer ${li} ${p} needs the LoRA branch of rank ${e.r} and scale ${this.model.lora[li]?.[p]?.scale} it was planned with`,
          );
        }
        enc.copyBufferToBuffer(ref.A, 0, this.loraBuf, e.a * 4, e.r * e.inp * 4);
        enc.copyBufferToBuffer(ref.B, 0, this.loraBuf, e.b * 4, e.out * e.r * 4);
      }
    });
    q.submit([enc.finish()]);
    const t = b.sampling.temperature;
    this.begun = { ...b, statT: t > 0 && t !== 1 ? t : 1 };
  }

  /** Packs the per-token uniform `u` of the begun generation into slot i of `slots`. */
  private packSlot(slots: ArrayBuffer, i: number, u: { step: number; slot: number; kvLen: number; rec: number }): void {
    const b = this.begun!;
    packTok(
      { vocab: this.model.vocab, ...b.sampling, ...u, loraOn: b.loraOn, statT: b.statT },
      slots,
      i * DYN_SLOT_BYTES,
    );
  }

  /** Decode step t's uniform: its cache slot after the prefill, the slots it sees, its record row. */
  private stepSlot(t: number, rec: number) {
    const prefill = this.begun!.prefill;
    return { step: t, slot: prefill + t, kvLen: prefill + t + 1, rec };
  }

  /** Prompt columns the planned prefill fills for prompts of P columns: P rounded up to whole chunks. */
  prefillColumns(P: number): number {
    return Math.ceil(P / this.chunk) * this.chunk;
  }

  /**
   * Starts a generation from the prompts themselves: the prefill runs on the plan (one submit, no
   * readback), leaving the caches and the first logits where the decode runs read them. The
   * prompts are left-padded further to whole chunks; those pads, like the caller's, are invalid
   * slots no query sees, and positions count real tokens only, so the result is the tfjs
   * prefill's.
   */
  beginPrompt(p: PromptBegin): void {
    const { batch: B, capacity: C } = this.opts;
    if (p.ids.length !== B || p.mask.length !== B)
      throw new Error(`decode plan: beginPrompt needs ${B} rows of prompt ids and mask`);
    const P = p.ids[0].length;
    const P2 = this.prefillColumns(P);
    if (P < 1 || P2 > C)
      throw new Error(`decode plan: a prompt of ${P} columns (${P2} in whole prefill chunks) outside [1, ${C}]`);
    const shift = P2 - P;
    const ids = new Int32Array(B * C).fill(p.pad);
    const pos = new Float32Array(B * C);
    const slotValid: Uint8Array[] = [];
    const basePos: number[] = [];
    for (let b = 0; b < B; b++) {
      if (p.ids[b].length !== P || p.mask[b].length !== P)
        throw new Error(
          `decode plan: prompt row ${b} has ${p.ids[b].length} ids and ${p.mask[b].length} mask entries, expected ${P}`,
        );
      const valid = new Uint8Array(P2);
      let n = 0;
      for (let j = 0; j < P; j++) {
        ids[b * C + shift + j] = p.ids[b][j];
        if (p.mask[b][j] === 0) continue;
        valid[shift + j] = 1;
        pos[b * C + shift + j] = n++;
      }
      slotValid.push(valid);
      basePos.push(n);
    }
    this.begin({ ...p, prefill: P2, basePos, slotValid });
    const q = this.device.queue;
    q.writeBuffer(this.aux, this.auxOff.ppos * 4, pos);
    q.writeBuffer(this.promptIds, 0, ids);
    const chunks = P2 / this.chunk;
    const first = this.opts.tokensPerRun; // prefill slots follow the run's
    const slots = new ArrayBuffer(chunks * DYN_SLOT_BYTES);
    for (let i = 0; i < chunks; i++) this.packSlot(slots, i, { step: 0, slot: i * this.chunk, kvLen: 0, rec: 0 });
    this.device.pushErrorScope('out-of-memory');
    this.device.pushErrorScope('validation');
    q.writeBuffer(this.plan.dyn, first * DYN_SLOT_BYTES, slots);
    const timer = this.timer;
    const items: PhaseAt[] = [];
    for (let i = 0; i < chunks; i++)
      items.push({ phase: 'pembed', slot: first + i }, { phase: 'players', slot: first + i });
    items.push({ phase: 'phead', slot: first + chunks - 1 });
    // Cut into submits under the watchdog budget (EngineOptions.submitBudgetMs): a long prompt at
    // a large batch is seconds of work on a slow GPU.
    this.lastPrefillSubmits = this.plan.submitSplit(items, submitFlopBudget(), {
      label: 'decode prefill',
      timestamps: timer ? { querySet: timer.set, begin: 2, end: 3 } : undefined,
    });
    const invalid = this.device.popErrorScope();
    const oom = this.device.popErrorScope();
    this.prefillScopes = Promise.all([invalid, oom]);
    this.prefillTimed = timer !== null;
  }

  /** Estimated FLOPs of a prefill chunk and of the prefill's head (what the submit budget counts). */
  prefillFlops(): { perChunk: number; head: number } {
    return { perChunk: this.plan.flops('pembed') + this.plan.flops('players'), head: this.plan.flops('phead') };
  }

  /** Dispatches of a prefill chunk and of the prefill's head (tests, benchmarks). */
  /** Dispatches of kernels whose key starts with `prefix`: per decode token and per prefill chunk (with its head). */
  kernelDispatches(prefix: string): { decode: number; prefill: number } {
    const n = (phases: string[]) => phases.reduce((a, p) => a + this.plan.countKernels(p, prefix), 0);
    return { decode: n(['draw', 'embed', 'layers', 'head']), prefill: n(['pembed', 'players', 'phead']) };
  }

  prefillDispatches(): { perChunk: number; head: number } {
    return { perChunk: this.plan.count('pembed') + this.plan.count('players'), head: this.plan.count('phead') };
  }

  /**
   * Runs tokens first .. first + n - 1 (sampling each from the current logits; `forwardLast`
   * false skips the forward after the last one) and returns [n][B][id, log-prob, entropy].
   */
  async run(first: number, n: number, forwardLast: boolean): Promise<Float32Array> {
    const b = this.begun;
    if (!b) throw new Error('decode plan: run before begin');
    if (this.busy) throw new Error('decode plan: a run is already in flight');
    this.checkDevice();
    if (!this.accepted) {
      // A refused buffer (out of memory, over a limit) named here, not as a rejected decode step.
      await this.plan.created().catch((e: Error) => {
        throw new PlanGpuError(e.message);
      });
      this.accepted = true;
    }
    if (n < 1 || n > this.opts.tokensPerRun)
      throw new Error(`decode plan: ${n} tokens per run outside [1, ${this.opts.tokensPerRun}]`);
    if (b.prefill + first + n - (forwardLast ? 0 : 1) > this.opts.capacity)
      throw new Error(`decode plan: cache capacity ${this.opts.capacity} exceeded`);
    this.busy = true;
    try {
      const slots = new ArrayBuffer(n * DYN_SLOT_BYTES);
      for (let i = 0; i < n; i++) {
        this.packSlot(slots, i, this.stepSlot(first + i, i));
      }
      const q = this.device.queue;
      this.device.pushErrorScope('out-of-memory');
      this.device.pushErrorScope('validation');
      q.writeBuffer(this.plan.dyn, 0, slots);
      const enc = this.device.createCommandEncoder();
      const timer = this.timer;
      const pass = enc.beginComputePass(
        timer
          ? { timestampWrites: { querySet: timer.set, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 } }
          : undefined,
      );
      for (let i = 0; i < n; i++) {
        this.plan.encode(pass, 'draw', i);
        this.plan.encode(pass, 'embed', i);
        if (i < n - 1 || forwardLast) {
          this.plan.encode(pass, 'layers', i);
          this.plan.encode(pass, 'head', i);
        }
      }
      pass.end();
      const bytes = n * this.opts.batch * 3 * 4;
      enc.copyBufferToBuffer(this.record, 0, this.readback, 0, bytes);
      if (timer) {
        enc.resolveQuerySet(timer.set, 0, this.prefillTimed ? 4 : 2, timer.resolve, 0);
        enc.copyBufferToBuffer(timer.resolve, 0, timer.read, 0, 32);
      }
      q.submit([enc.finish()]);
      // Scopes pop in reverse order of pushing; the readback is requested at once beside them.
      const invalid = this.device.popErrorScope();
      const oom = this.device.popErrorScope();
      const mapped = this.readback.mapAsync(GPUMapMode.READ, 0, bytes).then(
        () => null,
        (e: Error) => e,
      );
      const prefill = this.prefillScopes ?? Promise.resolve([null, null] as [null, null]);
      this.prefillScopes = null;
      const [badRun, oomRun, mapError, [badPrefill, oomPrefill]] = await Promise.all([invalid, oom, mapped, prefill]);
      const badStep = badRun ?? badPrefill;
      const noMemory = oomRun ?? oomPrefill;
      if (badStep || noMemory || mapError) {
        if (!mapError) this.readback.unmap();
        this.checkDevice();
        if (noMemory)
          throw new PlanGpuError(
            `decode plan: the GPU ran out of memory during a decode step (${noMemory.message}); the plan holds ${this.plan.bytes} bytes`,
          );
        if (badStep) throw new PlanGpuError(`decode plan: the GPU rejected a decode step (${badStep.message})`);
        throw mapError!;
      }
      const out = new Float32Array(this.readback.getMappedRange(0, bytes).slice(0));
      this.readback.unmap();
      if (timer) {
        await timer.read.mapAsync(GPUMapMode.READ);
        const [t0, t1, t2, t3] = new BigUint64Array(timer.read.getMappedRange().slice(0));
        timer.read.unmap();
        this.lastGpuMs = Number(t1 - t0) / 1e6;
        this.lastPrefillGpuMs = this.prefillTimed ? Number(t3 - t2) / 1e6 : null;
        this.prefillTimed = false;
      }
      return out;
    } finally {
      this.busy = false;
    }
  }

  /**
   * Teacher-forced step t: feeds `ids` (one per row) instead of sampling and returns the logits
   * [B, V] that follow (tests and triage; its readback buffer is made on first use).
   */
  async forced(t: number, ids: ArrayLike<number>): Promise<Float32Array> {
    const b = this.begun;
    if (!b) throw new Error('decode plan: forced before begin');
    const slots = new ArrayBuffer(DYN_SLOT_BYTES);
    this.packSlot(slots, 0, this.stepSlot(t, 0));
    const q = this.device.queue;
    q.writeBuffer(this.plan.dyn, 0, slots);
    q.writeBuffer(this.ids, 0, Int32Array.from(ids));
    const enc = this.device.createCommandEncoder();
    const pass = enc.beginComputePass();
    for (const phase of ['embed', 'layers', 'head']) this.plan.encode(pass, phase, 0);
    pass.end();
    q.submit([enc.finish()]);
    return this.readLogits();
  }

  /** The logits [B, V] the next token would be drawn from (tests and triage; its readback buffer is made on first use). */
  async readLogits(): Promise<Float32Array> {
    const bytes = this.opts.batch * this.model.vocab * 4;
    this.logitsReadback ??= this.plan.buffer(
      'logits readback',
      bytes,
      GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
    );
    const enc = this.device.createCommandEncoder();
    enc.copyBufferToBuffer(this.logits, 0, this.logitsReadback, 0, bytes);
    this.device.queue.submit([enc.finish()]);
    await this.logitsReadback.mapAsync(GPUMapMode.READ);
    const out = new Float32Array(this.logitsReadback.getMappedRange().slice(0, bytes));
    this.logitsReadback.unmap();
    return out;
  }

  private logitsReadback: GPUBuffer | null = null;

  /** Throws a PlanGpuError when the device this plan was built on is gone. */
  checkDevice(): void {
    const lost = deviceLostReason(this.device);
    if (lost)
      throw new PlanGpuError(
        `the GPU device was lost (${lost}); decoding stopped. Saved checkpoints are kept: reload the lab to get a new device and resume from the newest one`,
      );
  }

  dispose(): void {
    this.timer?.set.destroy();
    this.plan.dispose();
  }
}
