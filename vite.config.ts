/// <reference types="vitest/config" />
import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';
import { availableParallelism } from 'node:os';

// WGSL sources import as text with `?raw`; the worker is an ES module so it can share
// the app's imports (tfjs, kernels) without a second bundle format.
// Two pages: the lab (index.html) and the test harness (dev/harness/index.html: the lab on a
// worker with the checks and benchmarks, for the browser tests). The lab never loads the harness.
export default defineConfig({
  plugins: [react()],
  worker: { format: 'es' },
  build: {
    target: 'es2022',
    sourcemap: true,
    chunkSizeWarningLimit: 4096,
    rollupOptions: { input: { lab: 'index.html', harness: 'dev/harness/index.html' } },
  },
  preview: { host: '127.0.0.1' },
  server: { host: '127.0.0.1' },
  // Unit tests run in Node on the tfjs CPU backend (dev/test/setup.ts); e2e/ has its own config.
  test: {
    include: ['src/**/*.test.ts', 'dev/**/*.test.ts'],
    setupFiles: ['dev/test/setup.ts'],
    testTimeout: 60_000,
    pool: 'forks',
    // One worker per core. Vitest's default is cores - 1 (it leaves one to its main process, which
    // only schedules here), so on CI's 2 cores the unit files ran one at a time: the last CI log's
    // unit run took 527 s of wall for 445 s of summed file times plus 57 s of setup and imports.
    maxWorkers: availableParallelism(),
  },
});
