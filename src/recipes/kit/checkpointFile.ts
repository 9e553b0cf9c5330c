// A recipe checkpoint as one JSON text file (CLI `--save-checkpoint FILE`), and a frozen adapter
// built from one. JSON + base64 float32 (little-endian) rather than the PEFT zip: it keeps the
// whole RecipeCheckpoint (config with the LoRA rank / alpha / targets, optimiser, step), reads
// back through RecipeEnv.readText in Node and the browser alike, and needs no zip library.
import * as tf from '@tensorflow/tfjs';
import type { LlamaModel } from '../../model/llama';
import { attachLora, peftTensorName, type LoraSet } from '../../model/lora';
import { findNonFinite, type NamedTensor } from '../../contract/namedTensor';
import { LORA_TARGET_SETS, loraTargets, type LoraTargetSet } from './commonFields';
import { brief, BRIEF_NAME_CHARS, briefName, briefText, clampMessage } from '../../contract/brief';
import type { RecipeCheckpoint } from './types';

const FILE_KIND = 'sparring-recipe-checkpoint';

/** A checkpoint file that cannot be read: names the file, the field and the expected form (at most 500 characters). */
export class CheckpointFileError extends Error {
  constructor(message: string) {
    super(clampMessage(message));
    this.name = 'CheckpointFileError';
  }
}

function toBase64(data: Float32Array): string {
  const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  let s = '';
  const CHUNK = 0x8000; // String.fromCharCode's argument count stays small
  for (let i = 0; i < bytes.length; i += CHUNK) s += String.fromCharCode(...bytes.subarray(i, i + CHUNK));
  return btoa(s);
}

function fromBase64(b64: string, where: string): Float32Array {
  let s: string;
  try {
    s = atob(b64);
  } catch {
    throw new CheckpointFileError(`${where}: data is not base64`);
  }
  if (s.length % 4 !== 0)
    throw new CheckpointFileError(`${where}: ${s.length} bytes is not a whole number of float32 values`);
  const bytes = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) bytes[i] = s.charCodeAt(i);
  return new Float32Array(bytes.buffer);
}

const encodeTensors = (ts: NamedTensor[]) =>
  ts.map((t) => ({
    name: t.name,
    dtype: t.dtype,
    shape: t.shape,
    data: toBase64(Float32Array.from(t.data as ArrayLike<number>)),
  }));

const isCount = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function decodeTensors(raw: unknown, where: string): NamedTensor[] {
  if (!Array.isArray(raw)) throw new CheckpointFileError(`${where}: must be a list of tensors, got ${brief(raw)}`);
  const names = new Set<string>();
  return raw.map((t: unknown, i) => {
    const r = t as { name?: unknown; dtype?: unknown; shape?: unknown; data?: unknown } | null;
    const at = `${where}[${i}]`;
    if (!r || typeof r.name !== 'string' || r.name === '') throw new CheckpointFileError(`${at}: no tensor name`);
    const named = `${at} (${briefText(r.name, BRIEF_NAME_CHARS)})`;
    if (names.has(r.name)) throw new CheckpointFileError(`${named}: the name appears twice`);
    names.add(r.name);
    if (r.dtype !== 'float32')
      throw new CheckpointFileError(`${named}: dtype ${brief(r.dtype)}, only float32 is supported`);
    if (!Array.isArray(r.shape) || r.shape.length > 8 || !r.shape.every(isCount))
      throw new CheckpointFileError(`${named}: shape must be a list of at most 8 non-negative integers`);
    if (typeof r.data !== 'string')
      throw new CheckpointFileError(`${named}: data must be a base64 string, got ${brief(r.data)}`);
    const data = fromBase64(r.data, named);
    const n = (r.shape as number[]).reduce((a, b) => a * b, 1);
    if (data.length !== n)
      throw new CheckpointFileError(`${named}: ${data.length} values for shape [${(r.shape as number[]).join(', ')}]`);
    const tensor: NamedTensor = { name: r.name, dtype: 'float32', shape: r.shape as number[], data };
    const bad = findNonFinite([tensor]);
    if (bad)
      throw new CheckpointFileError(
        `${named}: holds ${bad.value} at index ${bad.index}; a checkpoint must hold finite numbers`,
      );
    return tensor;
  });
}

/** AdamW moments are `<parameter>.exp_avg` / `.exp_avg_sq`, each with its parameter's shape, in pairs. */
function checkMoments(params: NamedTensor[], moments: NamedTensor[], where: string): void {
  const shapes = new Map(params.map((t) => [t.name, t.shape]));
  const seen = new Set<string>();
  for (const m of moments) {
    const x = /^(.*)\.(exp_avg|exp_avg_sq)$/.exec(m.name);
    const shape = x ? shapes.get(x[1]) : undefined;
    if (!x || !shape)
      throw new CheckpointFileError(
        `${where}: ${briefName(m.name)} is not <tensor name>.exp_avg or .exp_avg_sq of a tensor in "tensors"`,
      );
    if (shape.length !== m.shape.length || shape.some((d, i) => d !== m.shape[i])) {
      throw new CheckpointFileError(
        `${where}: ${briefName(m.name)} has shape [${m.shape.join(', ')}], its parameter ${briefName(x[1])} is [${shape.join(', ')}]`,
      );
    }
    seen.add(m.name);
  }
  for (const name of seen) {
    const other = name.endsWith('.exp_avg') ? `${name}_sq` : name.slice(0, -'_sq'.length);
    if (!seen.has(other))
      throw new CheckpointFileError(`${where}: ${briefName(name)} has no ${briefName(other)} (moments come in pairs)`);
  }
}

/** The checkpoint as JSON text (tensors base64). */
export function checkpointToJson(p: RecipeCheckpoint): string {
  return JSON.stringify({
    kind: FILE_KIND,
    ...p,
    tensors: encodeTensors(p.tensors),
    optimizer: { state: p.optimizer.state, tensors: encodeTensors(p.optimizer.tensors) },
  });
}

/** An optional object field: {} when absent, an error naming the field when it is anything else. */
function objectField(o: Record<string, unknown>, field: string, label: string): Record<string, unknown> {
  const v = o[field];
  if (v === undefined) return {};
  if (!isObject(v)) throw new CheckpointFileError(`${label}: field "${field}" must be an object, got ${brief(v)}`);
  return v;
}

/** Parses checkpointToJson's text; errors name the file (`label`), the field and the expected form. */
export function checkpointFromJson(text: string, label: string): RecipeCheckpoint {
  let o: unknown;
  try {
    o = JSON.parse(text) as unknown;
  } catch (e) {
    throw new CheckpointFileError(`${label}: not valid JSON: ${(e as Error).message.slice(0, 200)}`);
  }
  if (!isObject(o) || o.kind !== FILE_KIND)
    throw new CheckpointFileError(
      `${label}: not a recipe checkpoint (write one with lab --recipe ... --save-checkpoint FILE)`,
    );
  if (o.format !== 1)
    throw new CheckpointFileError(`${label}: checkpoint format ${brief(o.format)} is not supported (expected 1)`);
  if (typeof o.recipe !== 'string' || o.recipe === '')
    throw new CheckpointFileError(`${label}: field "recipe" must name a recipe, got ${brief(o.recipe)}`);
  for (const f of ['seed', 'step'] as const) {
    if (!isCount(o[f]))
      throw new CheckpointFileError(`${label}: field "${f}" must be a non-negative integer, got ${brief(o[f])}`);
  }
  const config = objectField(o, 'config', label);
  const extra = objectField(o, 'extra', label);
  const rng = objectField(o, 'rng', label);
  const badRng = Object.entries(rng).find(([, v]) => !isCount(v));
  if (badRng)
    throw new CheckpointFileError(
      `${label}: field ${briefName(`rng.${badRng[0]}`, 60)} must be a non-negative integer, got ${brief(badRng[1])}`,
    );
  const opt = objectField(o, 'optimizer', label);
  const state = objectField(opt, 'state', `${label}: optimizer`);
  const optStep = state.step ?? 0;
  if (!isCount(optStep))
    throw new CheckpointFileError(
      `${label}: field "optimizer.state.step" must be a non-negative integer, got ${brief(optStep)}`,
    );
  const tensors = decodeTensors(o.tensors, `${label}: tensors`);
  const moments = decodeTensors(opt.tensors ?? [], `${label}: optimizer.tensors`);
  checkMoments(tensors, moments, `${label}: optimizer.tensors`);
  return {
    format: 1,
    recipe: o.recipe,
    seed: o.seed as number,
    step: o.step as number,
    config,
    tensors,
    optimizer: { state: { step: optStep }, tensors: moments },
    rng: rng as Record<string, number>,
    extra,
  };
}

/**
 * Attaches the checkpoint's LoRA adapter to `model`, weights loaded, for inference (frozen: no
 * optimiser). Its rank / alpha / targets come from the checkpoint's config (loraRank, loraAlpha,
 * loraTargets). `part` picks one adapter of a multi-adapter checkpoint (arena: `attacker`), whose
 * tensors are named `<part>/<PEFT name>`.
 */
export function attachCheckpointAdapter(model: LlamaModel, p: RecipeCheckpoint, label: string, part?: string): LoraSet {
  const c = p.config;
  const r = c.loraRank;
  const alpha = c.loraAlpha;
  const targets = c.loraTargets ?? 'all';
  if (!Number.isInteger(r) || typeof alpha !== 'number')
    throw new CheckpointFileError(
      `${label}: config has no loraRank / loraAlpha (recipe "${p.recipe}" trains no LoRA adapter?)`,
    );
  if (!(LORA_TARGET_SETS as readonly unknown[]).includes(targets))
    throw new CheckpointFileError(
      `${label}: config loraTargets ${brief(targets)} is not one of ${LORA_TARGET_SETS.join(', ')}`,
    );
  const prefix = part ? `${part}/` : '';
  const byName = new Map(
    p.tensors.filter((t) => t.name.startsWith(prefix)).map((t) => [t.name.slice(prefix.length), t]),
  );
  if (part && byName.size === 0)
    throw new CheckpointFileError(
      `${label}: no "${part}" adapter (tensor names: ${p.tensors
        .slice(0, 2)
        .map((t) => t.name)
        .join(', ')} ...)`,
    );
  // The adapter as it was trained: rsLoRA scale, and only the layers the checkpoint holds.
  const layerOf = (n: string) => Number(/\.layers\.(\d+)\./.exec(n)?.[1] ?? NaN);
  const held = [...new Set([...byName.keys()].map(layerOf).filter(Number.isInteger))].sort((x, y) => x - y);
  const layers = held.length > 0 && held.length < model.config.numLayers ? held : undefined;
  const set = attachLora(model, {
    r: r as number,
    alpha,
    targets: loraTargets(targets as LoraTargetSet),
    useRslora: c.loraUseRslora === true,
    layers,
  });
  try {
    for (const a of set.adapters) {
      for (const [which, v] of [
        ['A', a.A],
        ['B', a.B],
      ] as const) {
        const name = peftTensorName(a.module, which);
        const t = byName.get(name);
        if (!t)
          throw new CheckpointFileError(`${label}: no tensor "${prefix}${name}" (different model or LoRA targets?)`);
        if (t.shape.length !== v.shape.length || t.shape.some((d, i) => d !== v.shape[i])) {
          throw new CheckpointFileError(
            `${label}: tensor "${prefix}${name}" has shape [${t.shape.join(', ')}], the model's adapter is [${v.shape.join(', ')}]`,
          );
        }
        tf.tidy(() => v.assign(tf.tensor(t.data as Float32Array, v.shape, 'float32')));
      }
    }
  } catch (e) {
    set.dispose();
    throw e;
  }
  return set;
}
