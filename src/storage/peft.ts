// LoRA adapters in and out of the PEFT folder format, as a zip, and merged weights as an HF
// model.safetensors.
//
// A PEFT LoRA folder (what `PeftModel.from_pretrained(base, folder)` loads):
//   adapter_config.json        peft_type "LORA", r, lora_alpha, target_modules, ...
//   adapter_model.safetensors  base_model.model.model.layers.{i}.self_attn.q_proj.lora_A.weight [r, in]
//                              base_model.model.model.layers.{i}.self_attn.q_proj.lora_B.weight [out, r]
//                              (mlp.gate_proj / up_proj / down_proj for the MLP), metadata format "pt"
// PEFT's forward is y = W x + s B (A x) with s = lora_alpha / r (lora_alpha / sqrt(r) with
// use_rslora), the same convention as src/model/lora.ts, so weights cross unchanged.
//
// The adapter here is a plain record of typed arrays (no tfjs), so the UI thread can zip and
// unzip without a backend; converters bridge to the LoraSet of src/model/lora.ts through the
// PEFT-named tensors that lora.ts already reads and writes (peftTensors / loadPeftTensors).
// Only type imports from lora.ts and llama.ts: a value import would pull tfjs into the UI bundle.

import { strFromU8, strToU8, zipSync, type Zippable } from 'fflate';
import type { ModelConfig } from '../contract/modelConfig';
import type { ProjName } from '../model/llama';
import type { LoraConfig } from '../model/lora';
import {
  checkFinite,
  parseSafetensors,
  SafetensorsError,
  writeSafetensors,
  type SafetensorsFile,
  type TensorToWrite,
} from '../model/safetensors';
import { brief, briefName, briefShape, briefText, clampMessage } from '../contract/brief';
import {
  DEFAULT_ZIP_LIMITS,
  extractEntry,
  readCentralDirectory,
  runSync,
  runYielding,
  ZipError,
  type ZipEntry,
  type ZipLimits,
} from './zip';

export class PeftError extends Error {
  constructor(message: string) {
    super(clampMessage(message));
    this.name = 'PeftError';
  }
}

/** The base model dimensions an adapter must agree with (a subset of ModelConfig). */
export type BaseDims = Pick<
  ModelConfig,
  'hiddenSize' | 'intermediateSize' | 'numHeads' | 'numKvHeads' | 'headDim' | 'numLayers'
>;

export interface LoraPair {
  /** [r, in], row-major */
  A: Float32Array;
  /** [out, r], row-major */
  B: Float32Array;
}

export interface PlainLoraAdapter {
  r: number;
  alpha: number;
  dropout: number;
  useRslora: boolean;
  /** layer index -> projection -> its A and B. Every adapted layer has the same projections. */
  layers: Map<number, Partial<Record<ProjName, LoraPair>>>;
}

/** Projections in PEFT / HF module order. */
export const PROJS: readonly ProjName[] = ['q', 'k', 'v', 'o', 'gate', 'up', 'down'];

/** HF module name and parent block of each projection. */
export const HF_PROJ = {
  q: { module: 'q_proj', block: 'self_attn' },
  k: { module: 'k_proj', block: 'self_attn' },
  v: { module: 'v_proj', block: 'self_attn' },
  o: { module: 'o_proj', block: 'self_attn' },
  gate: { module: 'gate_proj', block: 'mlp' },
  up: { module: 'up_proj', block: 'mlp' },
  down: { module: 'down_proj', block: 'mlp' },
} as const satisfies Record<ProjName, { module: string; block: 'self_attn' | 'mlp' }>;

const BY_MODULE = new Map(PROJS.map((p) => [HF_PROJ[p].module as string, p]));

/** [out, in] of a projection's weight in the base model. */
export function projDims(d: BaseDims, p: ProjName): { out: number; in: number } {
  const q = d.numHeads * d.headDim;
  const kv = d.numKvHeads * d.headDim;
  switch (p) {
    case 'q':
      return { out: q, in: d.hiddenSize };
    case 'k':
    case 'v':
      return { out: kv, in: d.hiddenSize };
    case 'o':
      return { out: d.hiddenSize, in: q };
    case 'gate':
    case 'up':
      return { out: d.intermediateSize, in: d.hiddenSize };
    case 'down':
      return { out: d.hiddenSize, in: d.intermediateSize };
  }
}

/** HF module path, e.g. model.layers.3.mlp.down_proj (= Linear.name in src/model). */
export function hfModule(layer: number, p: ProjName): string {
  return `model.layers.${layer}.${HF_PROJ[p].block}.${HF_PROJ[p].module}`;
}

/** PEFT key of an adapter matrix (= peftTensorName of src/model/lora.ts). */
export function peftKey(layer: number, p: ProjName, which: 'A' | 'B'): string {
  return `base_model.model.${hfModule(layer, p)}.lora_${which}.weight`;
}

const KEY_RE = /^base_model\.model\.model\.layers\.(\d+)\.(self_attn|mlp)\.([a-z_]+)\.lora_([AB])\.weight$/;

/** Parses a PEFT key; null if it is not a LoRA A/B of a Llama-family projection. */
export function parsePeftKey(key: string): { layer: number; proj: ProjName; which: 'A' | 'B' } | null {
  const m = KEY_RE.exec(key);
  if (!m) return null;
  const proj = BY_MODULE.get(m[3]);
  if (!proj || HF_PROJ[proj].block !== m[2]) return null;
  const layer = Number(m[1]);
  if (!Number.isSafeInteger(layer) || String(layer) !== m[1]) return null;
  return { layer, proj, which: m[4] as 'A' | 'B' };
}

/** The projections the adapter targets, in PROJS order (from its first layer). */
export function adapterTargets(a: PlainLoraAdapter): ProjName[] {
  const first = [...a.layers.values()][0] ?? {};
  return PROJS.filter((p) => first[p] !== undefined);
}

/** Checks the adapter against the base dims; throws PeftError naming the layer and projection. */
export function validateAdapter(a: PlainLoraAdapter, dims: BaseDims, where = 'LoRA adapter'): void {
  if (!Number.isSafeInteger(a.r) || a.r <= 0) throw new PeftError(`${where}: r must be a positive integer, got ${a.r}`);
  if (!(a.alpha > 0)) throw new PeftError(`${where}: alpha must be positive, got ${a.alpha}`);
  if (!(a.dropout >= 0 && a.dropout < 1)) throw new PeftError(`${where}: dropout must be in [0, 1), got ${a.dropout}`);
  if (a.layers.size === 0) throw new PeftError(`${where}: no adapted layers`);
  const targets = adapterTargets(a);
  if (targets.length === 0) throw new PeftError(`${where}: no adapted projections`);
  for (const [layer, projs] of a.layers) {
    if (!Number.isSafeInteger(layer) || layer < 0 || layer >= dims.numLayers) {
      throw new PeftError(`${where}: layer ${layer} does not exist (the base model has ${dims.numLayers} layers)`);
    }
    const here = PROJS.filter((p) => projs[p] !== undefined);
    if (here.join() !== targets.join()) {
      // PEFT applies one target_modules list to every layer; a ragged adapter has no PEFT form.
      throw new PeftError(
        `${where}: layer ${layer} adapts [${here.map((p) => HF_PROJ[p].module)}] but other layers adapt [${targets.map((p) => HF_PROJ[p].module)}]`,
      );
    }
    for (const p of here) {
      const { A, B } = projs[p]!;
      const { out, in: inn } = projDims(dims, p);
      if (!(A instanceof Float32Array) || A.length !== a.r * inn) {
        throw new PeftError(
          `${where}: ${hfModule(layer, p)} A has ${A?.length} values, expected r x in = ${a.r} x ${inn} = ${a.r * inn}`,
        );
      }
      if (!(B instanceof Float32Array) || B.length !== out * a.r) {
        throw new PeftError(
          `${where}: ${hfModule(layer, p)} B has ${B?.length} values, expected out x r = ${out} x ${a.r} = ${out * a.r}`,
        );
      }
    }
  }
}

/** The adapter's tensors under PEFT names (layer order, then PROJS order, A before B). */
export function peftTensorMap(a: PlainLoraAdapter, dims: BaseDims): Map<string, TensorToWrite> {
  const out = new Map<string, TensorToWrite>();
  for (const layer of [...a.layers.keys()].sort((x, y) => x - y)) {
    const projs = a.layers.get(layer)!;
    for (const p of PROJS) {
      const pair = projs[p];
      if (!pair) continue;
      const d = projDims(dims, p);
      out.set(peftKey(layer, p, 'A'), { dtype: 'F32', shape: [a.r, d.in], data: pair.A });
      out.set(peftKey(layer, p, 'B'), { dtype: 'F32', shape: [d.out, a.r], data: pair.B });
    }
  }
  return out;
}

export interface PeftExportOptions {
  /** base_model_name_or_path, e.g. "HuggingFaceTB/SmolLM2-135M-Instruct". */
  baseModel: string;
  dims: BaseDims;
  /** Put the files in this folder inside the zip (default: at the root). */
  folder?: string;
  /** Timestamp of the zip entries (default now). */
  mtime?: Date | number;
  /** README.md written next to the adapter (what the base reference means, how to load it). */
  readme?: string;
}

/** adapter_config.json as PEFT writes it for this adapter. */
export function peftAdapterConfigJson(a: PlainLoraAdapter, baseModel: string, dims: BaseDims): Record<string, unknown> {
  const layers = [...a.layers.keys()].sort((x, y) => x - y);
  const all = layers.length === dims.numLayers;
  return {
    peft_type: 'LORA',
    task_type: 'CAUSAL_LM',
    base_model_name_or_path: baseModel,
    revision: null,
    r: a.r,
    lora_alpha: a.alpha,
    lora_dropout: a.dropout,
    target_modules: adapterTargets(a).map((p) => HF_PROJ[p].module),
    bias: 'none',
    fan_in_fan_out: false,
    use_rslora: a.useRslora,
    use_dora: false,
    inference_mode: true,
    init_lora_weights: true,
    modules_to_save: null,
    // null = every layer; PEFT matches a list against the layer index in the module path.
    layers_to_transform: all ? null : layers,
    layers_pattern: null,
    rank_pattern: {},
    alpha_pattern: {},
  };
}

/** A PEFT adapter folder (adapter_config.json + adapter_model.safetensors) as zip bytes. */
export function exportPeftZip(a: PlainLoraAdapter, opts: PeftExportOptions): Uint8Array {
  validateAdapter(a, opts.dims);
  const config = peftAdapterConfigJson(a, opts.baseModel, opts.dims);
  const st = writeSafetensors(peftTensorMap(a, opts.dims), { format: 'pt' });
  const mtime = opts.mtime ?? new Date();
  // Float weights barely deflate: store them, deflate only the JSON.
  const files: Zippable = {
    'adapter_config.json': [strToU8(`${JSON.stringify(config, null, 2)}\n`), { level: 6, mtime }],
    'adapter_model.safetensors': [st, { level: 0, mtime }],
    ...(opts.readme === undefined ? {} : { 'README.md': [strToU8(opts.readme), { level: 6, mtime }] }),
  };
  return zipSync(opts.folder ? { [opts.folder.replace(/\/+$/, '')]: files } : files);
}

// ---------------------------------------------------------------------------------------------
// Import

/**
 * Most bytes an adapter_model.safetensors can have for `dims` at the config's rank `r`: every
 * projection of every layer adapted, 8 bytes a value (F64 at most), plus 1 MiB of header. Null
 * when the config has no usable rank (its own check then names the field).
 */
export function adapterBytesBound(configText: string, dims: BaseDims): number | null {
  let r: unknown;
  try {
    r = (JSON.parse(configText) as { r?: unknown } | null)?.r;
  } catch {
    return null;
  }
  if (typeof r !== 'number' || !Number.isSafeInteger(r) || r <= 0) return null;
  const perLayer = PROJS.reduce((n, p) => {
    const d = projDims(dims, p);
    return n + r * (d.in + d.out);
  }, 0);
  return perLayer * dims.numLayers * 8 + 2 ** 20;
}

export interface PeftImportOptions {
  dims: BaseDims;
  /** The base model the adapter is meant for; compared with base_model_name_or_path. */
  expectedBase?: string;
  /** Import even when base_model_name_or_path differs from expectedBase (dims must still agree). */
  allowBaseMismatch?: boolean;
  /** Name of the zip in messages. */
  fileName?: string;
}

export interface PeftImport {
  adapter: PlainLoraAdapter;
  /** adapter_config.json as parsed. */
  config: Record<string, unknown>;
  baseModel: string | null;
  /** true when expectedBase was given, differed, and allowBaseMismatch let it through. */
  baseMismatch: boolean;
}

/** Repo ids are case-insensitive on the hub; trailing slashes and spaces carry no meaning. */
const normBase = (s: string) => s.trim().replace(/\/+$/, '').toLowerCase();

/** adapter_config.json above this is not a config (a real one is about 1 KB). */
export const MAX_ADAPTER_CONFIG_BYTES = 1024 * 1024;

/**
 * Reads a PEFT adapter zip (files at the root or inside one folder). The central directory is
 * checked against `limits` before anything is inflated; only adapter_config.json and
 * adapter_model.safetensors are inflated, and their CRC-32 checked.
 */
export function importPeftZip(zip: Uint8Array, opts: PeftImportOptions & { limits?: ZipLimits }): PeftImport {
  return runSync(peftZipJob(zip, opts));
}

/** importPeftZip in steps that give the event loop a turn, for the worker (Stop still answers). */
export function importPeftZipAsync(
  zip: Uint8Array,
  opts: PeftImportOptions & { limits?: ZipLimits },
): Promise<PeftImport> {
  return runYielding(peftZipJob(zip, opts));
}

function* peftZipJob(zip: Uint8Array, opts: PeftImportOptions & { limits?: ZipLimits }): Generator<void, PeftImport> {
  const zipName = opts.fileName ?? 'adapter.zip';
  try {
    const entries = readCentralDirectory(zip, zipName, opts.limits ?? DEFAULT_ZIP_LIMITS);
    const byName = new Map<string, ZipEntry>();
    for (const e of entries) if (!e.name.startsWith('__MACOSX/') && !e.name.endsWith('/')) byName.set(e.name, e);
    const configs = [...byName.keys()].filter((n) => n === 'adapter_config.json' || n.endsWith('/adapter_config.json'));
    if (configs.length === 0) {
      throw new PeftError(
        `${zipName}: no adapter_config.json (a PEFT adapter folder holds adapter_config.json and adapter_model.safetensors)`,
      );
    }
    if (configs.length > 1)
      throw new PeftError(`${zipName}: several adapters (${brief(configs)}); zip one adapter folder`);
    const cfgEntry = byName.get(configs[0])!;
    const dir = configs[0].slice(0, -'adapter_config.json'.length);
    const stName = `${dir}adapter_model.safetensors`;
    const stEntry = byName.get(stName);
    if (!stEntry) {
      const bin = byName.has(`${dir}adapter_model.bin`)
        ? ' (adapter_model.bin is a PyTorch pickle, not read here: save with safe_serialization=True)'
        : '';
      throw new PeftError(`${zipName}: no ${entryName(stName)}${bin}`);
    }
    if (cfgEntry.size > MAX_ADAPTER_CONFIG_BYTES) {
      throw new PeftError(
        `${zipName}/${entryName(configs[0])}: ${cfgEntry.size} bytes, over the ${MAX_ADAPTER_CONFIG_BYTES}-byte limit for an adapter config`,
      );
    }
    const config = strFromU8(yield* extractEntry(zip, cfgEntry, zipName));
    // The most bytes an adapter of the config's rank can hold for this base, checked against the
    // entry's declared size before anything is inflated (a 1 GiB entry was inflated in full, 26 s
    // and 1.1 GB, before the shapes refused it).
    const most = adapterBytesBound(config, opts.dims);
    if (most !== null && stEntry.size > most)
      throw new PeftError(
        `${zipName}/${entryName(stName)}: declares ${stEntry.size} bytes, more than an adapter of this rank can hold for this base model (at most ${most}); not inflated`,
      );
    const safetensors = yield* extractEntry(zip, stEntry, zipName);
    return importPeftFiles(
      { config, safetensors },
      {
        ...opts,
        configName: `${zipName}/${entryName(configs[0])}`,
        safetensorsName: `${zipName}/${entryName(stName)}`,
      },
    );
  } catch (e) {
    if (e instanceof ZipError) throw new PeftError(e.message);
    throw e;
  }
}

/** An entry name cut for messages (real ones are short; a hostile one may not be). */
const entryName = (s: string) => briefText(s, 120);

/** Reads an adapter from its two files (a picked folder, or the zip's entries). */
export function importPeftFiles(
  files: { config: string | Record<string, unknown>; safetensors: Uint8Array },
  opts: PeftImportOptions & { configName?: string; safetensorsName?: string },
): PeftImport {
  const cfgName = opts.configName ?? 'adapter_config.json';
  const stName = opts.safetensorsName ?? 'adapter_model.safetensors';
  const dims = opts.dims;
  let c: unknown = files.config;
  if (typeof c === 'string') {
    try {
      c = JSON.parse(c);
    } catch (e) {
      throw new PeftError(`${cfgName}: not valid JSON (${(e as Error).message})`);
    }
  }
  if (c === null || typeof c !== 'object' || Array.isArray(c)) throw new PeftError(`${cfgName}: must be a JSON object`);
  const cfg = c as Record<string, unknown>;
  const bad = (field: string, why: string): never => {
    throw new PeftError(`${cfgName}: field "${field}" is ${brief(cfg[field])}; ${why}`);
  };

  if (cfg.peft_type !== 'LORA') bad('peft_type', 'only "LORA" adapters can be imported');
  if (cfg.task_type !== undefined && cfg.task_type !== null && cfg.task_type !== 'CAUSAL_LM')
    bad('task_type', 'expected "CAUSAL_LM"');
  const r = cfg.r;
  if (typeof r !== 'number' || !Number.isSafeInteger(r) || r <= 0) bad('r', 'expected a positive integer');
  const alpha = cfg.lora_alpha;
  if (typeof alpha !== 'number' || !(alpha > 0)) bad('lora_alpha', 'expected a positive number');
  const dropout = cfg.lora_dropout ?? 0;
  if (typeof dropout !== 'number' || !(dropout >= 0 && dropout < 1)) bad('lora_dropout', 'expected a number in [0, 1)');
  const rs = cfg.use_rslora ?? false;
  if (typeof rs !== 'boolean') bad('use_rslora', 'expected true or false');
  if (cfg.use_dora !== undefined && cfg.use_dora !== false) bad('use_dora', 'DoRA adapters are not supported');
  if (cfg.bias !== undefined && cfg.bias !== 'none')
    bad('bias', 'only bias "none" is supported (no bias tensors are read)');
  if (cfg.fan_in_fan_out !== undefined && cfg.fan_in_fan_out !== false)
    bad('fan_in_fan_out', 'only false (nn.Linear layout) is supported');
  for (const f of ['modules_to_save'] as const) {
    const v = cfg[f];
    if (v !== undefined && v !== null && !(Array.isArray(v) && v.length === 0))
      bad(f, 'extra trained modules are not supported');
  }
  for (const f of ['rank_pattern', 'alpha_pattern'] as const) {
    const v = cfg[f];
    if (v !== undefined && v !== null && !(typeof v === 'object' && Object.keys(v).length === 0))
      bad(f, 'per-module ranks or alphas are not supported');
  }
  const tm = cfg.target_modules;
  if (!Array.isArray(tm) || tm.length === 0) {
    bad(
      'target_modules',
      `expected a list of module names (${PROJS.map((p) => HF_PROJ[p].module).join(', ')}); regexes and "all-linear" are not supported`,
    );
  }
  const targets = new Set<ProjName>();
  for (const m of tm as unknown[]) {
    const p = typeof m === 'string' ? BY_MODULE.get(m) : undefined;
    if (!p) bad('target_modules', `${brief(m)} is not one of ${PROJS.map((x) => HF_PROJ[x].module).join(', ')}`);
    targets.add(p!);
  }
  let layers: number[];
  const ltt = cfg.layers_to_transform;
  if (ltt === undefined || ltt === null) layers = Array.from({ length: dims.numLayers }, (_, i) => i);
  else {
    layers = typeof ltt === 'number' ? [ltt] : Array.isArray(ltt) ? (ltt as number[]) : [];
    if (layers.length === 0 || !layers.every((i) => Number.isSafeInteger(i) && i >= 0 && i < dims.numLayers)) {
      bad(
        'layers_to_transform',
        `expected null or layer indices in [0, ${dims.numLayers - 1}] (the base model has ${dims.numLayers} layers)`,
      );
    }
  }
  const baseModel = typeof cfg.base_model_name_or_path === 'string' ? cfg.base_model_name_or_path : null;
  let baseMismatch = false;
  if (opts.expectedBase !== undefined && (baseModel === null || normBase(baseModel) !== normBase(opts.expectedBase))) {
    if (!opts.allowBaseMismatch)
      bad(
        'base_model_name_or_path',
        `this adapter was trained on another base than "${opts.expectedBase}" (allow a base mismatch to import it anyway)`,
      );
    baseMismatch = true;
  }

  let st: SafetensorsFile;
  try {
    st = parseSafetensors(files.safetensors, stName);
  } catch (e) {
    if (e instanceof SafetensorsError) throw new PeftError(e.message);
    throw e;
  }
  const R = r as number;
  const adapter: PlainLoraAdapter = {
    r: R,
    alpha: alpha as number,
    dropout: dropout as number,
    useRslora: rs as boolean,
    layers: new Map(),
  };
  const layerSet = new Set(layers);
  for (const key of st.names()) {
    const k = parsePeftKey(key);
    const where = `${stName}: tensor ${briefName(key)}`;
    if (!k)
      throw new PeftError(
        `${where} is not a LoRA weight of a Llama-family projection (expected base_model.model.model.layers.{i}.{self_attn|mlp}.{q|k|v|o|gate|up|down}_proj.lora_{A|B}.weight)`,
      );
    if (k.layer >= dims.numLayers)
      throw new PeftError(`${where}: layer ${k.layer} does not exist (the base model has ${dims.numLayers} layers)`);
    if (!layerSet.has(k.layer))
      throw new PeftError(`${where}: layer ${k.layer} is not in layers_to_transform of ${cfgName}`);
    if (!targets.has(k.proj))
      throw new PeftError(`${where}: ${HF_PROJ[k.proj].module} is not in target_modules of ${cfgName}`);
    const info = st.info(key);
    if (!['F32', 'F16', 'BF16', 'F64'].includes(info.dtype))
      throw new PeftError(`${where}: dtype ${info.dtype} is not a float type`);
    const d = projDims(dims, k.proj);
    const want = k.which === 'A' ? [R, d.in] : [d.out, R];
    if (info.shape.length !== 2 || info.shape[0] !== want[0] || info.shape[1] !== want[1]) {
      const meaning =
        k.which === 'A' ? `[r, in] with r = ${R} from ${cfgName}` : `[out, r] with r = ${R} from ${cfgName}`;
      throw new PeftError(
        `${where} has shape ${briefShape(info.shape)}, expected [${want.join(', ')}] = ${meaning} and the base model's ${HF_PROJ[k.proj].module} [out ${d.out}, in ${d.in}]`,
      );
    }
    const entry = adapter.layers.get(k.layer) ?? {};
    adapter.layers.set(k.layer, entry);
    const pair = (entry[k.proj] ??= { A: new Float32Array(0), B: new Float32Array(0) });
    const values = st.getFloat32(key);
    try {
      checkFinite(values, key, stName, info.shape);
    } catch (e) {
      if (e instanceof SafetensorsError) throw new PeftError(e.message);
      throw e;
    }
    pair[k.which] = values;
  }
  // Every configured (layer, target) must be present: PEFT would silently keep a fresh (B = 0)
  // adapter for a missing one; here a missing tensor is a broken file.
  for (const layer of layers) {
    for (const p of PROJS) {
      if (!targets.has(p)) continue;
      for (const which of ['A', 'B'] as const) {
        const pair = adapter.layers.get(layer)?.[p];
        if (!pair || pair[which].length === 0) {
          throw new PeftError(
            `${stName}: missing tensor "${peftKey(layer, p, which)}" (${cfgName} targets ${HF_PROJ[p].module} on layer ${layer})`,
          );
        }
      }
    }
  }
  return { adapter, config: cfg, baseModel, baseMismatch };
}

// ---------------------------------------------------------------------------------------------
// Converters to and from src/model/lora.ts

/** LoraConfig for attachLora() that recreates this adapter's structure (then load its weights). */
export function toLoraConfig(a: PlainLoraAdapter, seed = 0): LoraConfig {
  return {
    r: a.r,
    alpha: a.alpha,
    targets: adapterTargets(a),
    dropout: a.dropout,
    useRslora: a.useRslora,
    seed,
    layers: [...a.layers.keys()].sort((x, y) => x - y),
  };
}

/**
 * From what `peftTensors(set)` of lora.ts returns (PEFT-named float32 tensors) and the set's
 * config. Throws on a name that is not a PEFT LoRA key.
 */
export function fromPeftTensors(
  tensors: Record<string, { shape: number[]; data: Float32Array }>,
  config: Pick<LoraConfig, 'r' | 'alpha' | 'dropout' | 'useRslora'>,
): PlainLoraAdapter {
  const a: PlainLoraAdapter = {
    r: config.r,
    alpha: config.alpha,
    dropout: config.dropout ?? 0,
    useRslora: config.useRslora ?? false,
    layers: new Map(),
  };
  for (const [name, t] of Object.entries(tensors)) {
    const k = parsePeftKey(name);
    if (!k) throw new PeftError(`LoRA tensor "${name}" is not a PEFT LoRA key`);
    const entry = a.layers.get(k.layer) ?? {};
    a.layers.set(k.layer, entry);
    const pair = (entry[k.proj] ??= { A: new Float32Array(0), B: new Float32Array(0) });
    pair[k.which] = t.data;
  }
  return a;
}

/** The adapter as a safetensors TensorSource under PEFT names: feed it to loadPeftTensors(set, src). */
export function adapterTensorSource(
  a: PlainLoraAdapter,
  dims: BaseDims,
  fileName = 'adapter_model.safetensors',
): SafetensorsFile {
  validateAdapter(a, dims);
  return parseSafetensors(writeSafetensors(peftTensorMap(a, dims)), fileName);
}

// ---------------------------------------------------------------------------------------------
// Merged weights

const HF_NAME_RE =
  /^(?:model\.embed_tokens\.weight|model\.norm\.weight|lm_head\.weight|model\.layers\.(\d+)\.(?:(?:input_layernorm|post_attention_layernorm|pre_feedforward_layernorm|post_feedforward_layernorm|self_attn\.[qk]_norm)\.weight|self_attn\.([qkvo])_proj\.(weight|bias)|mlp\.(gate|up|down)_proj\.(weight|bias)))$/;

/** HF name of a projection's weight: model.layers.{i}.self_attn.q_proj.weight and so on. */
export function hfWeightName(layer: number, p: ProjName, kind: 'weight' | 'bias' = 'weight'): string {
  return `${hfModule(layer, p)}.${kind}`;
}

export interface MergedTensor {
  shape: number[];
  /** float32 values (or raw F16/BF16 bits as Uint16Array when dtype says so). */
  data: Float32Array | Uint16Array;
  /** Stored dtype (default the export's dtype). */
  dtype?: 'F32' | 'F16' | 'BF16';
}

/**
 * A Hugging Face model.safetensors of merged weights (e.g. mergeLora's output read back). Every
 * name must be an HF parameter name of a family the lab loads (Llama, Qwen2, Qwen3, Gemma 3); with dims, projection shapes are checked too.
 */
export function exportMergedSafetensors(
  tensors: Map<string, MergedTensor> | Record<string, MergedTensor>,
  opts: { dtype?: 'F32' | 'F16' | 'BF16'; dims?: BaseDims; metadata?: Record<string, string> } = {},
): Uint8Array {
  const entries = tensors instanceof Map ? [...tensors] : Object.entries(tensors);
  const out = new Map<string, TensorToWrite>();
  for (const [name, t] of entries) {
    const m = HF_NAME_RE.exec(name);
    if (!m) {
      const hint = name.startsWith('base_model.model.') ? ' (strip the PEFT prefix "base_model.model.")' : '';
      throw new PeftError(
        `model.safetensors: tensor "${name}" is not a Hugging Face Llama/Qwen2 parameter name, e.g. model.layers.0.self_attn.q_proj.weight${hint}`,
      );
    }
    if (opts.dims) {
      const layer = m[1] === undefined ? null : Number(m[1]);
      if (layer !== null && layer >= opts.dims.numLayers)
        throw new PeftError(
          `model.safetensors: tensor "${name}": layer ${layer} does not exist (the base model has ${opts.dims.numLayers} layers)`,
        );
      const proj = (m[2] ?? m[4]) as ProjName | undefined;
      if (proj && (m[3] ?? m[5]) === 'weight') {
        const d = projDims(opts.dims, proj);
        if (t.shape.length !== 2 || t.shape[0] !== d.out || t.shape[1] !== d.in) {
          throw new PeftError(
            `model.safetensors: tensor "${name}" has shape [${t.shape.join(', ')}], expected [${d.out}, ${d.in}]`,
          );
        }
      }
    }
    const dtype = t.dtype ?? opts.dtype ?? 'F32';
    // Raw half bits read as numbers would be silently wrong weights.
    if (t.data instanceof Uint16Array && dtype === 'F32')
      throw new PeftError(`model.safetensors: tensor "${name}": Uint16Array data needs dtype F16 or BF16`);
    out.set(name, { dtype, shape: t.shape, data: t.data });
  }
  try {
    return writeSafetensors(out, { format: 'pt', ...opts.metadata });
  } catch (e) {
    if (e instanceof SafetensorsError) throw new PeftError(e.message.replace(/^writeSafetensors/, 'model.safetensors'));
    throw e;
  }
}
