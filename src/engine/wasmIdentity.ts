// tfjs-wasm's Identity copies its input. tfjs runs Identity for every tensor an op saves for its
// backward (engine.saveTensorsForBackwardMode clones), so on wasm a gradient tape holds a second
// copy of each saved activation (524 copies in a learning step of the sandbox defender), and a
// saved weight gets a fresh XNNPACK packing (the packed-weight cache is keyed by the tensor's
// data). tfjs tensors are immutable (an assign swaps the data, it never writes into it), so an
// Identity that shares the data by reference count is exact: what tfjs-cpu's Identity and
// tfjs-wasm's own Reshape do.
import * as tf from '@tensorflow/tfjs';

interface WasmRefs {
  incRef(dataId: object): void;
}

/** Replaces the wasm backend's Identity by one that shares the data (idempotent; after the wasm backend's import). */
export function shareWasmIdentity(): void {
  const stock = tf.getKernel('Identity', 'wasm');
  if (!stock || (stock as { shared?: boolean }).shared) return;
  tf.unregisterKernel('Identity', 'wasm');
  tf.registerKernel({
    ...stock,
    shared: true,
    kernelFunc: (args) => {
      const x = (args.inputs as { x: tf.TensorInfo }).x;
      if (x.dtype === 'string') return stock.kernelFunc(args);
      (args.backend as unknown as WasmRefs).incRef(x.dataId);
      return { dataId: x.dataId, shape: x.shape, dtype: x.dtype };
    },
  } as tf.KernelConfig);
}
