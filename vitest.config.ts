import { defineConfig } from 'vitest/config';

// Unit tests run in Node on the tfjs CPU backend (see src/test/setup.ts).
export default defineConfig({
  test: {
    include: ['src/**/*.test.ts'],
    setupFiles: ['src/test/setup.ts'],
    testTimeout: 60_000,
    pool: 'forks',
  },
});
