// sampleTokens(logits [rows, vocab]) -> ids [rows] (int32), drawn on the GPU with a seeded
// Philox stream (shaders/sample/op.wgsl); on other backends the same algorithm runs on the CPU
// (sampleReference), so a seed means the same tokens on every backend up to float rounding.
import * as tf from '@tensorflow/tfjs';
import sampleWgsl from '../../../../shaders/sample/op.wgsl?raw';
import { rowChunks, rowWorkgroupSize } from '../../webgpu/limits';
import { customKernelsActive, runKernel } from '../../webgpu/wgslProgram';
import { seedKey } from '../../rng/philox';
import { checkSamplingOptions, sampleReference, type SamplingOptions } from './sampleReference';

function streamIds(rows: number, streams?: ArrayLike<number>): Int32Array {
  if (streams && streams.length !== rows) throw new Error(`sampleTokens: ${streams.length} streams for ${rows} rows`);
  return streams ? Int32Array.from(streams) : Int32Array.from({ length: rows }, (_, r) => r);
}

export function sampleTokensWebGPU(logits: tf.Tensor2D, o: SamplingOptions, streams?: ArrayLike<number>): tf.Tensor1D {
  checkSamplingOptions(o);
  const chunks = rowChunks(logits.shape[0], logits.shape[1] * 4);
  if (chunks.length > 1) {
    const all = streamIds(logits.shape[0], streams);
    let start = 0;
    return tf.tidy(
      () =>
        tf.concat(
          tf.split(logits, chunks, 0).map((part, i) => {
            const s = all.subarray(start, start + chunks[i]);
            start += chunks[i];
            return sampleTokensWebGPU(part as tf.Tensor2D, o, s);
          }),
        ) as tf.Tensor1D,
    );
  }
  const streamTensor = tf.tensor1d(streamIds(logits.shape[0], streams), 'int32');
  const WG = rowWorkgroupSize(logits.shape[1]);
  const [seedLo, seedHi] = seedKey(o.seed);
  const ids = runKernel(
    {
      key: `sparring_sample_wg${WG}`,
      source: `const WG : i32 = ${WG};\n${sampleWgsl}`,
      inputs: ['logits', 'streams'],
      outputShape: [logits.shape[0]],
      workgroupSize: [WG, 1, 1],
      dispatch: [logits.shape[0], 1, 1],
      uniforms: 'temperature : f32, topK : i32, topP : f32, seedLo : u32, seedHi : u32, step : u32,',
    },
    [logits, streamTensor],
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
  streamTensor.dispose(); // tfjs keeps the buffer alive until the queued dispatch has run
  return ids;
}

/**
 * Draws one token per row (row r from Philox stream streams[r], default r); on WebGPU the result
 * stays on the device until read, elsewhere the logits are read and sampled on the CPU.
 */
export async function sampleTokens(
  logits: tf.Tensor2D,
  o: SamplingOptions,
  streams?: ArrayLike<number>,
): Promise<tf.Tensor1D> {
  if (logits.rank !== 2) throw new Error(`sampleTokens: logits must be [rows, vocab], got [${logits.shape}]`);
  if (customKernelsActive()) return sampleTokensWebGPU(logits, o, streams);
  const values = await logits.data();
  return tf.tensor1d(
    sampleReference(values, logits.shape[0], logits.shape[1], o, streamIds(logits.shape[0], streams)),
    'int32',
  );
}
