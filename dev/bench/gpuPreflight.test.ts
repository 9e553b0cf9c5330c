// scripts/gpu-bench.sh's preflight, run for real (about a second each: no bundle is built before
// it refuses): a software adapter is refused with one line and exit 3, the NVIDIA driver file is
// named to Dawn, an old system Node gives way to the carried one. On a machine with no CPU Vulkan
// driver at all the adapter cases are skipped (CI installs lavapipe and Chromium's SwiftShader).
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { softwareAdapterName } from '../../src/contract/backends';
// @ts-expect-error: a plain .mjs script without types (it runs before any TypeScript toolchain)
import * as probe from '../../scripts/gpu-adapter.mjs';

const LAVAPIPE = '/usr/share/vulkan/icd.d/lvp_icd.json';
const SWIFTSHADER = '/usr/lib/chromium/vk_swiftshader_icd.json';
const cpuDriver = existsSync(LAVAPIPE) ? LAVAPIPE : existsSync(SWIFTSHADER) ? SWIFTSHADER : null;

function gpuBench(args: string[], env: Record<string, string> = {}) {
  const r = spawnSync('bash', [resolve('scripts/gpu-bench.sh'), ...args], {
    encoding: 'utf8',
    timeout: 60_000,
    // An empty bundle folder: nothing carried unless the test puts it there.
    env: { ...process.env, GPU_BENCH_DIR: mkdtempSync(join(tmpdir(), 'gpu-bench-')), ...env },
  });
  return { code: r.status, out: `${r.stdout}${r.stderr}`, lines: `${r.stdout}${r.stderr}`.trim().split('\n') };
}

describe('gpu-bench.sh preflight', () => {
  it.skipIf(!cpuDriver)('refuses to time the software adapter with one line and exit 3, before building', () => {
    const out = mkdtempSync(join(tmpdir(), 'gpu-bench-out-'));
    const r = gpuBench(['run', out], { VK_DRIVER_FILES: cpuDriver!, LD_LIBRARY_PATH: '/usr/lib/chromium' });
    expect(r.code, r.out).toBe(3);
    const refusals = r.lines.filter((l) => /refusing/.test(l));
    expect(refusals).toHaveLength(1);
    expect(refusals[0]).toMatch(
      /^gpu-bench: refusing to time a software adapter \((lavapipe|SwiftShader): .*--allow-software/,
    );
    expect(r.lines.at(-1)).toBe(refusals[0]);
    expect(r.out).toMatch(/gpu-bench: Vulkan loader: /);
    expect(r.out).toMatch(/gpu-bench: Vulkan drivers: /);
    expect(readFileSync(join(out, 'log.txt'), 'utf8')).toContain(refusals[0]);
    expect(existsSync(join(out, 'bench.md'))).toBe(false);
  });

  it.skipIf(!cpuDriver)('--allow-software lets the same adapter through, naming it as software', () => {
    const r = gpuBench(['preflight', '--allow-software'], {
      VK_DRIVER_FILES: cpuDriver!,
      LD_LIBRARY_PATH: '/usr/lib/chromium',
    });
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/gpu-bench: adapter .*\(software: (lavapipe|SwiftShader), allowed by --allow-software\)/);
  });

  it('names an installed NVIDIA driver file to Dawn (here a broken one: Dawn then finds no adapter)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'icd-'));
    const icd = join(dir, 'nvidia_icd.json');
    writeFileSync(
      icd,
      JSON.stringify({ file_format_version: '1.0.0', ICD: { library_path: 'libGLX_nvidia.so.0', api_version: '1.3' } }),
    );
    // VK_DRIVER_FILES empty: as if the caller named no driver.
    const r = gpuBench(['preflight'], { GPU_BENCH_ICD_DIRS: dir, VK_DRIVER_FILES: '' });
    expect(r.out).toContain(
      `VK_DRIVER_FILES=VK_ICD_FILENAMES=${icd} (its library libGLX_nvidia.so.0: not in ldconfig)`,
    );
    expect(r.lines.at(-1)).toMatch(/^gpu-bench: Dawn found no adapter/);
    expect(r.code).toBe(4);
  });

  it('takes the carried Node where the system one is older than v20', () => {
    const bin = mkdtempSync(join(tmpdir(), 'old-node-'));
    // A system "node" of v18: what the script asks it for, answered as v18 would.
    writeFileSync(join(bin, 'node'), '#!/bin/sh\ncase "$1" in --version) echo v18.19.0;; -e) printf 18;; esac\n');
    chmodSync(join(bin, 'node'), 0o755);
    const g = mkdtempSync(join(tmpdir(), 'gpu-bench-'));
    mkdirSync(join(g, 'carry'));
    // The carried Node: this one, behind a wrapper, xz-compressed as `pack` leaves it.
    const wrapper = join(g, 'node');
    writeFileSync(wrapper, `#!/bin/sh\nexec ${process.execPath} "$@"\n`);
    spawnSync('sh', ['-c', `xz -c ${wrapper} > ${join(g, 'carry', 'node.xz')}`]);
    const r = gpuBench(['preflight', '--allow-software'], {
      GPU_BENCH_DIR: g,
      PATH: `${bin}:${process.env.PATH}`,
      ...(cpuDriver ? { VK_DRIVER_FILES: cpuDriver } : {}),
    });
    expect(r.lines[0]).toBe(
      `gpu-bench: node ${process.version} (carried; system ${bin}/node is v18.19.0, older than v20)`,
    );
  });
});

describe('the software-adapter rule', () => {
  const infos = [
    { vendor: 'google', architecture: 'swiftshader', description: 'SwiftShader driver 5.0.0' },
    { vendor: 'mesa', architecture: 'software', description: 'llvmpipe: Mesa 25.0.7 (LLVM 15.0.6)' },
    { vendor: 'mesa', architecture: 'software' },
    { vendor: 'nvidia', architecture: 'hopper', description: 'NVIDIA H100 80GB HBM3' },
    { vendor: 'mesa', architecture: 'rdna-3', description: 'AMD Radeon (RADV NAVI31)' },
    { vendor: 'intel', architecture: 'xe-lpg', description: '' },
  ];
  const expected = ['SwiftShader', 'lavapipe', 'lavapipe', null, null, null];

  it("names SwiftShader and lavapipe, from tfjs's vendor and architecture alone too, and no GPU", () => {
    expect(infos.map(softwareAdapterName)).toEqual(expected);
  });

  it('is the same rule in the preflight script as in the engine', () => {
    expect(
      infos.map((i) => (probe as { softwareAdapterName: typeof softwareAdapterName }).softwareAdapterName(i)),
    ).toEqual(expected);
    const [code, line] = (probe as { verdict: (i: object, allow: boolean) => [number, string] }).verdict(
      infos[1],
      false,
    );
    expect(code).toBe(3);
    expect(line).toMatch(/refusing to time a software adapter \(lavapipe: mesa software llvmpipe/);
    expect((probe as { verdict: (i: object, allow: boolean) => [number, string] }).verdict(infos[3], false)[0]).toBe(0);
  });
});
