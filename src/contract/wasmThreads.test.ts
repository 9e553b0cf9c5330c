import { describe, expect, it } from 'vitest';
import {
  describeWasmThreads,
  MIN_CORES_FOR_THREADS,
  threadedBuildWanted,
  tfjsWasmThreadCap,
  wasmThreadRequest,
} from './wasmThreads';

const page = (cores: number, isolated = true) => ({ node: false, isolated, cores });

describe('wasm threads', () => {
  it('runs the threaded build only on an isolated page with 4 or more logical cores', () => {
    expect(MIN_CORES_FOR_THREADS).toBe(4);
    expect([1, 2, 3, 4, 8].map((c) => threadedBuildWanted(page(c)))).toEqual([false, false, false, true, true]);
    expect(threadedBuildWanted(page(8, false))).toBe(false);
    expect(threadedBuildWanted({ node: true, isolated: true, cores: 8 })).toBe(false);
  });

  it('asks for one thread per physical core there, else 1', () => {
    expect([1, 2, 3, 4, 6, 8, 16, 32].map((c) => wasmThreadRequest(page(c)))).toEqual([1, 1, 1, 2, 3, 4, 8, 8]);
    expect(wasmThreadRequest(page(8, false))).toBe(1);
    expect(wasmThreadRequest({ node: true, isolated: true, cores: 8 })).toBe(1);
    expect(wasmThreadRequest(page(0))).toBe(1);
  });

  it("knows tfjs-wasm's own cap: half the logical cores, 1 to 8 (backend.cc init_with_threads_count)", () => {
    expect([1, 2, 3, 4, 8, 16, 32].map(tfjsWasmThreadCap)).toEqual([1, 1, 1, 2, 4, 8, 8]);
  });

  it('says why: not isolated, Node, too few cores, no threaded binary, threaded', () => {
    expect(describeWasmThreads(page(8, false), 1, false).why).toMatch(
      /^1 thread: the page is not cross-origin isolated/,
    );
    expect(describeWasmThreads({ node: true, isolated: false, cores: 8 }, 1, false).why).toMatch(
      /Node build is single-threaded/,
    );
    expect(describeWasmThreads(page(2), 1, false).why).toBe(
      '1 thread: 2 logical cores: the single-threaded SIMD build, which ran 3-4x faster than 2 threads on a 2-core machine (threads from 4 cores)',
    );
    expect(describeWasmThreads(page(8), 1, false).why).toMatch(/lacks SIMD/);
    expect(describeWasmThreads(page(8), 4, true)).toEqual({
      threads: 4,
      threaded: true,
      why: '4 threads: cross-origin isolated, so the threaded SIMD build runs on 4 of the 8 logical cores (one per physical core, as tfjs-wasm sizes it)',
    });
    expect(describeWasmThreads(page(16), 8, true).why).toMatch(/8 of the 16 logical cores .*; 8 at most\)$/);
  });
});
