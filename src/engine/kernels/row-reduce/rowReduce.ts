// The WGSL reduceRow a one-workgroup-per-row kernel merges its per-thread online-softmax partials
// with: subgroup operations where the device has them (gpuFeatures), a workgroup-memory tree
// otherwise. Both define the same function, so a kernel's own source does not change.
import rowReduceSubgroupWgsl from '../../../../shaders/row-reduce/subgroup.wgsl?raw';
import rowReduceTreeWgsl from '../../../../shaders/row-reduce/tree.wgsl?raw';
import { subgroupLayout, subgroupsActive } from '../../webgpu/gpuFeatures';

export interface RowReduce {
  /** Distinguishes compiled pipelines: 'tree' or 'sg<levels>x<min size>'. */
  key: string;
  /** WGSL constants and reduceRow, to prepend to the kernel (after its `const WG`). */
  source: string;
}

/** Levels of subgroup merges a workgroup of wg threads needs when subgroups have at least minSize lanes. */
export function subgroupLevels(wg: number, minSize: number): number {
  let levels = 1;
  for (let covered = minSize; covered < wg; covered *= minSize) levels++;
  return levels;
}

export function rowReduce(wg: number): RowReduce {
  const layout = subgroupLayout();
  if (!subgroupsActive() || !layout) return { key: 'tree', source: rowReduceTreeWgsl };
  const levels = subgroupLevels(wg, layout.minSize);
  const slots = Math.max(1, Math.ceil(wg / layout.minSize));
  return {
    key: `sg${levels}x${layout.minSize}`,
    source: `const LEVELS : i32 = ${levels};\nconst SLOTS : i32 = ${slots};\n${rowReduceSubgroupWgsl}`,
  };
}
