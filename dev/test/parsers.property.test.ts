// Property tests of every parser a user feeds files or links to (issue 24): for generated valid
// inputs and their mutations, each parser is total (a value, or one error of its own class with a
// message of at most MAX_MESSAGE_CHARS, never another exception), and what it accepts meets the
// format's invariants. Seeded (RUNS) so failures reproduce; sized to run in a few seconds each.
import fc from 'fast-check';
import { strFromU8, strToU8, unzipSync, zipSync } from 'fflate';
import { describe, expect, it } from 'vitest';
import { DatasetError, parseCsv, parseDataset, parseJsonl, type DatasetRow } from '../../src/contract/datasetLoaders';
import { MAX_MESSAGE_CHARS } from '../../src/contract/brief';
import { bool, int, num, oneOf } from '../../src/contract/schema';
import {
  exportPeftZip,
  importPeftZip,
  PeftError,
  projDims,
  PROJS,
  validateAdapter,
  type BaseDims,
  type LoraPair,
  type PlainLoraAdapter,
} from '../../src/storage/peft';
import { JsonlError, parseReportsJsonl as parseStoredJsonl } from '../../src/storage/runs';
import { parseReportsJsonl as parseReplayJsonl, ReplayError } from '../../src/store/runStoreJsonl';
import { decodeSetup } from '../../src/store/setupUrl';
import { CONFIG_LIMITS, ConfigError, parseModelConfig, ropeInvFreq } from '../../src/contract/modelConfig';
import {
  DTYPE_BYTES,
  parseSafetensors,
  READABLE_DTYPES,
  SafetensorsError,
  writeSafetensors,
  type TensorToWrite,
} from '../../src/model/safetensors';
import {
  byteMutation,
  deepText,
  extremeNumberText,
  hostileJsonText,
  hostileValue,
  longString,
  mutateBytes,
  RUNS,
  total,
} from './mutate';

// ---------------------------------------------------------------------------------------------
// safetensors

const WRITABLE = ['F32', 'F16', 'BF16', 'I8', 'U8', 'I32'] as const;

const tensorArb = fc
  .record({
    dtype: fc.constantFrom(...WRITABLE),
    shape: fc.array(fc.integer({ min: 0, max: 4 }), { maxLength: 3 }),
    seed: fc.integer({ min: 0, max: 1000 }),
  })
  .map(({ dtype, shape, seed }): TensorToWrite => {
    const n = shape.reduce((a, b) => a * b, 1);
    const ints = dtype === 'I8' || dtype === 'U8' || dtype === 'I32';
    const data = Array.from({ length: n }, (_, i) => (ints ? (seed + i * 7) % 100 : Math.sin(seed + i) * 10));
    return { dtype, shape, data };
  });

const safetensorsArb = fc
  .uniqueArray(fc.tuple(fc.string({ minLength: 1, maxLength: 12, unit: 'grapheme' }), tensorArb), {
    selector: ([n]) => n,
    maxLength: 5,
  })
  .map((entries) => entries.filter(([n]) => n !== '__metadata__'))
  .map((entries) => ({ entries, bytes: writeSafetensors(new Map(entries), { format: 'pt' }) }));

/** What an accepted file must satisfy: the data block tiled exactly, every readable tensor readable. */
function checkSafetensorsInvariants(bytes: Uint8Array): void {
  const r = total(() => parseSafetensors(bytes, 'p.safetensors'), SafetensorsError);
  if (!r.ok) return;
  const f = r.value;
  const dataStart = 8 + f.headerLength;
  const spans = f
    .names()
    .map((n) => f.info(n))
    .sort((a, b) => a.byteOffset - b.byteOffset || a.byteLength - b.byteLength);
  let pos = dataStart;
  for (const t of spans) {
    expect(t.byteOffset).toBe(pos);
    expect(t.byteLength).toBe(t.shape.reduce((a, b) => a * b, 1) * DTYPE_BYTES[t.dtype]);
    pos += t.byteLength;
  }
  expect(pos).toBe(bytes.length);
  expect(bytes[8]).toBe(0x7b);
  for (const n of f.names()) {
    const got = total(() => f.getFloat32(n), SafetensorsError);
    if (READABLE_DTYPES.includes(f.info(n).dtype)) {
      expect(got.ok).toBe(true);
      if (got.ok) expect(got.value.length).toBe(f.info(n).shape.reduce((a, b) => a * b, 1));
    }
  }
}

/** A file built from header JSON text (any text) and `dataLength` zero bytes. */
function fileFromHeaderText(header: string, dataLength: number): Uint8Array {
  const hb = new TextEncoder().encode(header);
  const out = new Uint8Array(8 + hb.length + dataLength);
  new DataView(out.buffer).setBigUint64(0, BigInt(hb.length), true);
  out.set(hb, 8);
  return out;
}

describe('safetensors parser: total, and what it accepts is tiled exactly', () => {
  it('valid files round-trip every value', () => {
    fc.assert(
      fc.property(safetensorsArb, ({ entries, bytes }) => {
        const f = parseSafetensors(bytes);
        expect(f.names()).toEqual(entries.map(([n]) => n));
        for (const [n, t] of entries) {
          const back = f.getFloat32(n);
          const want = t.dtype === 'F32' ? Float32Array.from(t.data) : null;
          if (want) expect(back).toEqual(want);
          else expect(back.length).toBe(t.data.length);
        }
        checkSafetensorsInvariants(bytes);
      }),
      RUNS(100),
    );
  });

  it('byte mutations (flips, truncation, insertion, overwritten lengths) get a value or a SafetensorsError', () => {
    fc.assert(
      fc.property(safetensorsArb, fc.array(byteMutation, { minLength: 1, maxLength: 3 }), ({ bytes }, ms) => {
        checkSafetensorsInvariants(ms.reduce(mutateBytes, bytes));
      }),
      RUNS(400),
    );
  });

  it('header length off by a few bytes, or huge, is refused', () => {
    fc.assert(
      fc.property(
        safetensorsArb,
        fc.oneof(
          fc.integer({ min: -16, max: 16 }).filter((d) => d !== 0),
          fc.constantFrom(2 ** 32, 2 ** 53, 100 * 2 ** 20 + 1),
        ),
        ({ bytes }, delta) => {
          const n = Number(new DataView(bytes.buffer).getBigUint64(0, true));
          const b = bytes.slice();
          const len = delta > 16 ? delta : n + delta;
          if (len < 0) return;
          new DataView(b.buffer).setBigUint64(0, BigInt(len), true);
          const r = total(() => parseSafetensors(b), SafetensorsError);
          // Any shift of the header end moves the data block, which then cannot tile exactly
          // (the data is non-empty) or the JSON is cut; an empty data block with a shift into
          // trailing spaces is the one harmless case.
          if (r.ok) expect(bytes.length - 8 - n === 0 || len === n).toBe(true);
          checkSafetensorsInvariants(b);
        },
      ),
      RUNS(200),
    );
  });

  it('hostile header fields (extreme numbers, deep nesting, long strings, wrong types) get a SafetensorsError', () => {
    const field = fc.oneof(hostileJsonText, fc.constant('"F32"'), fc.constant('[2]'), fc.constant('[0,8]'));
    fc.assert(
      fc.property(field, field, field, fc.integer({ min: 0, max: 16 }), (dtype, shape, offsets, dataLength) => {
        const header = `{"w":{"dtype":${dtype},"shape":${shape},"data_offsets":${offsets}}}`;
        checkSafetensorsInvariants(fileFromHeaderText(header, dataLength));
        checkSafetensorsInvariants(
          fileFromHeaderText(`{"__metadata__":${shape},"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, 1),
        );
      }),
      RUNS(300),
    );
  });
});

// ---------------------------------------------------------------------------------------------
// config.json

const configArb = fc
  .record({
    headDim: fc.constantFrom(2, 4, 8, 16, 64, 128),
    kv: fc.integer({ min: 1, max: 4 }),
    group: fc.integer({ min: 1, max: 4 }),
    inter: fc.integer({ min: 1, max: 4096 }),
    layers: fc.integer({ min: 1, max: 64 }),
    vocab: fc.integer({ min: 2, max: 200_000 }),
    explicitHeadDim: fc.boolean(),
    qwen: fc.boolean(),
    scaling: fc.constantFrom('none', 'linear', 'llama3'),
    tie: fc.boolean(),
  })
  .map((g) => {
    const heads = g.kv * g.group;
    const c: Record<string, unknown> = {
      architectures: [g.qwen ? 'Qwen2ForCausalLM' : 'LlamaForCausalLM'],
      hidden_size: heads * g.headDim,
      num_attention_heads: heads,
      num_key_value_heads: g.kv,
      intermediate_size: g.inter,
      num_hidden_layers: g.layers,
      vocab_size: g.vocab,
      rms_norm_eps: 1e-5,
      rope_theta: 10000,
      tie_word_embeddings: g.tie,
      bos_token_id: 0,
      eos_token_id: [1 % g.vocab, g.vocab - 1],
      pad_token_id: g.vocab - 1,
    };
    if (g.explicitHeadDim) c.head_dim = g.headDim;
    if (g.scaling === 'linear') c.rope_scaling = { rope_type: 'linear', factor: 2 };
    if (g.scaling === 'llama3')
      c.rope_scaling = {
        rope_type: 'llama3',
        factor: 8,
        low_freq_factor: 1,
        high_freq_factor: 4,
        original_max_position_embeddings: 8192,
      };
    return c;
  });

const CONFIG_FIELDS = [
  'architectures',
  'model_type',
  'hidden_size',
  'num_attention_heads',
  'num_key_value_heads',
  'head_dim',
  'intermediate_size',
  'num_hidden_layers',
  'vocab_size',
  'rms_norm_eps',
  'rope_theta',
  'rope_scaling',
  'max_position_embeddings',
  'tie_word_embeddings',
  'bos_token_id',
  'eos_token_id',
  'pad_token_id',
  'hidden_act',
  'partial_rotary_factor',
  'attention_bias',
] as const;

function checkConfigInvariants(input: unknown): void {
  const r = total(() => parseModelConfig(input, 'p/config.json'), ConfigError);
  if (!r.ok) return;
  const c = r.value;
  for (const [k, v] of [
    ['vocab_size', c.vocabSize],
    ['hidden_size', c.hiddenSize],
    ['intermediate_size', c.intermediateSize],
    ['num_hidden_layers', c.numLayers],
    ['num_attention_heads', c.numHeads],
    ['head_dim', c.headDim],
  ] as const) {
    expect(Number.isSafeInteger(v) && v > 0 && v <= CONFIG_LIMITS[k]).toBe(true);
  }
  expect(c.numHeads % c.numKvHeads).toBe(0);
  expect(c.headDim % 2).toBe(0);
  expect(c.vocabSize * c.hiddenSize).toBeLessThanOrEqual(CONFIG_LIMITS.matrix_values);
  for (const id of [c.bosTokenId, c.padTokenId, ...c.eosTokenIds])
    if (id !== null) expect(id >= 0 && id < c.vocabSize).toBe(true);
  expect(c.rmsNormEps > 0 && c.rmsNormEps < 1).toBe(true);
  for (const f of ropeInvFreq(c)) expect(Number.isFinite(Math.fround(f)) && Math.fround(f) > 0).toBe(true);
}

describe('config.json parser: total, and what it accepts is computable', () => {
  it('valid configs parse with their dimensions', () => {
    fc.assert(
      fc.property(configArb, (c) => {
        const cfg = parseModelConfig(c);
        expect(cfg.hiddenSize).toBe(c.hidden_size);
        expect(cfg.headDim * cfg.numHeads).toBe(c.hidden_size);
        checkConfigInvariants(c);
      }),
      RUNS(150),
    );
  });

  it('one or two fields set to hostile values (objects and JSON text) get a value or a ConfigError', () => {
    const edit = fc.tuple(fc.constantFrom(...CONFIG_FIELDS), hostileValue);
    fc.assert(
      fc.property(configArb, fc.array(edit, { minLength: 1, maxLength: 2 }), (c, edits) => {
        const bad = { ...c };
        for (const [k, v] of edits) bad[k] = v;
        checkConfigInvariants(bad);
      }),
      RUNS(400),
    );
  });

  it('hostile rope_scaling blocks and JSON text with deep nesting or extreme literals', () => {
    const ropeField = fc.constantFrom(
      'factor',
      'low_freq_factor',
      'high_freq_factor',
      'original_max_position_embeddings',
      'rope_type',
    );
    fc.assert(
      fc.property(configArb, ropeField, fc.oneof(extremeNumberText, deepText, hostileJsonText), (c, k, text) => {
        const base = {
          rope_type: 'llama3',
          factor: 8,
          low_freq_factor: 1,
          high_freq_factor: 4,
          original_max_position_embeddings: 8192,
        } as Record<string, unknown>;
        const json = JSON.stringify({ ...c, rope_scaling: { ...base, [k]: '@@' } }).replace('"@@"', text);
        checkConfigInvariants(json);
        checkConfigInvariants(JSON.stringify(c).replace(/"vocab_size":\d+/, `"vocab_size":${text}`));
      }),
      RUNS(300),
    );
  });

  it('byte mutations of config.json text', () => {
    fc.assert(
      fc.property(configArb, fc.array(byteMutation, { minLength: 1, maxLength: 3 }), (c, ms) => {
        const bytes = ms.reduce(mutateBytes, new TextEncoder().encode(JSON.stringify(c)));
        checkConfigInvariants(new TextDecoder().decode(bytes));
      }),
      RUNS(300),
    );
  });

  it('long strings anywhere stay out of the message', () => {
    fc.assert(
      fc.property(configArb, fc.constantFrom(...CONFIG_FIELDS), longString, (c, k, s) => {
        checkConfigInvariants({ ...c, [k]: s });
      }),
      RUNS(40),
    );
  });
});

// ---------------------------------------------------------------------------------------------
// PEFT adapter zips

const DIMS: BaseDims = { hiddenSize: 8, intermediateSize: 12, numHeads: 2, numKvHeads: 1, headDim: 3, numLayers: 2 };

const adapterArb = fc
  .record({
    r: fc.integer({ min: 1, max: 3 }),
    projs: fc.subarray([...PROJS], { minLength: 1 }),
    layers: fc.subarray([0, 1], { minLength: 1 }),
    seed: fc.integer({ min: 0, max: 1000 }),
  })
  .map(({ r, projs, layers, seed }): PlainLoraAdapter => {
    const a: PlainLoraAdapter = { r, alpha: 2 * r, dropout: 0, useRslora: false, layers: new Map() };
    for (const l of layers) {
      const entry: Partial<Record<(typeof PROJS)[number], LoraPair>> = {};
      for (const p of projs) {
        const d = projDims(DIMS, p);
        entry[p] = {
          A: Float32Array.from({ length: r * d.in }, (_, i) => Math.fround(Math.sin(seed + i))),
          B: Float32Array.from({ length: d.out * r }, (_, i) => Math.fround(Math.cos(seed + i) / 100)),
        };
      }
      a.layers.set(l, entry);
    }
    return a;
  });

const zipArb = adapterArb.map((a) => ({
  a,
  zip: exportPeftZip(a, { baseModel: 'b', dims: DIMS, mtime: new Date('2026-01-01T00:00:00Z') }),
}));

function checkAdapter(zip: Uint8Array): PlainLoraAdapter | null {
  const r = total(() => importPeftZip(zip, { dims: DIMS, fileName: 'p.zip' }), PeftError);
  if (!r.ok) return null;
  validateAdapter(r.value.adapter, DIMS);
  for (const projs of r.value.adapter.layers.values()) {
    for (const pair of Object.values(projs))
      for (const x of [...pair.A, ...pair.B]) expect(Number.isFinite(x)).toBe(true);
  }
  return r.value.adapter;
}

describe('PEFT zip import: total, bounded, and never imports changed weights', () => {
  it('valid zips round-trip', () => {
    fc.assert(
      fc.property(zipArb, ({ a, zip }) => {
        expect(checkAdapter(zip)).toEqual(a);
      }),
      RUNS(60),
    );
  });

  it('any byte mutation gives a PeftError or exactly the original adapter (CRC-32 guards the weights)', () => {
    fc.assert(
      fc.property(zipArb, fc.array(byteMutation, { minLength: 1, maxLength: 2 }), ({ a, zip }, ms) => {
        const got = checkAdapter(ms.reduce(mutateBytes, zip));
        if (got) expect(got).toEqual(a);
      }),
      RUNS(400),
    );
  });

  it('hostile adapter_config.json fields get a value or a PeftError', () => {
    const field = fc.constantFrom(
      'peft_type',
      'r',
      'lora_alpha',
      'lora_dropout',
      'target_modules',
      'layers_to_transform',
      'use_rslora',
      'rank_pattern',
      'bias',
      'base_model_name_or_path',
    );
    fc.assert(
      fc.property(zipArb, field, hostileJsonText, ({ zip }, k, text) => {
        const files = unzipSync(zip);
        const cfg = JSON.parse(strFromU8(files['adapter_config.json'])) as Record<string, unknown>;
        const json = JSON.stringify({ ...cfg, [k]: '@@' }).replace('"@@"', text);
        checkAdapter(
          zipSync({
            'adapter_config.json': strToU8(json),
            'adapter_model.safetensors': files['adapter_model.safetensors'],
          }),
        );
      }),
      RUNS(200),
    );
  });
});

// ---------------------------------------------------------------------------------------------
// Datasets (JSONL and CSV)

const text = fc.string({ minLength: 1, maxLength: 20 }).filter((s) => s.trim() !== '');
const rowArb = fc.oneof(
  fc.record({ prompt: text, goal: fc.option(text, { nil: undefined }), category: fc.option(text, { nil: undefined }) }),
  fc.record({
    prompt: fc.tuple(fc.constantFrom('system', 'assistant'), text, text).map(([role, a, b]) => [
      { role, content: a },
      { role: 'user', content: b },
    ]),
  }),
);
const datasetArb = fc.array(rowArb, { minLength: 1, maxLength: 6 });
const csvOf = (rows: { prompt: unknown; goal?: string }[]) =>
  [
    'prompt,goal',
    ...rows.map(
      (r) =>
        `"${String(typeof r.prompt === 'string' ? r.prompt : 'p').replace(/"/g, '""')}","${(r.goal ?? '').replace(/"/g, '""')}"`,
    ),
  ].join('\n');

function checkDataset(fn: () => DatasetRow[], lines: number): void {
  const r = total(fn, DatasetError);
  if (!r.ok) return;
  expect(r.value.length).toBeGreaterThan(0);
  for (const row of r.value) {
    expect(row.line >= 1 && row.line <= lines).toBe(true);
    if (typeof row.prompt === 'string') expect(row.prompt.trim()).not.toBe('');
    else {
      expect(row.prompt.some((t) => t.role === 'user')).toBe(true);
      for (const t of row.prompt) if (t.role === 'user') expect(t.content.trim()).not.toBe('');
    }
  }
}

/** A text mutation: a hostile snippet inserted, or a character deleted. */
const textMutation = fc.record({
  at: fc.nat(),
  del: fc.boolean(),
  snippet: fc.oneof(
    hostileJsonText,
    fc.constantFrom(
      '"',
      ',',
      '\n',
      '\r\n',
      '\uFEFF',
      '\u0000',
      '{"prompt":""}',
      '{"prompt":[{"role":"user","content":" "}]}',
      '""',
    ),
  ),
});
const mutateText = (s: string, m: { at: number; del: boolean; snippet: string }) => {
  const at = m.at % (s.length + 1);
  return m.del ? s.slice(0, at) + s.slice(at + 1) : s.slice(0, at) + m.snippet + s.slice(at);
};

describe('dataset loaders: total, and every accepted row has a prompt and no empty user turn', () => {
  it('valid JSONL and CSV load every row', () => {
    fc.assert(
      fc.property(datasetArb, (rows) => {
        expect(parseJsonl(rows.map((r) => JSON.stringify(r)).join('\n'))).toHaveLength(rows.length);
        expect(parseCsv(csvOf(rows))).toHaveLength(rows.length);
      }),
      RUNS(100),
    );
  });

  it('mutated JSONL and CSV get rows or a DatasetError', () => {
    fc.assert(
      fc.property(datasetArb, fc.array(textMutation, { minLength: 1, maxLength: 3 }), (rows, ms) => {
        const jsonl = ms.reduce(mutateText, rows.map((r) => JSON.stringify(r)).join('\n'));
        checkDataset(() => parseJsonl(jsonl, 'p.jsonl'), jsonl.split('\n').length);
        const csv = ms.reduce(mutateText, csvOf(rows));
        checkDataset(() => parseCsv(csv, 'p.csv'), csv.split('\n').length);
        checkDataset(() => parseDataset(csv, 'p.txt'), csv.split('\n').length);
      }),
      RUNS(200),
    );
  });
});

// ---------------------------------------------------------------------------------------------
// Run logs: the replay reader and the storage reader share one step rule

const reportArb = fc
  .record({ step: fc.nat({ max: 1e6 }), reward: fc.double({ noNaN: true, min: -10, max: 10 }) })
  .map(({ step, reward }) => ({
    runId: 'r',
    recipe: 'redteam',
    step,
    time: 1,
    metrics: { 'reward/mean': reward },
    samples: [],
    timings: { rollout_ms: 1, score_ms: 1, learn_ms: 1, total_ms: 3 },
  }));

describe('run-log readers: total, steps are non-negative integers in both', () => {
  it('a hostile step is accepted by both readers or by neither', () => {
    fc.assert(
      fc.property(reportArb, fc.oneof(extremeNumberText, hostileJsonText, fc.nat().map(String)), (rep, stepText) => {
        const line = JSON.stringify(rep).replace(/"step":\d+/, `"step":${stepText}`);
        const a = total(() => parseReplayJsonl(line, 'r.jsonl'), ReplayError);
        const b = total(() => parseStoredJsonl(line, 'r.jsonl'), JsonlError);
        expect(a.ok).toBe(b.ok);
        if (a.ok) expect(Number.isSafeInteger(a.value[0].step) && a.value[0].step >= 0).toBe(true);
      }),
      RUNS(300),
    );
  });

  it("mutated logs get reports or the reader's own error", () => {
    fc.assert(
      fc.property(
        fc.array(reportArb, { minLength: 1, maxLength: 4 }),
        fc.array(textMutation, { minLength: 1, maxLength: 3 }),
        (reps, ms) => {
          const log = ms.reduce(mutateText, reps.map((r) => JSON.stringify(r)).join('\n'));
          const a = total(() => parseReplayJsonl(log, 'r.jsonl'), ReplayError);
          total(() => parseStoredJsonl(log, 'r.jsonl'), JsonlError);
          if (a.ok) for (const r of a.value) expect(Number.isSafeInteger(r.step) && r.step >= 0).toBe(true);
        },
      ),
      RUNS(300),
    );
  });
});

// ---------------------------------------------------------------------------------------------
// Setup links

describe('setup URL: never throws, every message short', () => {
  const schemas = {
    redteam: {
      groupSize: int(8, 'G', { min: 2, max: 64 }),
      lr: num(0.002, 'lr', { min: 0, max: 1 }),
      earlyStop: bool(true, 'stop'),
      advantage: oneOf(['grpo', 'rloo'] as const, 'grpo', 'a'),
    },
  };
  const key = fc.oneof(
    fc.constantFrom(
      'recipe',
      'seed',
      'steps',
      'at',
      'c.groupSize',
      'c.lr',
      'c.earlyStop',
      'c.advantage',
      'c.__proto__',
      'c.constructor',
    ),
    fc.string().map((s) => `c.${s}`),
  );
  const value = fc.oneof(
    fc.string(),
    hostileJsonText,
    longString,
    fc.constantFrom('redteam', 'NaN', '-1', '1e309', '0x10'),
  );
  it('any query gives a setup with field-by-field messages', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(key, value), { maxLength: 6 }), fc.boolean(), (pairs, named) => {
        const q = new URLSearchParams(named ? [['recipe', 'redteam'], ...pairs] : pairs);
        const d = decodeSetup(`?${q}`, schemas);
        if (!q.has('recipe')) expect(d).toBeNull();
        else for (const m of Object.values(d!.errors)) expect(m.length).toBeLessThanOrEqual(MAX_MESSAGE_CHARS);
      }),
      RUNS(120),
    );
  });
});
