import { describe, expect, it } from 'vitest';
import {
  coresToPresent,
  describeWasmThreads,
  tfjsWasmThreadCap,
  wasmThreadRequest,
  wasmThreadsExpected,
} from './wasmThreads';

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

  it('shows tfjs twice the cores, so its halving leaves one thread per logical core, up to its 8', () => {
    const cores = [1, 2, 3, 4, 6, 8, 12, 16, 32];
    expect(cores.map(coresToPresent)).toEqual([2, 4, 6, 8, 12, 16, 16, 16, 16]);
    expect(cores.map(wasmThreadsExpected)).toEqual([1, 2, 3, 4, 6, 8, 8, 8, 8]);
    // Without it: tfjs's own halving of the real count.
    expect(cores.map(tfjsWasmThreadCap)).toEqual([1, 1, 1, 2, 3, 4, 6, 8, 8]);
  });

  it('says why: not isolated, Node, no threaded binary, isolated', () => {
    expect(describeWasmThreads({ node: false, isolated: false, cores: 8 }, 1, false).why).toMatch(
      /^1 thread: the page is not cross-origin isolated/,
    );
    expect(describeWasmThreads({ node: true, isolated: false, cores: 8 }, 1, false).why).toMatch(
      /Node build is single-threaded/,
    );
    expect(describeWasmThreads({ node: false, isolated: true, cores: 8 }, 1, false).why).toMatch(/lacks SIMD/);
    expect(describeWasmThreads({ node: false, isolated: true, cores: 2 }, 2, true)).toEqual({
      threads: 2,
      threaded: true,
      why: '2 threads: cross-origin isolated, so the threaded SIMD build runs on every logical core (2)',
    });
    expect(describeWasmThreads({ node: false, isolated: true, cores: 16 }, 8, true).why).toBe(
      '8 threads: cross-origin isolated, so the threaded SIMD build runs on 8 of the 16 logical cores (tfjs-wasm runs at most 8)',
    );
  });
});
