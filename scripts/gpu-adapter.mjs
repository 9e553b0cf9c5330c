// The adapter Dawn gives on this machine, and whether it is fit to time: `scripts/gpu-bench.sh run`
// calls it before anything is built or timed (plain Node, no bundle, about a second).
//
//   node scripts/gpu-adapter.mjs [--allow-software]
//
// Prints one line naming the adapter (vendor, architecture, description, subgroup size, features)
// and exits 0; for a CPU Vulkan driver (SwiftShader, llvmpipe / lavapipe) prints one line saying
// it refuses and exits 3, unless --allow-software; with no adapter at all, one line and exit 4.
// SPARRING_WEBGPU_MODULE names a carried copy of the `webgpu` package (no node_modules there).
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

/**
 * The CPU Vulkan driver an adapter's info names, or null. The same rule as softwareAdapterName in
 * src/contract/backends.ts (this file runs without the TypeScript toolchain; a unit test holds the two
 * to the same answers).
 */
export function softwareAdapterName(info) {
  const s = `${info.vendor ?? ''} ${info.architecture ?? ''} ${info.description ?? ''} ${info.device ?? ''}`;
  if (/swiftshader/i.test(s)) return 'SwiftShader';
  if (
    /llvmpipe|lavapipe/i.test(s) ||
    (/\bmesa\b/i.test(info.vendor ?? '') && /^software$/i.test(info.architecture ?? ''))
  )
    return 'lavapipe';
  if (/microsoft basic render|\bwarp\b/i.test(s)) return 'WARP';
  return null;
}

/** The verdict on an adapter: [exit code, the one line to print]. */
export function verdict(info, allowSoftware) {
  const name = `${info.vendor} ${info.architecture} ${info.description}`.replace(/\s+/g, ' ').trim();
  const sw = softwareAdapterName(info);
  if (sw && !allowSoftware)
    return [
      3,
      `gpu-bench: refusing to time a software adapter (${sw}: ${name}): its figures would be CPU figures; is the GPU's Vulkan driver (nvidia_icd.json) installed and loadable? --allow-software times it anyway`,
    ];
  return [0, `gpu-bench: adapter ${name}${sw ? ` (software: ${sw}, allowed by --allow-software)` : ''}`];
}

async function main() {
  const allow = process.argv.includes('--allow-software');
  const spec = process.env.SPARRING_WEBGPU_MODULE
    ? pathToFileURL(process.env.SPARRING_WEBGPU_MODULE).href
    : pathToFileURL(createRequire(`${process.cwd()}/`).resolve('webgpu')).href;
  const dawn = await import(spec);
  process.env.XDG_RUNTIME_DIR ??= '/tmp';
  const gpu = dawn.create([]);
  const adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
  if (!adapter) {
    console.log(
      'gpu-bench: Dawn found no adapter (no Vulkan driver loaded: see the loader and driver files listed above)',
    );
    process.exit(4);
  }
  const i = adapter.info;
  const [code, line] = verdict(i, allow);
  console.log(line);
  if (code === 0)
    console.log(
      `gpu-bench: subgroups ${i.subgroupMinSize ?? '?'}-${i.subgroupMaxSize ?? '?'}, features ${[...adapter.features].sort().join(' ')}`,
    );
  process.exit(code);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main();
