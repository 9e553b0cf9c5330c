// A recipe checkpoint as one JSON text file (CLI `--save-checkpoint FILE`), and a frozen adapter
// built from one. JSON + base64 float32 (little-endian) rather than the PEFT zip: it keeps the
// whole RecipeCheckpoint (config with the LoRA rank / alpha / targets, optimiser, step), reads
// back through RecipeEnv.readText in Node and the browser alike, and needs no zip library.
import * as tf from '@tensorflow/tfjs';
import type { LlamaModel } from '../model/llama.ts';
import { attachLora, peftTensorName, type LoraSet } from '../model/lora.ts';
import type { NamedTensor } from '../storage/checkpoints.ts';
import { LORA_TARGET_SETS, loraTargets, type LoraTargetSet } from './commonFields.ts';
import type { RecipeCheckpoint } from './types.ts';

const FILE_KIND = 'sparring-recipe-checkpoint';

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
    throw new Error(`${where}: data is not base64`);
  }
  if (s.length % 4 !== 0) throw new Error(`${where}: ${s.length} bytes is not a whole number of float32 values`);
  const bytes = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) bytes[i] = s.charCodeAt(i);
  return new Float32Array(bytes.buffer);
}

const encodeTensors = (ts: NamedTensor[]) => ts.map((t) => ({ name: t.name, dtype: t.dtype, shape: t.shape, data: toBase64(Float32Array.from(t.data as ArrayLike<number>)) }));

function decodeTensors(raw: unknown, where: string): NamedTensor[] {
  if (!Array.isArray(raw)) throw new Error(`${where}: must be a list of tensors`);
  return raw.map((t: unknown, i) => {
    const r = t as { name?: unknown; dtype?: unknown; shape?: unknown; data?: unknown } | null;
    const at = `${where}[${i}]`;
    if (!r || typeof r.name !== 'string') throw new Error(`${at}: no tensor name`);
    if (r.dtype !== 'float32') throw new Error(`${at} (${r.name}): dtype ${JSON.stringify(r.dtype)}, only float32 is supported`);
    if (!Array.isArray(r.shape) || !r.shape.every((d) => Number.isInteger(d) && d >= 0)) throw new Error(`${at} (${r.name}): shape must be a list of sizes`);
    if (typeof r.data !== 'string') throw new Error(`${at} (${r.name}): data must be a base64 string`);
    const data = fromBase64(r.data, `${at} (${r.name})`);
    const n = (r.shape as number[]).reduce((a, b) => a * b, 1);
    if (data.length !== n) throw new Error(`${at} (${r.name}): ${data.length} values for shape [${(r.shape as number[]).join(', ')}]`);
    return { name: r.name, dtype: 'float32', shape: r.shape as number[], data } as NamedTensor;
  });
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

/** Parses checkpointToJson's text; errors name the file (`label`) and the bad part. */
export function checkpointFromJson(text: string, label: string): RecipeCheckpoint {
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(text) as Record<string, unknown>;
  } catch (e) {
    throw new Error(`${label}: not valid JSON: ${(e as Error).message}`);
  }
  if (!o || typeof o !== 'object' || o.kind !== FILE_KIND) throw new Error(`${label}: not a recipe checkpoint (write one with lab --recipe ... --save-checkpoint FILE)`);
  if (o.format !== 1) throw new Error(`${label}: checkpoint format ${JSON.stringify(o.format)} is not supported (expected 1)`);
  if (typeof o.recipe !== 'string' || typeof o.seed !== 'number' || typeof o.step !== 'number') throw new Error(`${label}: recipe, seed or step missing`);
  const opt = (o.optimizer ?? {}) as { state?: { step?: number }; tensors?: unknown };
  return {
    format: 1,
    recipe: o.recipe,
    seed: o.seed,
    step: o.step,
    config: (o.config ?? {}) as Record<string, unknown>,
    tensors: decodeTensors(o.tensors, `${label}: tensors`),
    optimizer: { state: { step: opt.state?.step ?? 0 }, tensors: decodeTensors(opt.tensors ?? [], `${label}: optimizer.tensors`) },
    rng: (o.rng ?? {}) as Record<string, number>,
    extra: (o.extra ?? {}) as Record<string, unknown>,
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
  if (!Number.isInteger(r) || typeof alpha !== 'number') throw new Error(`${label}: config has no loraRank / loraAlpha (recipe "${p.recipe}" trains no LoRA adapter?)`);
  if (!(LORA_TARGET_SETS as readonly unknown[]).includes(targets)) throw new Error(`${label}: config loraTargets ${JSON.stringify(targets)} is not one of ${LORA_TARGET_SETS.join(', ')}`);
  const prefix = part ? `${part}/` : '';
  const byName = new Map(p.tensors.filter((t) => t.name.startsWith(prefix)).map((t) => [t.name.slice(prefix.length), t]));
  if (part && byName.size === 0) throw new Error(`${label}: no "${part}" adapter (tensor names: ${p.tensors.slice(0, 2).map((t) => t.name).join(', ')} ...)`);
  // The adapter as it was trained: rsLoRA scale, and only the layers the checkpoint holds.
  const layerOf = (n: string) => Number(/\.layers\.(\d+)\./.exec(n)?.[1] ?? NaN);
  const held = [...new Set([...byName.keys()].map(layerOf).filter(Number.isInteger))].sort((x, y) => x - y);
  const layers = held.length > 0 && held.length < model.config.numLayers ? held : undefined;
  const set = attachLora(model, { r: r as number, alpha, targets: loraTargets(targets as LoraTargetSet), useRslora: c.loraUseRslora === true, layers });
  try {
    for (const a of set.adapters) {
      for (const [which, v] of [['A', a.A], ['B', a.B]] as const) {
        const name = peftTensorName(a.module, which);
        const t = byName.get(name);
        if (!t) throw new Error(`${label}: no tensor "${prefix}${name}" (different model or LoRA targets?)`);
        if (t.shape.length !== v.shape.length || t.shape.some((d, i) => d !== v.shape[i])) {
          throw new Error(`${label}: tensor "${prefix}${name}" has shape [${t.shape.join(', ')}], the model's adapter is [${v.shape.join(', ')}]`);
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
