// sampleTokens(logits [rows, vocab]) -> ids [rows] (int32), drawn on the GPU with a seeded
// Philox stream (shaders/sample.wgsl); on other backends the same algorithm runs on the CPU
// (sampleReference), so a seed means the same tokens on every backend up to float rounding.
import * as tf from '@tensorflow/tfjs';
import sampleWgsl from '../../../shaders/sample.wgsl?raw';
import { isWebGPUBackend, runKernel } from '../kernels/wgslProgram';
import { seedKey } from '../rng/philox';
import { checkSamplingOptions, sampleReference, type SamplingOptions } from './sampleReference';

const WG = 256;

export function sampleTokensWebGPU(logits: tf.Tensor2D, o: SamplingOptions): tf.Tensor1D {
  checkSamplingOptions(o);
  const [seedLo, seedHi] = seedKey(o.seed);
  return runKernel(
    {
      key: `sparring_sample_wg${WG}`,
      source: `const WG : i32 = ${WG};\n${sampleWgsl}`,
      inputs: ['logits'],
      outputShape: [logits.shape[0]],
      workgroupSize: [WG, 1, 1],
      dispatch: [logits.shape[0], 1, 1],
      uniforms: 'temperature : f32, topK : i32, topP : f32, seedLo : u32, seedHi : u32, step : u32,',
    },
    [logits],
    'int32',
    [
      { type: 'float32', data: [o.temperature] },
      { type: 'int32', data: [o.topK] },
      { type: 'float32', data: [o.topP] },
      { type: 'uint32', data: [seedLo] },
      { type: 'uint32', data: [seedHi] },
      { type: 'uint32', data: [o.step] },
    ],
  ) as tf.Tensor1D;
}

/** Draws one token per row; the returned tensor stays on the device until read. */
export async function sampleTokens(logits: tf.Tensor2D, o: SamplingOptions): Promise<tf.Tensor1D> {
  if (logits.rank !== 2) throw new Error(`sampleTokens: logits must be [rows, vocab], got [${logits.shape}]`);
  if (isWebGPUBackend()) return sampleTokensWebGPU(logits, o);
  const values = await logits.data();
  return tf.tensor1d(sampleReference(values, logits.shape[0], logits.shape[1], o), 'int32');
}
