import { defineConfig } from 'vitest/config';

// The lavapipe lane: the Node + Dawn kernel and plan tests again on Mesa's lavapipe Vulkan driver
// with the GPU kernel variants forced (e2e/dawnLane.ts), after the SwiftShader run of the same
// files in `npm run test:e2e`. No browser, so no preview server. `.ci/run` runs it; by hand:
// `npx vitest run --config e2e/vitest.lavapipe.config.ts` (needs bookworm-backports'
// mesa-vulkan-drivers: docs/contributing.md, "The lavapipe lane").
//
// lavapipe compiles each pipeline with LLVM and turns every workgroup barrier into a coroutine
// suspend point, so a barrier-heavy kernel takes minutes to compile cold (LLVM's coroutine split
// dominated a stack sample). The token-stats row reductions are one kernel on every adapter, already
// run on SwiftShader: the lane leaves them out (with them dawn.e2e.ts had not finished after 35
// minutes on the shared 2-core machine) and keeps what differs on a GPU: the split-K GEMVs, the
// planned decode's split GEMV, workgroup and split-K attention, the bench's check. Measured cold
// (empty Mesa cache) on the shared 2-core machine at load 15, before the thread and tile GEMV tests
// were left out: plan.e2e.ts 19 min 23 s wall, 8 min 56 s CPU, 70% of it compiling the split GEMVs.
// Mesa keeps compiled shaders in ~/.cache/mesa_shader_cache_db: a machine that keeps it pays once.
export default defineConfig({
  test: {
    include: ['e2e/dawn.e2e.ts', 'e2e/plan.e2e.ts', 'e2e/benchCheck.e2e.ts', 'e2e/plannedGemm.e2e.ts'],
    // Also out: plan.e2e.ts's forced software layouts (thread and tile GEMVs), run on SwiftShader,
    // and its f16-with-LoRA case over each GEMV layout: two of its three layouts are those, and its
    // split one is the f16 split GEMV and the LoRA split GEMV cases put together, both kept here.
    // Cold it cost ~30 CPU-s of the lane's ~570 (measured with an empty MESA_SHADER_CACHE_DIR).
    testNamePattern: /^(?!.*(row reduction|token-stats gradient|thread GEMV|tile GEMV|each GEMV layout)).*$/,
    env: { SPARRING_VULKAN: 'lavapipe', SPARRING_KERNELS: 'gpu' },
    // The first test of a file pays the cold compile of its kernels (over 300 s under load).
    testTimeout: 900_000,
    hookTimeout: 120_000,
    fileParallelism: false,
  },
});
