import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

// Synchronous readbacks (dataSync / arraySync / bufferSync) stall the GPU pipeline, and
// tfjs-webgpu's goes through an OffscreenCanvas that lost the device in Chromium here. Code that
// runs in the engine worker reads tensors back with `await t.data()` only.
const ROOT = join(import.meta.dirname, '../../src');
const WORKER_SIDE = ['engine', 'model', 'rl', 'recipes', 'judges', 'worker'];
// The harness worker's checks and benchmarks, and the test utilities, run there too (dev/).
const DEV_WORKER_SIDE = ['harness', 'bench', 'test'].map((d) => join('..', 'dev', d));

// A line that runs only on the CPU backends (wasm, cpu: rl/optim.ts's host AdamW behind
// adamwOnHost) says so with this trailing comment: there a readback is a copy out of wasm memory,
// not a GPU stall, and the host optimiser saves 718 of 2,426 kernels a learning step.
const CPU_BACKEND_READBACK = '// cpu-backend readback';

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return /\.tsx?$/.test(name) && !/\.test\.tsx?$/.test(name) ? [path] : [];
  });
}

describe('no synchronous readbacks in worker-side code', () => {
  it('finds no dataSync / arraySync / bufferSync outside tests', () => {
    const offenders: string[] = [];
    for (const area of [...WORKER_SIDE, ...DEV_WORKER_SIDE]) {
      for (const file of sources(join(ROOT, area))) {
        readFileSync(file, 'utf8')
          .split('\n')
          .forEach((line, i) => {
            if (
              /\.(dataSync|arraySync|bufferSync)\(/.test(line) &&
              !line.trim().startsWith('//') &&
              !line.endsWith(CPU_BACKEND_READBACK)
            )
              offenders.push(`${relative(ROOT, file)}:${i + 1}`);
          });
      }
    }
    expect(offenders).toEqual([]);
  });
});
