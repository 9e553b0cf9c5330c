// The learning planner: from a description of a decoder-only model (the decode planner's
// DecodeModelRef: dimensions, weight buffers, LoRA shapes; no model names) and a batch shape
// (rows B, prompt columns P, response columns T), it builds once every buffer, pipeline and bind
// group of a forward over the whole left-padded sequence and its backward to the LoRA factors,
// and then replays them. Per learning step: one write of the inputs, the forward pass (and the
// reference pass with the adapters left out) leaving B T x (log-prob, entropy, reference log-prob)
// on the GPU (or read back); the caller turns those into d loss / d log-prob and d loss / d
// entropy (the loss formulas live in src/rl) on the GPU, hands them over as buffers (or host
// arrays), and the backward pass fills, or adds into, one flat f32 gradient buffer.
//
// Columns: L = P + T - 1 (the last response token predicts nothing); response token t is predicted
// by column P - 1 + t. Activations are kept per layer, or (`recompute`) only each layer's input
// residual is kept and the backward re-runs that layer's forward kernels into one shared scratch
// set just before the layer's backward (the last layer's still hold the forward's values, so it is
// not re-run): the same kernels on the same inputs, so the same values. The buffers it creates
// are listed, to the byte, by src/contract/learnMemory.ts's learnStepBuffers (the planner that sizes
// learnStep's micro-batches and the page's fit check); a change here changes that list.
//
// LoRA parameter and gradient layout (`params`, `grads`, the same for both, what an optimiser
// over one flat buffer reads): adapters in model order, layer by layer, projections q k v o gate up
// down; per adapter A [r, in] then B [out, r], each row-major. LoRA stays factored: x A^T is//
// The constructor runs four named steps: the sizes (learnLayout.ts `learnSizes`, pure), the buffers
// (`learnBuffers`), the kernels (learnPasses.ts `LearnOps`: each operation's dispatches, forward
// and backward) and the passes (`recordLearnPasses`: the forwards through the block read from each
// layer, then the backward in mirror order).
import { alignUp, type BufferRange, type GpuPlan } from './plan';
import { submitFlopBudget } from '../options';
import type { DecodeModelRef } from './modelRef';
import { STATS_COLS } from './learnKernels';
import {
  F,
  learnBuffers,
  learnSizes,
  loraSlots,
  type LearnPlanOptions,
  type LearnShape,
  type LoraSlot,
} from './learnLayout';
import { LearnOps, recordLearnPasses } from './learnPasses';

export { loraSlots, type LearnPlanOptions, type LearnShape, type LoraSlot } from './learnLayout';

/** Host inputs of one step: ids and mask [B][P + T] (left-padded prompt, then response). */
export interface LearnInputs {
  ids: ArrayLike<number>[];
  attentionMask: ArrayLike<number>[];
}

export class LearnPlan {
  readonly plan: GpuPlan;
  readonly B: number;
  readonly P: number;
  readonly T: number;
  readonly L: number;
  /** Tokens in the forward (B L) and response rows (B T). */
  readonly N: number;
  readonly R: number;
  readonly slots: LoraSlot[];
  /** Floats in `params` and `grads`. */
  readonly paramCount: number;
  /** LoRA factors the passes read (copied in by loadParams, or written by an optimiser). */
  readonly params: GPUBuffer;
  /** d loss / d params after backward(), same layout as params. */
  readonly grads: GPUBuffer;
  private readonly ids: GPUBuffer;
  private readonly targets: GPUBuffer;
  private readonly valid: GPUBuffer;
  private readonly cos: GPUBuffer;
  private readonly sin: GPUBuffer;
  /** cos / sin of every RoPE past the first (DecodeModelRef.invFreqs[1..]: Gemma 3's sliding layers). */
  private readonly ropeTables: { cos: GPUBuffer; sin: GPUBuffer }[];
  private readonly stats: GPUBuffer;
  private readonly dstats: GPUBuffer;
  private readonly statsRead: GPUBuffer;
  private gradsRead: GPUBuffer | null = null;
  private readonly hn: GPUBuffer;
  private readonly dhn: GPUBuffer;
  /** The final normed hidden state of the response-predicting rows [B T, H] (forward(.., true)). */
  readonly hidden: GPUBuffer;
  /** Per LoRA slot (slot order), its dropout mask [N, in], one bit per element (with opts.dropout). */
  private readonly masks: GPUBuffer[];
  /** Whether each mask keeps every element now (dropout off for this pass). */
  private readonly masksOnes: boolean[];
  /** The kept elements' multiplier 1 / (1 - p) (1 with dropout off), and the f32 staging of a mask to pack. */
  private readonly dropScale: GPUBuffer | null;
  private readonly dropStaging: GPUBuffer | null;

  constructor(
    readonly device: GPUDevice,
    readonly model: DecodeModelRef,
    readonly opts: LearnPlanOptions,
  ) {
    const sizes = learnSizes(model, opts);
    const bufs = learnBuffers(device, model, sizes, opts);
    recordLearnPasses(new LearnOps(bufs.plan, model, sizes, bufs, opts));
    bufs.plan.finalize();
    ({ B: this.B, P: this.P, T: this.T, L: this.L, N: this.N, R: this.R, slots: this.slots } = sizes);
    this.paramCount = sizes.count;
    ({
      plan: this.plan,
      params: this.params,
      grads: this.grads,
      ids: this.ids,
      targets: this.targets,
      valid: this.valid,
      cos: this.cos,
      sin: this.sin,
      ropeTables: this.ropeTables,
      stats: this.stats,
      dstats: this.dstats,
      statsRead: this.statsRead,
      hn: this.hn,
      dhn: this.dhn,
      hidden: this.hidden,
      masks: this.masks,
      dropScale: this.dropScale,
      dropScratch: this.dropStaging,
    } = bufs);
    this.masksOnes = this.masks.map(() => false);
  }

  /** Dispatches per phase ('ref', 'fwd', 'bwd'). */
  dispatches(): Record<'ref' | 'fwd' | 'bwd', number> {
    return { ref: this.plan.count('ref'), fwd: this.plan.count('fwd'), bwd: this.plan.count('bwd') };
  }

  /** A flat gradient buffer for plans of this model description's LoRA layout (`opts.grads`). */
  static gradBuffer(device: GPUDevice, m: LearnShape): GPUBuffer {
    const bytes = loraSlots(m).count * F;
    // GpuPlan.buffer's size and usage, so the plan's byte count is the same either way.
    return device.createBuffer({
      label: 'learn:lora grads',
      size: alignUp(Math.max(bytes, 4), 16),
      usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC,
    });
  }

  /** The per-token statistics after a forward, [B T, STATS_COLS]: log-prob, entropy, reference log-prob, logsumexp. */
  get statsBuffer(): GPUBuffer {
    return this.stats;
  }

  /** Writes ids, targets, key validity and RoPE tables (positions = real tokens before, as the tfjs path). */
  writeInputs(inp: LearnInputs): void {
    const { B, L, P, T } = this;
    const half = this.model.headDim / 2;
    if (inp.ids.length !== B || inp.attentionMask.length !== B)
      throw new Error(`learn plan: ${inp.ids.length} rows given, the plan has ${B}`);
    const ids = new Int32Array(B * L);
    const targets = new Int32Array(B * T);
    const valid = new Float32Array(B * L);
    // one table of B L x half per RoPE, one after another
    const invFreqs = this.model.invFreqs ?? [this.model.invFreq];
    const cos = new Float32Array(invFreqs.length * B * L * half);
    const sin = new Float32Array(invFreqs.length * B * L * half);
    for (let b = 0; b < B; b++) {
      const row = inp.ids[b];
      const mask = inp.attentionMask[b];
      if (row.length !== P + T || mask.length !== P + T)
        throw new Error(`learn plan: row ${b} has ${row.length} ids, the plan takes ${P + T}`);
      let pos = 0;
      for (let i = 0; i < L; i++) {
        const t = b * L + i;
        ids[t] = row[i];
        const real = mask[i] !== 0;
        valid[t] = real ? 1 : 0;
        const at = real ? pos++ : 0;
        invFreqs.forEach((inv, r) => {
          for (let j = 0; j < half; j++) {
            const angle = at * inv[j];
            cos[(r * B * L + t) * half + j] = Math.cos(angle);
            sin[(r * B * L + t) * half + j] = Math.sin(angle);
          }
        });
      }
      for (let t = 0; t < T; t++) targets[b * T + t] = row[P + t];
    }
    const q = this.device.queue;
    q.writeBuffer(this.ids, 0, ids);
    q.writeBuffer(this.targets, 0, targets);
    q.writeBuffer(this.valid, 0, valid);
    const n = B * L * half;
    [{ cos: this.cos, sin: this.sin }, ...this.ropeTables].forEach((tab, r) => {
      q.writeBuffer(tab.cos, 0, cos, r * n, n);
      q.writeBuffer(tab.sin, 0, sin, r * n, n);
    });
  }

  /** Copies the adapters' factors (device buffers, slot order, A then B each) into `params`. */
  loadParams(factors: { A: GPUBuffer; B: GPUBuffer }[]): void {
    if (factors.length !== this.slots.length)
      throw new Error(`learn plan: ${factors.length} adapters given, the plan has ${this.slots.length}`);
    const enc = this.device.createCommandEncoder({ label: 'learn: load params' });
    this.slots.forEach((s, i) => {
      enc.copyBufferToBuffer(factors[i].A, 0, this.params, s.aOff * F, s.r * s.inF * F);
      enc.copyBufferToBuffer(factors[i].B, 0, this.params, s.bOff * F, s.outF * s.r * F);
    });
    this.device.queue.submit([enc.finish()]);
  }

  /** Whether the plan applies LoRA dropout (opts.dropout with at least one adapter). */
  get dropout(): boolean {
    return this.masks.length > 0;
  }

  /**
   * The dropout multipliers of the next forward and backward for the slots from `first` on, one
   * [N, in] f32 device buffer each in the plan's token order (copied in and packed to bits), or
   * null for no dropout (every mask keeps every element).
   */
  loadMasks(masks: GPUBuffer[] | null, first = 0): void {
    if (masks && first + masks.length > this.masks.length)
      throw new Error(
        `learn plan: dropout masks for slots ${first} to ${first + masks.length - 1}, the plan has ${this.masks.length}`,
      );
    const enc = this.device.createCommandEncoder({ label: 'learn: load dropout masks' });
    this.masks.forEach((m, i) => {
      const n = this.N * this.slots[i].inF;
      if (masks) {
        if (i < first || i >= first + masks.length) return;
        // The f32 multiplier into the staging, then packed to bits by the plan's dispatch.
        enc.copyBufferToBuffer(masks[i - first], 0, this.dropStaging!, 0, n * F);
        const pass = enc.beginComputePass();
        this.plan.encode(pass, `dropout pack ${i}`, 0);
        pass.end();
      } else if (!this.masksOnes[i]) {
        this.device.queue.writeBuffer(m, 0, new Uint32Array(Math.ceil(n / 32)).fill(0xffffffff));
        this.device.queue.writeBuffer(this.dropScale!, 0, new Float32Array([1]));
      }
      this.masksOnes[i] = !masks;
    });
    this.device.queue.submit([enc.finish()]);
  }

  private pass(
    phases: string[],
    after?: (enc: GPUCommandEncoder) => void,
    before?: (enc: GPUCommandEncoder) => void,
  ): void {
    // Cut into submits under the watchdog budget (EngineOptions.submitBudgetMs): a learning pass
    // of 64 x 128 tokens through SmolLM2-135M is ~2 TFLOP, seconds on a slow GPU.
    this.lastSubmits = this.plan.submitSplit(
      phases.map((phase) => ({ phase, slot: 0 })),
      submitFlopBudget(),
      { label: `learn: ${phases.join('+')}`, before, after },
    );
  }

  /** Submits the last forward or backward pass was cut into (EngineOptions.submitBudgetMs). */
  lastSubmits = 0;

  /** Estimated FLOPs per phase ('ref', 'fwd', 'bwd'): what the submit budget counts. */
  flops(): Record<'ref' | 'fwd' | 'bwd', number> {
    return { ref: this.plan.flops('ref'), fwd: this.plan.flops('fwd'), bwd: this.plan.flops('bwd') };
  }

  /**
   * Runs the forward (and first the reference pass when `reference`) and reads back per response
   * token [B T] log-prob, entropy, and the reference log-prob (0 without); `withHidden` also fills
   * `hidden`. With `policy` false only the reference pass runs (log-prob and entropy are stale).
   */
  async forward(
    reference: boolean,
    withHidden = false,
    policy = true,
  ): Promise<{ logp: Float32Array; entropy: Float32Array; refLogp: Float32Array | null }> {
    const bytes = this.R * STATS_COLS * F;
    this.forwardOnGpu(reference, withHidden, policy, (enc) =>
      enc.copyBufferToBuffer(this.stats, 0, this.statsRead, 0, bytes),
    );
    await this.statsRead.mapAsync(GPUMapMode.READ, 0, bytes);
    const s = new Float32Array(this.statsRead.getMappedRange(0, bytes).slice(0));
    this.statsRead.unmap();
    const col = (c: number) => Float32Array.from({ length: this.R }, (_, i) => s[i * STATS_COLS + c]);
    return { logp: col(0), entropy: col(1), refLogp: reference ? col(2) : null };
  }

  /**
   * The forward of `forward` with nothing read back: the statistics stay in `statsBuffer` (and the
   * hidden rows in `hidden`) for a loss on the GPU; `after` records more into the same encoder.
   */
  forwardOnGpu(reference: boolean, withHidden = false, policy = true, after?: (enc: GPUCommandEncoder) => void): void {
    const H = this.model.hidden;
    this.pass([...(reference ? ['ref'] : []), ...(policy ? ['fwd'] : [])], (enc) => {
      after?.(enc);
      // The response-predicting rows (the last T of each row's L) for a value head.
      for (let b = 0; withHidden && b < this.B; b++)
        enc.copyBufferToBuffer(
          this.hn,
          (b * this.L + this.P - 1) * H * F,
          this.hidden,
          b * this.T * H * F,
          this.T * H * F,
        );
    });
  }

  /** Backward from d loss / d log-prob and d loss / d entropy per response token [B T] into `grads`. */
  backward(dlogp: ArrayLike<number>, dentropy: ArrayLike<number>): void {
    if (dlogp.length !== this.R || dentropy.length !== this.R)
      throw new Error(`learn plan: gradients of ${dlogp.length} / ${dentropy.length} tokens, the plan has ${this.R}`);
    const d = new Float32Array(this.R * 2);
    for (let i = 0; i < this.R; i++) {
      d[2 * i] = dlogp[i];
      d[2 * i + 1] = dentropy[i];
    }
    this.device.queue.writeBuffer(this.dstats, 0, d);
    this.backwardFrom(null);
  }

  /**
   * Backward from GPU buffers: `dstats` [B T, 2] (d loss / d log-prob, d loss / d entropy per
   * token, interleaved; null: already in place), and `dhidden` [B T, H], d loss / d hidden at the
   * final hidden rows (a value loss into the adapters). `accumulate` adds into `grads` (the next
   * micro-batch of a step) instead of overwriting them. Copies in, one pass, one submit.
   */
  backwardFrom(dstats: GPUBuffer | null, opts: { dhidden?: GPUBuffer; accumulate?: boolean } = {}): void {
    const before = (enc: GPUCommandEncoder) => {
      if (dstats) enc.copyBufferToBuffer(dstats, 0, this.dstats, 0, this.R * 2 * F);
      // The head's product adds into the response rows of d hn: d hidden there, or zeros.
      const rowBytes = this.T * this.model.hidden * F;
      for (let b = 0; b < this.B; b++) {
        const at = (b * this.L + this.P - 1) * this.model.hidden * F;
        if (opts.dhidden) enc.copyBufferToBuffer(opts.dhidden, b * rowBytes, this.dhn, at, rowBytes);
        else enc.clearBuffer(this.dhn, at, rowBytes);
      }
      // The weight-gradient products add into grads too: zero them first unless accumulating.
      if (!opts.accumulate) enc.clearBuffer(this.grads, 0, this.paramCount * F);
    };
    this.pass(['bwd'], undefined, before);
  }

  /** The gradient buffer read back (tests; one staging buffer made on first use). */
  async readGrads(): Promise<Float32Array> {
    const bytes = this.paramCount * F;
    this.gradsRead ??= this.plan.buffer('grads readback', bytes, GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST);
    const enc = this.device.createCommandEncoder();
    enc.copyBufferToBuffer(this.grads, 0, this.gradsRead, 0, bytes);
    this.device.queue.submit([enc.finish()]);
    await this.gradsRead.mapAsync(GPUMapMode.READ, 0, bytes);
    const g = new Float32Array(this.gradsRead.getMappedRange(0, bytes).slice(0));
    this.gradsRead.unmap();
    return g;
  }

  dispose(): void {
    this.plan.dispose();
  }
}

export type { BufferRange };
