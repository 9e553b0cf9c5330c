import { defineConfig } from 'vitest/config';

// The lavapipe lane: the Node + Dawn kernel and plan tests again on Mesa's lavapipe Vulkan driver
// with the GPU kernel variants forced (e2e/dawnLane.ts), after the SwiftShader run of the same
// files in `npm run test:e2e`. No browser, so no preview server. `.ci/run` runs it; by hand:
// `npx vitest run --config e2e/vitest.lavapipe.config.ts` (needs bookworm-backports'
// mesa-vulkan-drivers: docs/contributing.md).
export default defineConfig({
  test: {
    include: ['e2e/dawn.e2e.ts', 'e2e/plan.e2e.ts', 'e2e/benchCheck.e2e.ts'],
    env: { SPARRING_VULKAN: 'lavapipe', SPARRING_KERNELS: 'gpu' },
    testTimeout: 300_000,
    hookTimeout: 120_000,
    fileParallelism: false,
  },
});
