import { describe, expect, it } from 'vitest';
import {
  backendCandidates,
  backendCost,
  describeChoice,
  parseBackendOverride,
  softwareAdapterName,
  tuningFor,
} from './backends';
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
    expect(() => parseBackendOverride('?backend=cuda')).toThrow(
      "The link's backend=cuda is not a backend (allowed: auto, webgpu, webgl, wasm, cpu)",
    );
  });

  it('orders webgpu -> webgl -> wasm -> cpu and skips WebGPU when the probe found none', () => {
    const gpu = describeAdapter({ ...fakeAdapter([], {}), info: { vendor: 'nvidia', architecture: 'ada' } });
    expect(backendCandidates('auto', gpu)).toEqual(['webgpu', 'webgl', 'wasm', 'cpu']);
    expect(backendCandidates('auto', unavailableProbe('none'))).toEqual(['webgl', 'wasm', 'cpu']);
  });

  it('tries a forced backend first and keeps the rest as fallbacks', () => {
    expect(backendCandidates('wasm', null)).toEqual(['wasm', 'webgpu', 'webgl', 'cpu']);
  });

  it("falls from a forced backend in auto's measured order: wasm before a software WebGPU adapter", () => {
    const swift = describeAdapter({ ...fakeAdapter([], {}), info: { vendor: 'google', architecture: 'swiftshader' } });
    expect(backendCandidates('webgl', swift)).toEqual(['webgl', 'wasm', 'webgpu', 'cpu']);
    const metal = describeAdapter({ ...fakeAdapter([], {}), info: { vendor: 'apple', architecture: 'metal-3' } });
    expect(backendCandidates('webgl', metal)).toEqual(['webgl', 'webgpu', 'wasm', 'cpu']);
    // No WebGPU found: still tried, last.
    expect(backendCandidates('webgl', unavailableProbe('none'))).toEqual(['webgl', 'wasm', 'cpu', 'webgpu']);
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

const hardware = () => describeAdapter({ ...fakeAdapter([], {}), info: { vendor: 'apple', architecture: 'metal-3' } });
const software = (info: AdapterLike['info'], isFallbackAdapter = false) =>
  describeAdapter({ ...fakeAdapter([], {}), info, isFallbackAdapter });

describe('a software WebGPU adapter', () => {
  it('names SwiftShader, llvmpipe, lavapipe, WARP and any adapter the browser marks as a fallback', () => {
    expect(softwareAdapterName(software({ vendor: 'google', architecture: 'swiftshader' }))).toBe('SwiftShader');
    // WebGPU reaches llvmpipe only through lavapipe (Vulkan): an llvmpipe device is lavapipe.
    expect(softwareAdapterName(software({ vendor: 'mesa', device: 'llvmpipe (LLVM 15.0.6, 256 bits)' }))).toBe(
      'lavapipe',
    );
    expect(softwareAdapterName(software({ description: 'lavapipe: Mesa 23 (LLVM 15) llvmpipe' }))).toBe('lavapipe');
    expect(softwareAdapterName(software({ description: 'Microsoft Basic Render Driver' }))).toBe('WARP');
    expect(softwareAdapterName(software({ vendor: 'acme' }, true))).toBe('a fallback adapter');
    expect(softwareAdapterName(hardware())).toBeNull();
    expect(softwareAdapterName(unavailableProbe('none'))).toBeNull();
    expect(softwareAdapterName(null)).toBeNull();
  });

  it('makes auto try wasm first (3-7x faster there), webgpu still second; a forced backend keeps its place', () => {
    const swift = software({ vendor: 'google', architecture: 'swiftshader' });
    expect(backendCandidates('auto', swift)).toEqual(['wasm', 'webgpu', 'webgl', 'cpu']);
    expect(backendCandidates('auto', software({ vendor: 'acme' }, true))[0]).toBe('wasm');
    expect(backendCandidates('webgpu', swift)).toEqual(['webgpu', 'wasm', 'webgl', 'cpu']);
    expect(backendCandidates('auto', hardware())[0]).toBe('webgpu');
  });

  it('says why wasm was picked, with the figures, and how to force webgpu', () => {
    const swift = software({ vendor: 'google', architecture: 'swiftshader' });
    const r = describeChoice('auto', 'wasm', [{ backend: 'wasm', error: null }], swift);
    expect(r.fellBack).toBe(true);
    expect(r.reason).toMatch(/WebGPU adapter here is SwiftShader, a software renderer/);
    expect(r.banner).toMatch(/^Running on wasm, picked because/);
    expect(r.banner).toMatch(/47-52 s on webgpu against about 7 s on wasm/);
    expect(r.banner).toMatch(/\?backend=webgpu/);
    expect(r.banner).not.toMatch(/20-100x slower/);
  });

  it('names what failed when wasm could not start and the software adapter runs after all', () => {
    const swift = software({ vendor: 'google', architecture: 'swiftshader' });
    const attempts = [
      { backend: 'wasm' as const, error: 'no SIMD' },
      { backend: 'webgpu' as const, error: null },
    ];
    const r = describeChoice('auto', 'webgpu', attempts, swift);
    expect(r.banner).toMatch(
      /^Running on webgpu, after wasm failed: no SIMD\. Slow here: the WebGPU adapter is SwiftShader/,
    );
  });

  it('never calls WebGPU on a software adapter full speed, forced or not', () => {
    const swift = software({ vendor: 'google', architecture: 'swiftshader' });
    const forced = describeChoice('webgpu', 'webgpu', [{ backend: 'webgpu', error: null }], swift);
    expect(forced.fellBack).toBe(true);
    expect(forced.banner).toMatch(/^Running on webgpu, forced by the backend setting \(webgpu\)\. Slow here/);
    expect(forced.banner).not.toMatch(/Full speed/);
    expect(backendCost('webgpu', swift)).not.toMatch(/Full speed/);
    expect(backendCost('webgpu', swift)).toMatch(/SwiftShader/);
    // On a hardware adapter webgpu is full speed and needs no banner.
    expect(backendCost('webgpu', hardware())).toMatch(/^Full speed/);
    const hw = describeChoice('auto', 'webgpu', [{ backend: 'webgpu', error: null }], hardware());
    expect([hw.fellBack, hw.banner]).toEqual([false, null]);
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
