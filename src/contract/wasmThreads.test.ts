import { describe, expect, it } from 'vitest';
import { describeWasmThreads, tfjsWasmThreadCap, wasmThreadRequest } from './wasmThreads';

describe('wasm threads', () => {
  it('asks for every logical core only where threads can run', () => {
    expect(wasmThreadRequest({ node: false, isolated: true, cores: 8 })).toBe(8);
    expect(wasmThreadRequest({ node: false, isolated: false, cores: 8 })).toBe(1);
    expect(wasmThreadRequest({ node: true, isolated: true, cores: 8 })).toBe(1);
    expect(wasmThreadRequest({ node: false, isolated: true, cores: 0 })).toBe(1);
  });

  it("knows tfjs-wasm's own cap: half the logical cores, 1 to 8 (backend.cc init_with_threads_count)", () => {
    expect([1, 2, 3, 4, 8, 16, 32].map(tfjsWasmThreadCap)).toEqual([1, 1, 1, 2, 4, 8, 8]);
  });

  it('says why: not isolated, Node, no threaded binary, isolated', () => {
    expect(describeWasmThreads({ node: false, isolated: false, cores: 8 }, 1, false).why).toMatch(
      /^1 thread: the page is not cross-origin isolated/,
    );
    expect(describeWasmThreads({ node: true, isolated: false, cores: 8 }, 1, false).why).toMatch(
      /Node build is single-threaded/,
    );
    expect(describeWasmThreads({ node: false, isolated: true, cores: 8 }, 1, false).why).toMatch(/lacks SIMD/);
    expect(describeWasmThreads({ node: false, isolated: true, cores: 8 }, 4, true)).toEqual({
      threads: 4,
      threaded: true,
      why: '4 threads: cross-origin isolated, so the threaded SIMD build runs, one thread per two of the 8 logical cores (tfjs-wasm assumes two per physical core; at most 8)',
    });
  });
});
