import { defineConfig } from 'vitest/config';

// Browser tests: Debian's Chromium driven by playwright-core against the production build,
// served by `vite preview` on localhost (WebGPU needs a secure context; localhost is one).
export default defineConfig({
  test: {
    include: ['e2e/**/*.e2e.ts'],
    globalSetup: ['e2e/serve.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // One browser at a time: CI has 2 cores and SwiftShader is CPU-bound.
    fileParallelism: false,
  },
});
