import { describe, expect, it } from 'vitest';
import { backendCandidates, describeChoice, parseBackendOverride, tuningFor } from './backends';
import { describeAdapter, unavailableProbe, type AdapterLike } from './gpuProbe';

function fakeAdapter(features: string[], limits: Record<string, number>): AdapterLike {
  const set = new Set(features);
  return {
    features: set,
    limits,
    info: { vendor: 'google', architecture: 'swiftshader', device: '', description: 'test' },
  };
}

describe('capability probe', () => {
  it('reads features and limits from an adapter', () => {
    const p = describeAdapter(
      fakeAdapter(['timestamp-query', 'subgroups'], {
        maxStorageBufferBindingSize: 134217728,
        maxBufferSize: 268435456,
        maxComputeWorkgroupStorageSize: 16384,
        maxComputeInvocationsPerWorkgroup: 256,
      }),
    );
    expect(p.available).toBe(true);
    expect(p.vendor).toBe('google');
    expect(p.architecture).toBe('swiftshader');
    expect(p.features).toEqual({ shaderF16: false, subgroups: true, timestampQuery: true });
    expect(p.featureNames).toEqual(['subgroups', 'timestamp-query']);
    expect(p.limits?.maxStorageBufferBindingSize).toBe(134217728);
    expect(p.limits?.maxComputeWorkgroupStorageSize).toBe(16384);
  });
});

describe('backend selection', () => {
  it('reads ?backend= and names a bad value', () => {
    expect(parseBackendOverride('?backend=wasm')).toBe('wasm');
    expect(parseBackendOverride('?x=1')).toBeNull();
    expect(parseBackendOverride('?backend=CPU')).toBe('cpu');
    expect(() => parseBackendOverride('?backend=cuda')).toThrow(/backend=cuda/);
  });

  it('orders webgpu -> webgl -> wasm -> cpu and skips WebGPU when the probe found none', () => {
    const gpu = describeAdapter(fakeAdapter([], {}));
    expect(backendCandidates('auto', gpu)).toEqual(['webgpu', 'webgl', 'wasm', 'cpu']);
    expect(backendCandidates('auto', unavailableProbe('none'))).toEqual(['webgl', 'wasm', 'cpu']);
  });

  it('tries a forced backend first and keeps the rest as fallbacks', () => {
    expect(backendCandidates('wasm', null)).toEqual(['wasm', 'webgpu', 'webgl', 'cpu']);
  });

  it('explains a fallback and what it costs', () => {
    const forced = describeChoice('cpu', 'cpu', [{ backend: 'cpu', error: null }], null);
    expect(forced.fellBack).toBe(true);
    expect(forced.banner).toMatch(/Running on cpu, forced by the backend setting/);
    const noGpu = describeChoice('auto', 'webgl', [], unavailableProbe('navigator.gpu is missing'));
    expect(noGpu.banner).toMatch(/WebGPU is unavailable: navigator.gpu is missing/);
    expect(noGpu.banner).toMatch(/no custom WGSL kernels/);
    expect(describeChoice('auto', 'webgpu', [], null).banner).toBeNull();
  });
});

describe('per-adapter tuning', () => {
  it('uses the tiled matmul on a software (SwiftShader) adapter only', () => {
    const swift = describeAdapter(fakeAdapter([], {}));
    expect(tuningFor('webgpu', swift).map((t) => [t.flag, t.value])).toEqual([['WEBGPU_MATMUL_PROGRAM_TYPE', 3]]);
    const hw = describeAdapter({ ...fakeAdapter([], {}), info: { vendor: 'nvidia', architecture: 'ada' } });
    expect(tuningFor('webgpu', hw)).toEqual([]);
    expect(tuningFor('wasm', swift)).toEqual([]);
  });
});
