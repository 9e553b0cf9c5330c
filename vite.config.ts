/// <reference types="vitest/config" />
import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';
import { VitePWA } from 'vite-plugin-pwa';
import { availableParallelism } from 'node:os';
import { ISOLATION_HEADERS } from './src/ui/offline/isolationHeaders.ts';
import { wasmThreadGuard } from './dev/build/wasmThreadGuard.ts';
import { headersFile } from './dev/build/headersFile.ts';

// Cross-origin isolation (SharedArrayBuffer, so tfjs-wasm can run its threaded SIMD build where
// there are cores to gain from it: src/contract/wasmThreads.ts): COOP same-origin + COEP credentialless from the dev and preview servers. `credentialless`,
// not `require-corp`: hub downloads are CORS fetches and keep working, and a cross-origin file
// without a CORP header still loads (without cookies). Hosts that cannot set headers get the same
// from the service worker (src/ui/offline/sw.ts); Netlify and Cloudflare Pages read the same from the
// build's `_headers` file (dev/build/headersFile.ts); docs/guides/deploy.md.
// WGSL sources import as text with `?raw`; the worker is an ES module so it can share
// the app's imports (tfjs, kernels) without a second bundle format.
// `npm run build` (mode production) writes the lab only: the folder to deploy. `npm run build:harness`
// (mode harness) adds the test harness page (dev/harness/index.html: the lab on a worker with the
// checks and benchmarks, for the browser tests) and leaves the service worker out, so the browser
// tests load every file from the server they start. The lab never loads the harness.
// base './': every URL in the build is relative, so one folder works at any path of any host
// (src/contract/siteRoot.ts resolves the models and the service worker the same way).
// Source maps (43 MB of a 58 MB build) only with SPARRING_SOURCEMAP=1.
export default defineConfig(({ mode }) => {
  const harness = mode === 'harness';
  const inputs: Record<string, string> = { lab: 'index.html' };
  if (harness) inputs.harness = 'dev/harness/index.html';
  return {
    base: './',
    define: {
      __SPARRING_BUILD__: JSON.stringify(process.env.SPARRING_BUILD_ID ?? process.env.npm_package_version ?? 'dev'),
    },
    plugins: [
      react(),
      wasmThreadGuard(),
      headersFile(ISOLATION_HEADERS),
      VitePWA({
        disable: harness,
        strategies: 'injectManifest',
        srcDir: 'src/ui/offline',
        filename: 'sw.ts',
        // Registered by src/ui/offline/registerOffline.ts (the update prompt, the isolation reload).
        injectRegister: false,
        manifest: false,
        injectManifest: {
          // The app shell, the wasm binaries and the four sandbox models (7.4 MB, 1.9 MB per weights file).
          globPatterns: ['**/*.{html,js,css,svg,wasm,json,safetensors}'],
          globIgnores: ['dev/**', '**/*.map'],
          maximumFileSizeToCacheInBytes: 8 * 1024 * 1024,
          // A classic script: registered without { type: 'module' }, which older Safari and Firefox lack.
          rollupFormat: 'iife',
        },
      }),
    ],
    // The engine worker bundles tfjs-wasm: the thread guard applies there (workers have their own plugins).
    worker: { format: 'es', plugins: () => [wasmThreadGuard()] },
    build: {
      target: 'es2022',
      sourcemap: process.env.SPARRING_SOURCEMAP === '1',
      chunkSizeWarningLimit: 4096,
      rollupOptions: { input: inputs },
    },
    preview: { host: '127.0.0.1', headers: ISOLATION_HEADERS },
    server: { host: '127.0.0.1', headers: ISOLATION_HEADERS },
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
  };
});
