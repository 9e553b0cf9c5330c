// From a Hugging Face-layout folder to a ready model: config.json, then model.safetensors or
// model.safetensors.index.json + shards, then the family's loader. Two entry points:
//  - loadModel(folder): reads the files itself from any ModelSource (URL, picked folder,
//    in-memory map; the CLI passes a Node folder reader with the same methods);
//  - modelFromFiles(files): builds from what hub.ts's loadModelFiles already fetched (the app's
//    path, which also needs the tokenizer files).

import { ConfigError, parseModelConfig, type ModelConfig } from '../contract/modelConfig';
import { loadLlama, ModelLoadError, type LlamaModel, type LoadOptions } from './llama';
import { readShardedSafetensors, SafetensorsFile, type TensorSource } from './safetensors';
import type { ModelFiles } from './hub';
import type { ModelSource, ReadOptions } from './sources';

/** The part of a ModelSource the loader needs. */
export type ModelFolder = Pick<ModelSource, 'label' | 'has' | 'getBytes' | 'getText'>;

export const CONFIG_FILE = 'config.json';
export const WEIGHTS_FILE = 'model.safetensors';
export const WEIGHTS_INDEX_FILE = 'model.safetensors.index.json';

export interface LoadModelOptions extends LoadOptions {
  read?: ReadOptions;
}

/** Reads and parses config.json of a folder. */
export async function loadModelConfig(files: ModelFolder, read: ReadOptions = {}): Promise<ModelConfig> {
  const where = `${files.label}/${CONFIG_FILE}`;
  if (!(await files.has(CONFIG_FILE, read))) throw new ConfigError(`${where}: not found`);
  return parseModelConfig(await files.getText(CONFIG_FILE, read), where);
}

/** Opens the folder's weights (single file or sharded) as one TensorSource. */
export async function loadWeights(files: ModelFolder, read: ReadOptions = {}): Promise<TensorSource> {
  if (await files.has(WEIGHTS_INDEX_FILE, read)) {
    const indexName = `${files.label}/${WEIGHTS_INDEX_FILE}`;
    return readShardedSafetensors(
      await files.getText(WEIGHTS_INDEX_FILE, read),
      async (shard) => new SafetensorsFile(await files.getBytes(shard, read), `${files.label}/${shard}`),
      indexName,
    );
  }
  if (await files.has(WEIGHTS_FILE, read)) {
    return new SafetensorsFile(await files.getBytes(WEIGHTS_FILE, read), `${files.label}/${WEIGHTS_FILE}`);
  }
  throw new ModelLoadError(`${files.label}: has neither ${WEIGHTS_FILE} nor ${WEIGHTS_INDEX_FILE}`);
}

/** Loads config and weights and builds the model of the config's family. */
export async function loadModel(files: ModelFolder, opts: LoadModelOptions = {}): Promise<LlamaModel> {
  const config = await loadModelConfig(files, opts.read);
  const weights = await loadWeights(files, opts.read);
  // One loader for every family: the block description (contract/blockDescription.ts) names the
  // tensors each family has.
  return loadLlama(config, weights, opts);
}

/** Builds the model from files already fetched by loadModelFiles (hub.ts). */
export async function modelFromFiles(files: ModelFiles, opts: LoadOptions = {}): Promise<LlamaModel> {
  const config = parseModelConfig(files.config, `${files.label}/${CONFIG_FILE}`);
  const shard = (name: string): SafetensorsFile => {
    const bytes = files.weights.get(name);
    if (!bytes) throw new ModelLoadError(`${files.label}/${name}: weights were not loaded`);
    return new SafetensorsFile(bytes, `${files.label}/${name}`);
  };
  const weights: TensorSource = files.weightIndex
    ? await readShardedSafetensors(
        files.weightIndex,
        async (name) => shard(name),
        `${files.label}/${WEIGHTS_INDEX_FILE}`,
      )
    : shard(files.weightFiles[0] ?? WEIGHTS_FILE);
  return loadLlama(config, weights, opts);
}
