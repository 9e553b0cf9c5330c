// The new GPU kernels beside the ones they replace, timed on the adapter the Dawn tests run on
// (SwiftShader here): the split GEMV's sum-major reduction against its thread-major layout, the
// learn GEMM tiled against direct, and the planned tiled GEMM against the split GEMV. Ratios only,
// and not a GPU's: on SwiftShader workgroup memory has no banks and a barrier is a thread switch,
// so the GPU hazards these kernels remove cannot show here. A bench, not a test: it runs only with
// SPARRING_KERNEL_RATIOS=1 (every row), =planned (the planned GEMM's rows only) or =planned-software
// (the planned GEMM against the software adapters' own layout, the tile GEMV, instead of the split)
//   SPARRING_KERNEL_RATIOS=1 npx vitest run --config e2e/vitest.config.ts e2e/kernelRatios.e2e.ts
// and prints a markdown table (BENCHMARKS.md, "New GPU kernels on the software adapter").
import { describe, expect, it } from 'vitest';
import { useDawn } from './dawnSetup';
import { webgpuDevice } from '../src/engine/webgpu/wgslProgram';
import { GemvMode } from '../src/engine/plan/decodeKernels';
import { adapterDescription } from '../dev/bench/roofline';
import { gemmCase, gemvCase, threadMajorGemv } from '../dev/test/planKernelCases';
import { formatTable } from '../dev/bench/table';

useDawn();

const REPS = 3;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Median ms per dispatch of `run(times)`: (ms of 1 + n dispatches - ms of 1) / n, alternating the two sides. */
async function perDispatch(runs: ((times: number) => Promise<number>)[], n: number): Promise<number[]> {
  for (const r of runs) await r(1); // compile
  const ms: number[][] = runs.map(() => []);
  for (let i = 0; i < REPS; i++) for (const [j, r] of runs.entries()) ms[j].push(((await r(1 + n)) - (await r(1))) / n);
  return ms.map(median);
}

const which = process.env.SPARRING_KERNEL_RATIOS;
const plannedOnly = which === 'planned' || which === 'planned-software';
describe.runIf(which === '1' || plannedOnly)('new GPU kernels beside the old ones (ratios)', () => {
  it('prints the table', async () => {
    const device = webgpuDevice();
    const rows: (string | number)[][] = [];
    const gemvs = [
      { what: 'SmolLM2-135M gate+up 576 -> 1536, 8 rows', K: 576, N: 1536, mode: GemvMode.GateUp, norm: true },
      { what: 'SmolLM2-135M down 1536 -> 576, 8 rows', K: 1536, N: 576, mode: GemvMode.Plain, norm: false },
    ] as const;
    for (const g of plannedOnly ? [] : gemvs)
      for (const format of ['f32', 'int4'] as const) {
        const spec = { ...g, format, rows: 8, seed: 1 };
        const [now, before] = await perDispatch(
          [
            async (t) => (await gemvCase(device, spec, { times: t })).ms,
            async (t) => (await gemvCase(device, spec, { times: t, patch: threadMajorGemv })).ms,
          ],
          2,
        );
        rows.push([
          `split GEMV ${g.what}, ${format}`,
          'thread-major reduction',
          'sum-major',
          before,
          now,
          `${(before / now).toFixed(2)}x`,
        ]);
      }
    const gemms = [
      { what: '256 x 576 x 576 (x W^T)', M: 256, N: 576, K: 576, transB: true },
      { what: '512 x 576 x 1536 (x W^T)', M: 512, N: 576, K: 1536, transB: true },
    ] as const;
    for (const g of plannedOnly ? [] : gemms)
      for (const format of ['buf', 'int4'] as const) {
        const spec = { ...g, format, seed: 2 } as const;
        const [direct, tiled] = await perDispatch(
          [
            async (t) => (await gemmCase(device, { ...spec, layout: 'direct' }, { times: t })).ms,
            async (t) => (await gemmCase(device, { ...spec, layout: 'tiled' }, { times: t })).ms,
          ],
          2,
        );
        rows.push([
          `learn GEMM ${g.what}, ${format === 'buf' ? 'f32' : 'int4'}`,
          'direct',
          'tiled',
          direct,
          tiled,
          `${(direct / tiled).toFixed(2)}x`,
        ]);
      }
    // The planned projections of many rows: the split GEMV (8 rows per workgroup) against the tiled
    // GEMM at the sandbox defender's widths, a batch-64 decode step and a 256-row prefill chunk
    // (16 rows x 16 columns), not 1024 (a batch-64 prefill chunk): the split GEMV's workgroups grow
    // with the rows (8 each), and the whole batch-64 rollout (`bench:gpu -- --gemm-ab`) had not
    // finished its first format in 17 minutes on the loaded 2-core machine.
    const planned = [
      { what: 'defender gate+up 96 -> 384', K: 96, N: 384, mode: GemvMode.GateUp, norm: true },
      { what: 'defender down 384 -> 96', K: 384, N: 96, mode: GemvMode.Plain, norm: false },
    ] as const;
    for (const g of planned)
      for (const rowsN of [64, 256])
        for (const format of ['f32', 'int4'] as const) {
          const spec = { ...g, format, rows: rowsN, seed: 3 };
          const old = which === 'planned-software' ? 'tile' : 'split';
          const [split, tiled] = await perDispatch(
            [
              async (t) => (await gemvCase(device, { ...spec, layout: old }, { times: t })).ms,
              async (t) => (await gemvCase(device, { ...spec, layout: 'gemm' }, { times: t })).ms,
            ],
            2,
          );
          rows.push([
            `planned ${g.what}, ${rowsN} rows, ${format}`,
            `${old} GEMV`,
            'tiled GEMM',
            split,
            tiled,
            `${(split / tiled).toFixed(2)}x`,
          ]);
        }
    console.log(
      `\nadapter: ${adapterDescription(device)}; medians of ${REPS}, ms per dispatch (wall, submit to done)\n`,
    );
    console.log(formatTable(['kernel', 'old', 'new', 'old ms', 'new ms', 'old / new'], rows));
    expect(rows.length).toBe(plannedOnly ? 8 : 16);
  }, 3_600_000);
});
