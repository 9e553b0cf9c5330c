import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { disposeLlama, forward } from './llama';
import { loadModelFiles } from './hub';
import { loadModel, modelFromFiles, type ModelFolder } from './load';
import { mapSource } from './sources';
import { parseSafetensors, writeSafetensors, type TensorToWrite } from './safetensors';

const FIXTURES = pathToFileURL(resolve('dev/fixtures') + '/');
const read = (p: string) => new Uint8Array(readFileSync(new URL(p, FIXTURES)));

/** An in-memory folder with the loader's methods. */
function memFolder(label: string, files: Record<string, Uint8Array | string>): ModelFolder {
  const bytes = (n: string) => {
    const f = files[n];
    if (f === undefined) throw new Error(`${n} not found in ${label}`);
    return typeof f === 'string' ? new TextEncoder().encode(f) : f;
  };
  return {
    label,
    has: async (n) => n in files,
    getBytes: async (n) => bytes(n).slice().buffer,
    getText: async (n) => new TextDecoder().decode(bytes(n)),
  };
}

describe('loadModel', () => {
  const golden = JSON.parse(new TextDecoder().decode(read('tiny-llama/golden.json'))) as {
    input_ids: number[];
    logits: number[][];
  };
  const config = new TextDecoder().decode(read('tiny-llama/config.json'));

  it('loads a sharded folder (index + two shards) and matches the golden logits', async () => {
    const st = parseSafetensors(read('tiny-llama/model.safetensors'));
    const shards: Record<string, Record<string, TensorToWrite>> = {
      'model-00001-of-00002.safetensors': {},
      'model-00002-of-00002.safetensors': {},
    };
    const weightMap: Record<string, string> = {};
    st.names().forEach((n, i) => {
      const shard = i % 2 ? 'model-00002-of-00002.safetensors' : 'model-00001-of-00002.safetensors';
      shards[shard][n] = { dtype: 'BF16', shape: st.info(n).shape, data: st.getRaw(n) as Uint16Array };
      weightMap[n] = shard;
    });
    const folder = memFolder('mem/tiny-sharded', {
      'config.json': config,
      'model.safetensors.index.json': JSON.stringify({ metadata: {}, weight_map: weightMap }),
      ...Object.fromEntries(Object.entries(shards).map(([k, v]) => [k, writeSafetensors(v)])),
    });
    const model = await loadModel(folder);
    const logits = forward(model, [golden.input_ids]);
    const flat = golden.logits.flat();
    const got = logits.dataSync();
    let err = 0;
    for (let i = 0; i < flat.length; i++) err = Math.max(err, Math.abs(got[i] - flat[i]));
    expect(err).toBeLessThan(1e-3);
    logits.dispose();
    disposeLlama(model);
  });

  it('names the folder when files are missing or broken', async () => {
    await expect(loadModel(memFolder('mem/empty', {}))).rejects.toThrow(/mem\/empty\/config\.json: not found/);
    await expect(loadModel(memFolder('mem/noweights', { 'config.json': config }))).rejects.toThrow(
      /mem\/noweights: has neither model\.safetensors nor model\.safetensors\.index\.json/,
    );
    await expect(
      loadModel(
        memFolder('mem/cut', {
          'config.json': config,
          'model.safetensors': read('tiny-llama/model.safetensors').slice(0, 5000),
        }),
      ),
    ).rejects.toThrow(/mem\/cut\/model\.safetensors: tensor ".*": data_offsets .* past the end/);
    await expect(
      loadModel(memFolder('mem/badcfg', { 'config.json': '{"architectures":["BertModel"]}' })),
    ).rejects.toThrow(/mem\/badcfg\/config\.json: field "architectures".*BertModel/);
    expect(tf.memory().numTensors).toBe(0);
  });

  it('refuses a NaN or Infinity weight naming the tensor and index, and frees what it created (issue 24)', async () => {
    const st = parseSafetensors(read('tiny-llama/model.safetensors'));
    const layerNorm = 'model.layers.1.post_attention_layernorm.weight';
    for (const [bits, shown] of [
      [0x7fc0, 'NaN'],
      [0x7f80, 'Infinity'],
    ] as const) {
      const tensors: Record<string, TensorToWrite> = {};
      for (const n of st.names()) {
        const raw = (st.getRaw(n) as Uint16Array).slice();
        if (n === layerNorm) raw[3] = bits;
        tensors[n] = { dtype: 'BF16', shape: st.info(n).shape, data: raw };
      }
      const before = tf.memory().numTensors;
      await expect(
        loadModel(memFolder('mem/nan', { 'config.json': config, 'model.safetensors': writeSafetensors(tensors) })),
      ).rejects.toThrow(
        new RegExp(
          `mem/nan/model\\.safetensors: tensor "${layerNorm.replace(/\./g, '\\.')}" holds ${shown} at index 3`,
        ),
      );
      expect(tf.memory().numTensors).toBe(before);
    }
  });

  it('builds from the files hub.ts loadModelFiles fetched (single file and through mapSource)', async () => {
    const files = await loadModelFiles(
      mapSource(
        { 'config.json': config, 'model.safetensors': read('tiny-llama/model.safetensors') },
        { label: 'mem/tiny' },
      ),
      { requireTokenizer: false },
    );
    const model = await modelFromFiles(files);
    const logits = forward(model, [golden.input_ids]);
    const got = logits.dataSync();
    const flat = golden.logits.flat();
    let err = 0;
    for (let i = 0; i < flat.length; i++) err = Math.max(err, Math.abs(got[i] - flat[i]));
    expect(err).toBeLessThan(1e-3);
    logits.dispose();
    disposeLlama(model);
  });
});
