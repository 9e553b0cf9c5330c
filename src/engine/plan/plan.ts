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
}

interface Dispatch {
  pipeline: GPUComputePipeline;
  bindGroup: GPUBindGroup;
  workgroups: [number, number, number];
  dynamic: boolean;
}

/** Bytes between per-token uniform slots: WebGPU's minUniformBufferOffsetAlignment ceiling. */
export const DYN_SLOT_BYTES = 256;
const ALIGN = 256;

export const alignUp = (n: number, a = ALIGN): number => Math.ceil(n / a) * a;

export class GpuPlan {
  private readonly owned: GPUBuffer[] = [];
  private readonly pending: Pending[] = [];
  private readonly phases = new Map<string, Dispatch[]>();
  private staticBuffer: GPUBuffer | null = null;
  /** The per-token uniform: `slots` slots of DYN_SLOT_BYTES, written once per run. */
  readonly dyn: GPUBuffer;
  /** Bytes of every buffer the plan owns (not the weights it borrows). */
  bytes = 0;

  constructor(
    readonly device: GPUDevice,
    readonly slots: number,
    readonly label = 'plan',
  ) {
    this.dyn = this.buffer('dyn', slots * DYN_SLOT_BYTES, GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST);
  }

  /** A buffer the plan owns (zero-filled by WebGPU). */
  buffer(
    name: string,
    bytes: number,
    usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC,
  ): GPUBuffer {
    const size = alignUp(Math.max(bytes, 4), 16);
    const b = this.device.createBuffer({ label: `${this.label}:${name}`, size, usage });
    this.owned.push(b);
    this.bytes += size;
    return b;
  }

  add(phase: string, kernel: PlanKernel, values: BindingValue[], workgroups: [number, number, number]): void {
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
    this.pending.push({ phase, kernel: compileKernel(this.device, kernel), values, workgroups });
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
      const bindGroup = this.device.createBindGroup({ label: p.kernel.kernel.key, layout: p.kernel.layout, entries });
      const list = this.phases.get(p.phase) ?? [];
      list.push({
        pipeline: p.kernel.pipeline,
        bindGroup,
        workgroups: p.workgroups,
        dynamic: p.values.includes('dyn'),
      });
      this.phases.set(p.phase, list);
    });
    this.pending.length = 0;
  }

  /** Dispatches of a phase (0 if it has none). */
  count(phase: string): number {
    return this.phases.get(phase)?.length ?? 0;
  }

  /** Records a phase's dispatches into an open compute pass, reading per-token slot `slot`. */
  encode(pass: GPUComputePassEncoder, phase: string, slot: number): void {
    if (!this.staticBuffer) throw new Error(`${this.label}: encode before finalize`);
    if (slot < 0 || slot >= this.slots) throw new Error(`${this.label}: slot ${slot} outside [0, ${this.slots})`);
    const offset = [slot * DYN_SLOT_BYTES];
    for (const d of this.phases.get(phase) ?? []) {
      pass.setPipeline(d.pipeline);
      if (d.dynamic) pass.setBindGroup(0, d.bindGroup, offset);
      else pass.setBindGroup(0, d.bindGroup);
      pass.dispatchWorkgroups(...d.workgroups);
    }
  }

  dispose(): void {
    for (const b of this.owned) b.destroy();
    this.owned.length = 0;
    this.phases.clear();
  }
}
