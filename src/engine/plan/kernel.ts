// A planned kernel: a whole WGSL module whose bindings are declared here, not by tfjs, so a plan
// can build its bind groups once (explicit layouts, dynamic offsets for the per-token uniform)
// and replay them. Pipelines are compiled once per device and source.

/** One binding of group 0, in order. `dyn`: the per-token uniform, bound with a dynamic offset. */
export interface BindingSpec {
  name: string;
  kind: 'uniform' | 'dyn' | 'read' | 'rw';
  /** WGSL type of the binding, e.g. 'Gemv' or 'array<f32>'. */
  type: string;
}

export interface PlanKernel {
  /** Distinguishes compiled pipelines: equal keys must mean equal sources and bindings. */
  key: string;
  bindings: BindingSpec[];
  /** WGSL after the binding declarations (structs it names must be defined in it). */
  body: string;
  /** Optional text placed before the bindings (e.g. `enable subgroups;`). */
  prelude?: string;
  /** Entry point; default 'main'. */
  entry?: string;
}

/** WebGPU's guaranteed minimum of storage buffers a compute stage may bind. */
export const STORAGE_BINDINGS_FLOOR = 8;

/** Directives (`enable subgroups;`) must precede every declaration: lift them out of the parts. */
function hoistDirectives(src: string): { directives: string; rest: string } {
  const directives: string[] = [];
  const rest = src.replace(/^\s*enable\s+[\w\s,]+;\s*$/gm, (d) => {
    directives.push(d.trim());
    return '';
  });
  return { directives: [...new Set(directives)].join('\n'), rest };
}

export function kernelSource(k: PlanKernel): string {
  const decl = k.bindings.map((b, i) => {
    const space =
      b.kind === 'uniform' || b.kind === 'dyn'
        ? 'uniform'
        : b.kind === 'read'
          ? 'storage, read'
          : 'storage, read_write';
    return `@group(0) @binding(${i}) var<${space}> ${b.name} : ${b.type};`;
  });
  const { directives, rest } = hoistDirectives(`${k.prelude ?? ''}\n${decl.join('\n')}\n${k.body}`);
  return `${directives}\n${rest}`;
}

export interface CompiledKernel {
  pipeline: GPUComputePipeline;
  layout: GPUBindGroupLayout;
  kernel: PlanKernel;
}

const compiled = new WeakMap<GPUDevice, Map<string, CompiledKernel>>();

export function compileKernel(device: GPUDevice, k: PlanKernel): CompiledKernel {
  let cache = compiled.get(device);
  if (!cache) compiled.set(device, (cache = new Map()));
  const hit = cache.get(k.key);
  if (hit) return hit;
  const storage = k.bindings.filter((b) => b.kind === 'read' || b.kind === 'rw').length;
  if (storage > STORAGE_BINDINGS_FLOOR) {
    throw new Error(
      `planned kernel ${k.key}: ${storage} storage bindings, more than the ${STORAGE_BINDINGS_FLOOR} every WebGPU device allows`,
    );
  }
  const layout = device.createBindGroupLayout({
    label: k.key,
    entries: k.bindings.map((b, i) => ({
      binding: i,
      visibility: GPUShaderStage.COMPUTE,
      buffer: {
        type:
          b.kind === 'uniform' || b.kind === 'dyn' ? 'uniform' : b.kind === 'read' ? 'read-only-storage' : 'storage',
        hasDynamicOffset: b.kind === 'dyn',
      },
    })),
  });
  const module = device.createShaderModule({ label: k.key, code: kernelSource(k) });
  const pipeline = device.createComputePipeline({
    label: k.key,
    layout: device.createPipelineLayout({ bindGroupLayouts: [layout] }),
    compute: { module, entryPoint: k.entry ?? 'main' },
  });
  const c = { pipeline, layout, kernel: k };
  cache.set(k.key, c);
  return c;
}
