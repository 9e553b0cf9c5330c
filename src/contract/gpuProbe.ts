// Capability probe: what the WebGPU adapter offers, read once and passed around as plain data
// (it crosses the worker boundary, so no GPU objects in here). Reading the adapter is engine/probe.ts.

export interface GpuLimits {
  maxStorageBufferBindingSize: number;
  maxBufferSize: number;
  maxComputeWorkgroupStorageSize: number;
  maxComputeInvocationsPerWorkgroup: number;
  maxComputeWorkgroupSizeX: number;
  maxComputeWorkgroupsPerDimension: number;
  maxStorageBuffersPerShaderStage: number;
}

export interface GpuFeatures {
  shaderF16: boolean;
  subgroups: boolean;
  timestampQuery: boolean;
}

export interface GpuProbe {
  available: boolean;
  /** Why WebGPU is unusable, when it is. */
  reason: string | null;
  vendor: string;
  architecture: string;
  device: string;
  description: string;
  isFallbackAdapter: boolean;
  features: GpuFeatures;
  /** Every feature name the adapter lists, for the full table. */
  featureNames: string[];
  limits: GpuLimits | null;
}

const LIMIT_KEYS: (keyof GpuLimits)[] = [
  'maxStorageBufferBindingSize',
  'maxBufferSize',
  'maxComputeWorkgroupStorageSize',
  'maxComputeInvocationsPerWorkgroup',
  'maxComputeWorkgroupSizeX',
  'maxComputeWorkgroupsPerDimension',
  'maxStorageBuffersPerShaderStage',
];

/** The parts of a GPUAdapter the probe reads; a structural type so tests can pass a fake. */
export interface AdapterLike {
  features: { has(name: string): boolean; forEach?(cb: (v: string) => void): void } & Iterable<string>;
  limits: Record<string, number> | GPUSupportedLimits;
  info?: { vendor?: string; architecture?: string; device?: string; description?: string; isFallbackAdapter?: boolean };
  isFallbackAdapter?: boolean;
}

export function unavailableProbe(reason: string): GpuProbe {
  return {
    available: false,
    reason,
    vendor: '',
    architecture: '',
    device: '',
    description: '',
    isFallbackAdapter: false,
    features: { shaderF16: false, subgroups: false, timestampQuery: false },
    featureNames: [],
    limits: null,
  };
}

export function describeAdapter(adapter: AdapterLike): GpuProbe {
  const limits = {} as GpuLimits;
  const source = adapter.limits as unknown as Record<string, number>;
  for (const key of LIMIT_KEYS) limits[key] = Number(source[key] ?? 0);
  const info = adapter.info ?? {};
  return {
    available: true,
    reason: null,
    vendor: info.vendor ?? '',
    architecture: info.architecture ?? '',
    device: info.device ?? '',
    description: info.description ?? '',
    isFallbackAdapter: Boolean(info.isFallbackAdapter ?? adapter.isFallbackAdapter ?? false),
    features: {
      shaderF16: adapter.features.has('shader-f16'),
      subgroups: adapter.features.has('subgroups'),
      timestampQuery: adapter.features.has('timestamp-query'),
    },
    featureNames: [...adapter.features].sort(),
    limits,
  };
}
