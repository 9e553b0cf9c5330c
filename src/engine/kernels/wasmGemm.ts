// tfjs-wasm's BatchMatMul runs XNNPACK only for a single product; with a batch dimension (the
// attention's scores and weighted sums, forward and backward: [b, kvHeads, group x T, d]) it
// runs a naive scalar loop, ~0.7 GMAC/s on the sandbox defender's shapes, 63 of a learning step's
// 176 ms in kernels. This replaces the kernel for those products by our own SIMD loop
// (wasm-gemm/gemm.c, ~3.6 KB of wasm that imports tfjs-wasm's memory and works on the tensors
// in place); single products keep XNNPACK. Same sums in the same order (over k, one multiply
// and one add per step), so the values are tfjs-wasm's own up to the compiler's rounding.
import * as tf from '@tensorflow/tfjs';
import { gemmWasmBase64 } from './wasm-gemm/gemmBinary';

type Bmm = (
  a: number,
  b: number,
  c: number,
  scratch: number,
  batch: number,
  m: number,
  n: number,
  k: number,
  transA: number,
  transB: number,
  strideA: number,
  strideB: number,
) => void;

interface WasmBackend {
  wasm: {
    wasmMemory?: WebAssembly.Memory;
    asm?: { memory?: WebAssembly.Memory };
    _malloc(bytes: number): number;
    _free(ptr: number): void;
  };
  dataIdMap: { get(dataId: object): { memoryOffset: number } };
  makeOutput(shape: number[], dtype: 'float32'): tf.TensorInfo;
}

let module: WebAssembly.Module | null = null;
const instances = new WeakMap<WebAssembly.Memory, Bmm>();

function bytes(): Uint8Array {
  if (typeof atob === 'function') return Uint8Array.from(atob(gemmWasmBase64), (c) => c.charCodeAt(0));
  return new Uint8Array(Buffer.from(gemmWasmBase64, 'base64'));
}

/** Our bmm on this backend's memory, or null where it cannot be (a threaded build's shared memory). */
function bmmFor(backend: WasmBackend): Bmm | null {
  const memory = backend.wasm.wasmMemory ?? backend.wasm.asm?.memory;
  if (!memory || (typeof SharedArrayBuffer !== 'undefined' && memory.buffer instanceof SharedArrayBuffer)) return null;
  let bmm = instances.get(memory);
  if (!bmm) {
    if (!module) {
      // A page's main thread refuses to compile more than 4 KB synchronously: there the stock
      // kernel runs until the compile that fastWasmBatchMatMul started lands.
      try {
        module = new WebAssembly.Module(bytes() as BufferSource);
      } catch {
        return null;
      }
    }
    bmm = new WebAssembly.Instance(module, { env: { memory } }).exports.bmm as Bmm;
    instances.set(memory, bmm);
  }
  return bmm;
}

const size = (dims: number[]) => dims.reduce((p, d) => p * d, 1);

let calls = 0;
/** How many products our GEMM has run (tests check that it, not the stock kernel, ran). */
export const wasmGemmCalls = () => calls;

/**
 * Whether the current backend's BatchMatMul is ours and runs here (tfjs-wasm, unthreaded, the
 * module compiled): then a transposed operand costs nothing extra (gemm.c turns it in its
 * scratch), and callers need not turn operands with Transpose kernels of their own.
 */
export function wasmGemmServes(): boolean {
  if (tf.getBackend() !== 'wasm') return false;
  const k = tf.getKernel('BatchMatMul', 'wasm') as { ours?: boolean } | undefined;
  return k?.ours === true && bmmFor(tf.backend() as unknown as WasmBackend) !== null;
}

/**
 * Replaces the wasm backend's BatchMatMul by one that runs batched products in our SIMD GEMM
 * (idempotent; after the wasm backend's import). Single products, broadcasts other than a batch
 * of one, and non-float32 inputs go to the stock kernel.
 */
export function fastWasmBatchMatMul(): void {
  const stock = tf.getKernel('BatchMatMul', 'wasm');
  if (!stock || (stock as { ours?: boolean }).ours) return;
  if (!module)
    WebAssembly.compile(bytes() as BufferSource).then(
      (m) => (module ??= m),
      () => {},
    );
  tf.unregisterKernel('BatchMatMul', 'wasm');
  tf.registerKernel({
    ...stock,
    ours: true,
    kernelFunc: (args) => {
      const { a, b } = args.inputs as { a: tf.TensorInfo; b: tf.TensorInfo };
      const { transposeA, transposeB } = args.attrs as { transposeA: boolean; transposeB: boolean };
      const backend = args.backend as unknown as WasmBackend;
      const ra = a.shape.length;
      const rb = b.shape.length;
      const outerA = a.shape.slice(0, -2);
      const outerB = b.shape.slice(0, -2);
      const batchA = size(outerA);
      const batchB = size(outerB);
      const batch = Math.max(batchA, batchB);
      const sameOuter = outerA.length === outerB.length && outerA.every((d, i) => d === outerB[i]);
      const bmm =
        a.dtype === 'float32' && b.dtype === 'float32' && (sameOuter || batchA === 1 || batchB === 1)
          ? bmmFor(backend)
          : null;
      if (!bmm) return stock.kernelFunc(args);
      const M = transposeA ? a.shape[ra - 1] : a.shape[ra - 2];
      const K = transposeA ? a.shape[ra - 2] : a.shape[ra - 1];
      const N = transposeB ? b.shape[rb - 2] : b.shape[rb - 1];
      if ((transposeB ? b.shape[rb - 1] : b.shape[rb - 2]) !== K)
        throw new Error(`matMul: inner shapes of ${a.shape} and ${b.shape} differ`);
      const outer = batchA >= batchB ? outerA : outerB;
      const out = backend.makeOutput([...outer, M, N], 'float32');
      // A panel of B (gemm.c's PANEL), then the transposed operands.
      const scratchFloats = 16384 + (transposeB ? K * N : 0) + (transposeA ? M * K : 0);
      const scratch = backend.wasm._malloc(scratchFloats * 4);
      bmm(
        backend.dataIdMap.get(a.dataId).memoryOffset,
        backend.dataIdMap.get(b.dataId).memoryOffset,
        backend.dataIdMap.get(out.dataId).memoryOffset,
        scratch,
        batch,
        M,
        N,
        K,
        transposeA ? 1 : 0,
        transposeB ? 1 : 0,
        batchA === 1 ? 0 : M * K,
        batchB === 1 ? 0 : K * N,
      );
      backend.wasm._free(scratch);
      calls++;
      return out;
    },
  } as tf.KernelConfig);
}
