// The tile of matmul/gemm_tile_loop.wgsl, shared by the learn GEMM (learnKernels.ts) and the planned
// prefill / large-batch decode GEMM (decodeKernels.ts), each of which prepends these to the loop.

/** Outputs per thread along m and n, threads per workgroup along each: a 32 x 32 tile. */
export const GEMM_T = 4;
export const GEMM_WG = 8;
export const GEMM_TILE = GEMM_T * GEMM_WG;

/** K per step of the tiled GEMM: 2 x 32 x 32 floats of workgroup memory (8 KiB of the 16 KiB floor). */
export const GEMM_KT = 32;

/** The loop's constants as WGSL (B_ALONG_K: see gemm_tile_loop.wgsl). */
export function gemmTilePrelude(bAlongK: boolean): string {
  return `const T : u32 = ${GEMM_T}u;\nconst WG : u32 = ${GEMM_WG}u;\nconst KT : u32 = ${GEMM_KT}u;\nconst B_ALONG_K : bool = ${bAlongK};\n`;
}
