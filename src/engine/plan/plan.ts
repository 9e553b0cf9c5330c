// A plan: buffers allocated once, pipelines compiled once, bind groups created once, and named
// phases of dispatches that are replayed into one compute pass. The only per-run host work is a
// write of the per-token uniform slots and the encoding of the dispatches (DESIGN, "Two
// execution paths": tfjs pays tens of microseconds of host time per op; a replay pays about one).
import { compileKernel, type CompiledKernel, type PlanKernel } from './kernel';

/** A buffer, or a 256-byte-aligned range of one (WebGPU's storage offset alignment). */
export interface BufferRange {
  buffer: GPUBuffer;
  offset?: number;
  size?: number;
}

/** What a binding is given: a buffer (range), the dispatch's own static uniform bytes, or the per-token slot. */
export type BindingValue = BufferRange | { uniform: ArrayBuffer } | 'dyn';

interface Pending {
  phase: string;
  kernel: CompiledKernel;
  values: BindingValue[];
  workgroups: [number, number, number];
  flops: number;
}

interface Dispatch {
  /** The kernel's key (which variant a dispatch runs: tests count them). */
  key: string;
  pipeline: GPUComputePipeline;
  bindGroup: GPUBindGroup;
  workgroups: [number, number, number];
  dynamic: boolean;
  /** Estimated floating-point operations (0: negligible), what submitSplit budgets. */
  flops: number;
}

/** A phase to record at a per-token slot. */
export interface PhaseAt {
  phase: string;
  slot: number;
}

export interface SubmitSplitOptions {
  label?: string;
  /** Recorded into the first command encoder before its pass (copies in). */
  before?: (enc: GPUCommandEncoder) => void;
  /** Recorded into the last command encoder after its pass (copies out, readbacks). */
  after?: (enc: GPUCommandEncoder) => void;
  /** Timestamps: `begin` written at the first pass's start, `end` at the last pass's end. */
  timestamps?: { querySet: GPUQuerySet; begin: number; end: number };
}

/** Bytes between per-token uniform slots: WebGPU's minUniformBufferOffsetAlignment ceiling. */
export const DYN_SLOT_BYTES = 256;
const ALIGN = 256;

export const alignUp = (n: number, a = ALIGN): number => Math.ceil(n / a) * a;

/** A buffer a plan is about to make, checked against the device before any is made. */
export interface PlannedBuffer {
  name: string;
  bytes: number;
  /** How its size follows from the plan's shape, for the refusal (e.g. 'batch x kv heads x capacity x head_dim x 4'). */
  size?: string;
}

export interface PlanLimits {
  /** Bytes one storage binding may span (maxStorageBufferBindingSize, or less where the plan is told so). */
  maxBinding: number;
  /** Bytes one buffer may hold (maxBufferSize). */
  maxBuffer: number;
  /** Bytes all the plan's buffers together may hold (null: no budget). */
  budget: number | null;
}

const mib = (n: number) => `${(n / 2 ** 20).toFixed(1)} MiB`;

/**
 * Refuses a plan whose buffers the device cannot hold, before any GPU work: one over a binding or
 * buffer limit is named with its size and where the size comes from, and buffers over the memory
 * budget name the largest. Every plan buffer is bound whole as storage, so the binding limit
 * applies to each.
 */
export function checkPlanBuffers(label: string, buffers: PlannedBuffer[], limits: PlanLimits, fix: string): void {
  for (const b of buffers) {
    const over =
      b.bytes > limits.maxBuffer
        ? `the device's buffer limit (maxBufferSize) of ${limits.maxBuffer} bytes`
        : b.bytes > limits.maxBinding
          ? `the storage binding limit of ${limits.maxBinding} bytes`
          : null;
    if (over)
      throw new Error(
        `${label}: buffer "${b.name}" needs ${b.bytes} bytes (${mib(b.bytes)}${b.size ? `: ${b.size}` : ''}), over ${over}; ${fix}`,
      );
  }
  const total = buffers.reduce((a, b) => a + b.bytes, 0);
  if (limits.budget !== null && total > limits.budget) {
    const largest = [...buffers].sort((a, b) => b.bytes - a.bytes)[0];
    throw new Error(
      `${label}: its buffers need ${total} bytes (${mib(total)}), over the memory budget of ${limits.budget} bytes (${mib(limits.budget)}); the largest is "${largest.name}" of ${largest.bytes} bytes${largest.size ? ` (${largest.size})` : ''}; ${fix}`,
    );
  }
}

export class GpuPlan {
  private readonly owned: GPUBuffer[] = [];
  private readonly pending: Pending[] = [];
  private readonly phases = new Map<string, Dispatch[]>();
  private staticBuffer: GPUBuffer | null = null;
  /** The per-token uniform: `slots` slots of DYN_SLOT_BYTES, written once per run. */
  readonly dyn: GPUBuffer;
  /** Bytes of every buffer the plan owns (not the weights it borrows). */
  bytes = 0;
  /**
   * What the GPU said about each buffer, pipeline and bind group as the plan made it (each inside
   * its own out-of-memory and validation scopes), so a refusal names what it refused; only until
   * created() has read it (later, small additions report as uncaptured errors, as unscoped ones do).
   */
  private creation: Promise<string | null>[] = [];
  private scoping: boolean;

  /**
   * `scoped`: make everything inside error scopes and have the owner await created() before its
   * first submit (a plan that never does should leave it off: its errors would go unreported).
   */
  constructor(
    readonly device: GPUDevice,
    readonly slots: number,
    readonly label = 'plan',
    scoped = false,
  ) {
    this.scoping = scoped;
    this.dyn = this.buffer('dyn', slots * DYN_SLOT_BYTES, GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST);
  }

  /** A buffer the plan owns (zero-filled by WebGPU). */
  buffer(
    name: string,
    bytes: number,
    usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC,
  ): GPUBuffer {
    const size = alignUp(Math.max(bytes, 4), 16);
    const b = this.scoped(`buffer "${name}" of ${size} bytes`, () =>
      this.device.createBuffer({ label: `${this.label}:${name}`, size, usage }),
    );
    this.owned.push(b);
    this.bytes += size;
    return b;
  }

  /** Adds a dispatch to a phase; `flops`: its estimated work, which submitSplit budgets (0: negligible). */
  add(
    phase: string,
    kernel: PlanKernel,
    values: BindingValue[],
    workgroups: [number, number, number],
    flops = 0,
  ): void {
    if (this.staticBuffer) throw new Error(`${this.label}: add after finalize`);
    if (values.length !== kernel.bindings.length) {
      throw new Error(
        `${this.label}: kernel ${kernel.key} has ${kernel.bindings.length} bindings, given ${values.length}`,
      );
    }
    const max = this.device.limits.maxComputeWorkgroupsPerDimension;
    if (workgroups.some((w) => w > max))
      throw new Error(
        `${this.label}: kernel ${kernel.key} needs [${workgroups}] workgroups, the device allows ${max} per dimension`,
      );
    if (workgroups.some((w) => w === 0)) return;
    const compiled = this.scoped(`the pipeline of kernel ${kernel.key}`, () => compileKernel(this.device, kernel));
    this.pending.push({ phase, kernel: compiled, values, workgroups, flops });
  }

  /** Runs `make` inside out-of-memory and validation error scopes whose verdict names `what`. */
  private scoped<T>(what: string, make: () => T): T {
    if (!this.scoping) return make();
    this.device.pushErrorScope('out-of-memory');
    this.device.pushErrorScope('validation');
    try {
      return make();
    } finally {
      const invalid = this.device.popErrorScope();
      const oom = this.device.popErrorScope();
      this.creation.push(
        Promise.all([invalid, oom]).then(([v, o]) => {
          const e = o ?? v;
          return e ? `the GPU refused ${what} (${o ? 'out of memory' : 'invalid'}: ${e.message})` : null;
        }),
      );
    }
  }

  /**
   * Resolves once the GPU has accepted everything the plan made; otherwise rejects naming the
   * first buffer, pipeline or bind group it refused (out of memory, over a limit). Awaited before
   * a plan's first submit, so no work runs on a half-made plan.
   */
  async created(): Promise<void> {
    this.scoping = false;
    const verdicts = await Promise.all(this.creation);
    this.creation = [];
    const refused = verdicts.filter((v): v is string => v !== null);
    if (refused.length)
      throw new Error(
        `${this.label}: ${refused[0]}${refused.length > 1 ? ` (and ${refused.length - 1} more refusals)` : ''}`,
      );
  }

  /** Creates the static uniform buffer and every bind group. */
  finalize(): void {
    let total = 0;
    const offsets = this.pending.map((p) =>
      p.values.map((v) => {
        if (typeof v === 'object' && 'uniform' in v) {
          const at = total;
          total += alignUp(v.uniform.byteLength);
          return at;
        }
        return -1;
      }),
    );
    const staticBuffer = this.buffer('static uniforms', total, GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST);
    const bytes = new Uint8Array(Math.max(total, 4));
    this.pending.forEach((p, i) =>
      p.values.forEach((v, j) => {
        if (typeof v === 'object' && 'uniform' in v) bytes.set(new Uint8Array(v.uniform), offsets[i][j]);
      }),
    );
    this.device.queue.writeBuffer(staticBuffer, 0, bytes, 0, total);
    this.staticBuffer = staticBuffer;
    this.pending.forEach((p, i) => {
      const entries: GPUBindGroupEntry[] = p.values.map((v, j) => {
        if (v === 'dyn') return { binding: j, resource: { buffer: this.dyn, offset: 0, size: DYN_SLOT_BYTES } };
        if ('uniform' in v)
          return {
            binding: j,
            resource: { buffer: staticBuffer, offset: offsets[i][j], size: alignUp(v.uniform.byteLength, 16) },
          };
        return { binding: j, resource: { buffer: v.buffer, offset: v.offset ?? 0, size: v.size } };
      });
      const bindGroup = this.scoped(`the bind group of kernel ${p.kernel.kernel.key} (phase ${p.phase})`, () =>
        this.device.createBindGroup({ label: p.kernel.kernel.key, layout: p.kernel.layout, entries }),
      );
      const list = this.phases.get(p.phase) ?? [];
      list.push({
        key: p.kernel.kernel.key,
        pipeline: p.kernel.pipeline,
        bindGroup,
        workgroups: p.workgroups,
        dynamic: p.values.includes('dyn'),
        flops: p.flops,
      });
      this.phases.set(p.phase, list);
    });
    this.pending.length = 0;
  }

  /** Dispatches of a phase (0 if it has none). */
  count(phase: string): number {
    return this.phases.get(phase)?.length ?? 0;
  }

  /** Dispatches of a phase whose kernel key starts with `prefix`. */
  countKernels(phase: string, prefix: string): number {
    return (this.phases.get(phase) ?? []).filter((d) => d.key.startsWith(prefix)).length;
  }

  /** Estimated FLOPs of a phase's dispatches. */
  flops(phase: string): number {
    return (this.phases.get(phase) ?? []).reduce((a, d) => a + d.flops, 0);
  }

  /** Records a phase's dispatches into an open compute pass, reading per-token slot `slot`. */
  encode(pass: GPUComputePassEncoder, phase: string, slot: number): void {
    if (!this.staticBuffer) throw new Error(`${this.label}: encode before finalize`);
    this.checkSlot(slot);
    for (const d of this.phases.get(phase) ?? []) this.dispatch(pass, d, slot);
  }

  /**
   * Records phases in order into compute passes of at most `budgetFlops` estimated FLOPs each (a
   * dispatch over the budget alone), one submit per pass, cutting only between dispatches: the
   * same dispatches in the same order, so the same results, while no submit runs long enough to
   * trip a GPU watchdog (Windows resets a device whose work runs ~2 s). Returns the submits made.
   */
  submitSplit(items: PhaseAt[], budgetFlops: number, opts: SubmitSplitOptions = {}): number {
    if (!this.staticBuffer) throw new Error(`${this.label}: encode before finalize`);
    const groups: { d: Dispatch; slot: number }[][] = [[]];
    let acc = 0;
    for (const { phase, slot } of items) {
      this.checkSlot(slot);
      for (const d of this.phases.get(phase) ?? []) {
        // Dispatches of no counted work never start a submit: they ride with the one before (or,
        // leading, with the next), so no submit is spent on them alone.
        if (acc > 0 && d.flops > 0 && acc + d.flops > budgetFlops) {
          groups.push([]);
          acc = 0;
        }
        groups[groups.length - 1].push({ d, slot });
        acc += d.flops;
      }
    }
    const ts = opts.timestamps;
    groups.forEach((group, i) => {
      const last = i === groups.length - 1;
      const enc = this.device.createCommandEncoder({
        label: `${opts.label ?? this.label}${groups.length > 1 ? ` (${i + 1}/${groups.length})` : ''}`,
      });
      if (i === 0) opts.before?.(enc);
      const timestampWrites =
        ts && (i === 0 || last)
          ? {
              querySet: ts.querySet,
              ...(i === 0 ? { beginningOfPassWriteIndex: ts.begin } : {}),
              ...(last ? { endOfPassWriteIndex: ts.end } : {}),
            }
          : undefined;
      const pass = enc.beginComputePass(timestampWrites ? { timestampWrites } : undefined);
      for (const { d, slot } of group) this.dispatch(pass, d, slot);
      pass.end();
      if (last) opts.after?.(enc);
      this.device.queue.submit([enc.finish()]);
    });
    return groups.length;
  }

  private checkSlot(slot: number): void {
    if (slot < 0 || slot >= this.slots) throw new Error(`${this.label}: slot ${slot} outside [0, ${this.slots})`);
  }

  private dispatch(pass: GPUComputePassEncoder, d: Dispatch, slot: number): void {
    pass.setPipeline(d.pipeline);
    if (d.dynamic) pass.setBindGroup(0, d.bindGroup, [slot * DYN_SLOT_BYTES]);
    else pass.setBindGroup(0, d.bindGroup);
    pass.dispatchWorkgroups(...d.workgroups);
  }

  dispose(): void {
    for (const b of this.owned) b.destroy();
    this.owned.length = 0;
    this.phases.clear();
  }
}
