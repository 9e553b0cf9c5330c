// Bundles dev/bench/gpuBench.ts with tfjs and the WGSL sources into one Node script
// (.gpu-bench/app/gpuBench.mjs), so it runs with a bare `node` on a GPU machine; only the
// `webgpu` package (Dawn) stays outside the bundle.
import { build } from 'vite';

await build({
  configFile: false,
  logLevel: 'warn',
  publicDir: false,
  ssr: { noExternal: true, external: ['webgpu'] },
  build: {
    ssr: 'dev/bench/gpuBench.ts',
    outDir: '.gpu-bench/app',
    emptyOutDir: true,
    target: 'node20',
    rollupOptions: { external: ['webgpu'], output: { entryFileNames: '[name].mjs' } },
  },
});
console.log('built .gpu-bench/app/gpuBench.mjs');
