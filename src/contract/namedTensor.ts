// A named tensor as checkpoints, adapter files and the recipes' state carry it (plain arrays, no
// tfjs), and the check every writer runs before saving one: nothing non-finite leaves a run.
// Here rather than in storage/ so the recipes reach it without importing the storage layer.
import type { TensorDtype } from './storageFormat';

export interface NamedTensor {
  name: string;
  dtype: TensorDtype;
  shape: number[];
  data: Float32Array | Int32Array;
}

/** The first NaN/Infinity in the float tensors, or null when all are finite. */
export function findNonFinite(
  tensors: readonly NamedTensor[],
): { tensor: string; index: number; value: number } | null {
  for (const t of tensors) {
    if (t.dtype !== 'float32') continue;
    const d = t.data;
    for (let i = 0; i < d.length; i++) {
      // x - x is 0 for finite x and NaN for NaN and +-Infinity: one test per element.
      if (d[i] - d[i] !== 0) return { tensor: t.name, index: i, value: d[i] };
    }
  }
  return null;
}
