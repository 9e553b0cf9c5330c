/// <reference types="vitest/config" />
import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

// WGSL sources import as text with `?raw`; the worker is an ES module so it can share
// the app's imports (tfjs, kernels) without a second bundle format.
export default defineConfig({
  plugins: [react()],
  worker: { format: 'es' },
  build: { target: 'es2022', sourcemap: true, chunkSizeWarningLimit: 4096 },
  preview: { host: '127.0.0.1' },
  server: { host: '127.0.0.1' },
  // Unit tests run in Node on the tfjs CPU backend (src/test/setup.ts); e2e/ has its own config.
  test: {
    include: ['src/**/*.test.ts', 'dev/**/*.test.ts'],
    setupFiles: ['src/test/setup.ts'],
    testTimeout: 60_000,
    pool: 'forks',
  },
});
