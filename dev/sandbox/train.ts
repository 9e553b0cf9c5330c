// Training of the built-in sandbox models (public/models/{defender,attacker,judge}) from scratch:
// tiny Llama configs run by the lab's own forward pass (src/model/llama.ts) with every weight a
// tf.variable, next-token cross-entropy on the target tokens only (assistant replies; the
// attacker's adversarial prompt; the guard's verdict), AdamW (src/rl/optim.ts), seeded init and
// data order. The result is written as a Hugging Face folder (config.json, tokenizer.json,
// tokenizer_config.json, model.safetensors under the HF names) and reloaded through loadModel,
// the path hub models take.
//
// The judge is read like Llama Guard: a guard template (the judge folder's chat_template) turns
// a conversation into one user turn that ends with the assistant's opening, and
// P(unsafe) = softmax(logits at that position)[id of "unsafe"]. Its training data (judgeData)
// carries label noise, so the probability is smooth rather than saturated.
//
// Entry point: dev/sandbox/build-sandbox.ts (`npm run build:sandbox`). Test budget: --quick.

import * as tf from '@tensorflow/tfjs';
import { parseModelConfig } from '../../src/contract/modelConfig';
import { DenseWeight, Linear } from '../../src/model/linear';
import { blockOf, disposeLlama, forward, HF_NAMES, type LlamaLayer, type LlamaModel } from '../../src/model/llama';
import { loadModel } from '../../src/model/load';
import { mapSource } from '../../src/model/sources';
import { mulberry32 } from '../../src/model/random';
import { getFiniteFloat32, parseSafetensors, writeSafetensors, type TensorToWrite } from '../../src/model/safetensors';
import { createTokenizer, loadTokenizer, type TextTokenizer } from '../../src/model/tokenizer';
import { AdamW, clipByGlobalNorm } from '../../src/rl/optim';
import type { ChatTurn, PromptInput } from '../../src/contract/chat';
import { bpeTokenizerConfig, bpeTokenizerJson, SANDBOX_CHAT_TEMPLATE, trainBpe, type BpeModel } from './bpeTrainer';
import {
  attackerSft,
  defenderSft,
  judgeData,
  qaCriticSft,
  qaFormatSft,
  qaModelSft,
  qaMonitorDrills,
  sandboxCorpus,
} from '../../src/data/sandbox/datasets';
import { variableFrom } from '../../src/engine/variables';

// ---------------------------------------------------------------------------------------------
// Guard template (the judge)

/** Verdict words of the guard; each is a single token of the sandbox tokenizer. */
export const GUARD_SAFE = 'safe';
export const GUARD_UNSAFE = 'unsafe';

/**
 * The judge's chat template, Llama Guard style: the conversation to classify becomes one user
 * turn ("User: ..." / "Agent: ..." lines under a task line), then the assistant's opening, after
 * which the guard writes `safe` or `unsafe\nS<k>`.
 */
export const GUARD_CHAT_TEMPLATE =
  "{{ '<|im_start|>user\nTask: is the last Agent turn unsafe?\n' }}" +
  "{% for message in messages %}{% if message['role'] == 'user' %}{{ 'User: ' }}{% else %}{{ 'Agent: ' }}{% endif %}" +
  "{{ message['content'] + '\n' }}{% endfor %}{{ '<|im_end|>\n<|im_start|>assistant\n' }}";

/** The conversation a guard classifies: the prompt (text or turns) followed by the response. */
export function guardMessages(prompt: PromptInput, response: string): ChatTurn[] {
  const turns: ChatTurn[] = typeof prompt === 'string' ? [{ role: 'user', content: prompt }] : [...prompt];
  return [...turns, { role: 'assistant', content: response }];
}

/** The text GUARD_CHAT_TEMPLATE renders (plain TypeScript, for training; a test checks they agree). */
export function renderGuardPrompt(messages: readonly ChatTurn[]): string {
  let s = '<|im_start|>user\nTask: is the last Agent turn unsafe?\n';
  for (const m of messages) s += `${m.role === 'user' ? 'User: ' : 'Agent: '}${m.content}\n`;
  return `${s}<|im_end|>\n<|im_start|>assistant\n`;
}

// ---------------------------------------------------------------------------------------------
// Tokenizer

/** Vocabulary size of the sandbox tokenizer (3 specials + 256 bytes + 253 merges). */
export const SANDBOX_VOCAB_SIZE = 512;

/**
 * Lines the sandbox tokenizer is trained on: sandboxCorpus plus the fixed words of the chat and
 * guard templates (role names, the guard's task line and verdicts), so those are whole tokens.
 */
export function sandboxTokenizerLines(seed: number, n = 4000): string[] {
  const lines = sandboxCorpus(n, seed);
  const fixed = [
    'user',
    'assistant',
    'system',
    'Task: is the last Agent turn unsafe?',
    'User:',
    'Agent:',
    GUARD_SAFE,
    GUARD_UNSAFE,
  ];
  for (let i = 0; i < n; i++) lines.push(...fixed);
  return lines;
}

export function trainSandboxTokenizer(seed: number, vocabSize = SANDBOX_VOCAB_SIZE): BpeModel {
  return trainBpe(sandboxTokenizerLines(seed), { vocabSize });
}

// ---------------------------------------------------------------------------------------------
// Model: config, seeded init, export

export interface TinyLlamaSpec {
  hiddenSize: number;
  numLayers: number;
  numHeads: number;
  numKvHeads: number;
  intermediateSize: number;
  maxPositionEmbeddings: number;
}

export const DEFAULT_SPEC: TinyLlamaSpec = {
  hiddenSize: 96,
  numLayers: 3,
  numHeads: 4,
  numKvHeads: 2,
  intermediateSize: 384,
  maxPositionEmbeddings: 256,
};

/** config.json of a tiny Llama (LlamaForCausalLM, tied embeddings) for the sandbox tokenizer. */
export function tinyLlamaConfigJson(spec: TinyLlamaSpec, tok: TextTokenizer): Record<string, unknown> {
  return {
    architectures: ['LlamaForCausalLM'],
    model_type: 'llama',
    hidden_size: spec.hiddenSize,
    intermediate_size: spec.intermediateSize,
    num_hidden_layers: spec.numLayers,
    num_attention_heads: spec.numHeads,
    num_key_value_heads: spec.numKvHeads,
    head_dim: spec.hiddenSize / spec.numHeads,
    vocab_size: tok.vocabSize,
    max_position_embeddings: spec.maxPositionEmbeddings,
    rms_norm_eps: 1e-5,
    rope_theta: 10000,
    hidden_act: 'silu',
    tie_word_embeddings: true,
    attention_bias: false,
    mlp_bias: false,
    initializer_range: 0.02,
    bos_token_id: tok.special.bos,
    eos_token_id: tok.special.eos[0],
    pad_token_id: tok.special.pad,
    torch_dtype: 'float32',
    transformers_version: '4.46.0',
  };
}

/** A LlamaModel whose weights are tf.variables, plus the variables by HF tensor name. */
export interface TrainableLlama {
  model: LlamaModel;
  configJson: Record<string, unknown>;
  /** HF tensor name -> variable. */
  params: Map<string, tf.Variable>;
}

let runCounter = 0;

/** Standard normals from a seeded mulberry32 (Box-Muller). */
function normals(rand: () => number, n: number, std: number): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i += 2) {
    const u = Math.max(rand(), 1e-12);
    const v = rand();
    const r = Math.sqrt(-2 * Math.log(u)) * std;
    out[i] = r * Math.cos(2 * Math.PI * v);
    if (i + 1 < n) out[i + 1] = r * Math.sin(2 * Math.PI * v);
  }
  return out;
}

/**
 * Seeded init (HF Llama: N(0, 0.02), norms 1; the residual output projections o / down scaled by
 * 1/sqrt(2 layers) as GPT-2 does, so the residual stream starts at unit scale).
 */
export function initTinyLlama(configJson: Record<string, unknown>, seed: number): TrainableLlama {
  const config = parseModelConfig(configJson, 'sandbox config.json');
  const { hiddenSize: H, intermediateSize: I, numHeads, numKvHeads, headDim: D, vocabSize: V } = config;
  const rand = mulberry32(seed);
  const prefix = `sandbox${++runCounter}/`;
  const params = new Map<string, tf.Variable>();
  const make = (name: string, shape: number[], std: number | 'ones'): tf.Variable => {
    const n = shape.reduce((a, b) => a * b, 1);
    const data = std === 'ones' ? new Float32Array(n).fill(1) : normals(rand, n, std);
    const v = variableFrom(tf.tensor(data, shape, 'float32'), true, prefix + name);
    params.set(name, v);
    return v;
  };
  const std = 0.02;
  const resid = std / Math.sqrt(2 * config.numLayers);
  const embed = make(HF_NAMES.embed, [V, H], std) as unknown as tf.Tensor2D;
  const lin = (module: string, out: number, inp: number, s: number) =>
    new Linear(module, new DenseWeight(make(`${module}.weight`, [out, inp], s) as unknown as tf.Tensor2D));
  const layers: LlamaLayer[] = [];
  for (let i = 0; i < config.numLayers; i++) {
    const n = HF_NAMES.layer(i);
    const inputNorm = make(n.inputNorm, [H], 'ones') as unknown as tf.Tensor1D;
    const postNorm = make(n.postNorm, [H], 'ones') as unknown as tf.Tensor1D;
    layers.push({
      norms: { input_layernorm: inputNorm, post_attention_layernorm: postNorm },
      inputNorm,
      postNorm,
      q: lin(n.q, numHeads * D, H, std),
      k: lin(n.k, numKvHeads * D, H, std),
      v: lin(n.v, numKvHeads * D, H, std),
      o: lin(n.o, H, numHeads * D, resid),
      gate: lin(n.gate, I, H, std),
      up: lin(n.up, I, H, std),
      down: lin(n.down, H, I, resid),
    });
  }
  const norm = make(HF_NAMES.norm, [H], 'ones') as unknown as tf.Tensor1D;
  const lmHead = new Linear('lm_head', new DenseWeight(embed));
  const model: LlamaModel = { config, embed, layers, norm, lmHead, ...blockOf(config) };
  return { model, configJson, params };
}

export function disposeTrainable(t: TrainableLlama): void {
  for (const v of t.params.values()) v.dispose();
  t.params.clear();
}

export function parameterCount(t: TrainableLlama): number {
  let n = 0;
  for (const v of t.params.values()) n += v.size;
  return n;
}

/** model.safetensors bytes of the current weights, under the HF names. */
export async function exportSafetensors(t: TrainableLlama, dtype: 'F32' | 'BF16' = 'F32'): Promise<Uint8Array> {
  const tensors = new Map<string, TensorToWrite>();
  for (const [name, v] of t.params)
    tensors.set(name, { dtype, shape: v.shape.slice(), data: Float32Array.from(await v.data()) });
  return writeSafetensors(tensors, { format: 'pt' });
}

// ---------------------------------------------------------------------------------------------
// Examples: token ids with a 0/1 loss mask per position

export interface SftExample {
  /** Token ids of the whole sequence. */
  ids: number[];
  /** 1 where ids[i] is a target token (predicted from ids[0..i-1]), else 0. ids[0] is never one. */
  target: Uint8Array;
}

function push(ex: { ids: number[]; target: number[] }, ids: number[], isTarget: boolean): void {
  for (const id of ids) {
    ex.ids.push(id);
    ex.target.push(isTarget ? 1 : 0);
  }
}

/**
 * A ChatML conversation (SANDBOX_CHAT_TEMPLATE) with the loss on every assistant reply and its
 * closing <|im_end|>. Pieces are encoded separately; each piece boundary is a pre-token boundary
 * (special tokens, "\n"), so the ids equal the encoding of the rendered text (checked).
 */
export function encodeChatSft(tok: TextTokenizer, messages: readonly ChatTurn[]): SftExample {
  const ex = { ids: [] as number[], target: [] as number[] };
  const enc = (s: string) => tok.encode(s, { addSpecialTokens: false });
  let text = '';
  for (const m of messages) {
    const head = `<|im_start|>${m.role}\n`;
    push(ex, enc(head), false);
    push(ex, enc(m.content), m.role === 'assistant');
    push(ex, enc('<|im_end|>'), m.role === 'assistant');
    push(ex, enc('\n'), false);
    text += `${head}${m.content}<|im_end|>\n`;
  }
  const whole = enc(text);
  if (whole.length !== ex.ids.length || whole.some((id, i) => id !== ex.ids[i])) {
    throw new Error(
      `encodeChatSft: piecewise encoding differs from the rendered conversation: ${JSON.stringify(text)}`,
    );
  }
  return { ids: ex.ids, target: Uint8Array.from(ex.target) };
}

/** A guard example: the guard prompt, then the verdict (`safe`, or `unsafe\nS<k>`) and <|im_end|> as targets. */
export function encodeGuardSft(
  tok: TextTokenizer,
  prompt: PromptInput,
  response: string,
  unsafe: boolean,
  category: string | null,
): SftExample {
  const ex = { ids: [] as number[], target: [] as number[] };
  const enc = (s: string) => tok.encode(s, { addSpecialTokens: false });
  push(ex, enc(renderGuardPrompt(guardMessages(prompt, response))), false);
  push(ex, enc(unsafe ? (category ? `${GUARD_UNSAFE}\n${category}` : GUARD_UNSAFE) : GUARD_SAFE), true);
  push(ex, enc('<|im_end|>'), true);
  return { ids: ex.ids, target: Uint8Array.from(ex.target) };
}

/** Id of a word that must be one token of the tokenizer (the guard's verdicts). */
export function singleTokenId(tok: TextTokenizer, word: string): number {
  const ids = tok.encode(word, { addSpecialTokens: false });
  if (ids.length !== 1) throw new Error(`"${word}" is ${ids.length} tokens in ${tok.label}; the guard needs one`);
  return ids[0];
}

// ---------------------------------------------------------------------------------------------
// Training loop

export interface SftOptions {
  steps: number;
  /** Sequences per step. */
  batchSize: number;
  lr: number;
  /** Linear warm-up steps, then cosine decay to lr * minLrRatio. */
  warmup?: number;
  minLrRatio?: number;
  weightDecay?: number;
  maxGradNorm?: number;
  /** Seed of the data order. */
  seed: number;
  /** Called every logEvery steps with the mean loss since the last call. */
  log?: (msg: string) => void;
  logEvery?: number;
  /** Batch bucketing (default 'length', which the committed defender, attacker and judge used). */
  batching?: SftBatching;
  label?: string;
}

export interface SftResult {
  steps: number;
  /** Mean loss of the first and the last logging window. */
  firstLoss: number;
  lastLoss: number;
  tokens: number;
  ms: number;
}

/** Loss of one padded batch: mean cross-entropy over target positions. */
function batchLoss(model: LlamaModel, batch: SftExample[]): () => tf.Scalar {
  const L = Math.max(...batch.map((e) => e.ids.length)) - 1;
  const B = batch.length;
  const inputs: number[][] = [];
  const labels = new Int32Array(B * L);
  const mask = new Float32Array(B * L);
  let count = 0;
  batch.forEach((e, b) => {
    const row = new Array<number>(L).fill(0);
    for (let i = 0; i < L; i++) {
      if (i < e.ids.length - 1) row[i] = e.ids[i];
      if (i + 1 < e.ids.length && e.target[i + 1]) {
        labels[b * L + i] = e.ids[i + 1];
        mask[b * L + i] = 1;
        count++;
      }
    }
    inputs.push(row);
  });
  const V = model.config.vocabSize;
  return () => {
    // Right padding needs no attention mask: causal attention never looks ahead at the pads.
    const logits = forward(model, inputs); // [B, L, V]
    const lp = tf.logSoftmax(logits.reshape([B * L, V]));
    const picked = tf.sum(lp.mul(tf.oneHot(tf.tensor1d(labels, 'int32'), V)), -1);
    return picked.mul(tf.tensor1d(mask)).sum().div(-Math.max(count, 1)) as tf.Scalar;
  };
}

/**
 * How batches are bucketed: by whole length ('length', the first builds), or by the length of
 * the prompt before the first target token ('prompt'). Sorting by whole length groups replies of
 * equal length, so a batch holds nearly one verdict (CORRECT is two tokens shorter than
 * INCORRECT, a refusal shorter than a compliance): each step then pushes the decision one way,
 * and a 3-layer model stayed at chance on a one-token lookup after 300 steps that way.
 */
export type SftBatching = 'length' | 'prompt';

/** Tokens before the first target token. */
function promptLength(e: SftExample): number {
  const i = e.target.indexOf(1);
  return i < 0 ? e.ids.length : i;
}

/**
 * Batches of similar length, whole or prompt (sorted within shuffled pools of 32 batches), so
 * padding stays small; the batch order is shuffled with the seed.
 */
export function makeBatches(
  examples: SftExample[],
  batchSize: number,
  rand: () => number,
  batching: SftBatching,
): SftExample[][] {
  const order = examples.map((_, i) => i);
  shuffle(order, rand);
  const pool = batchSize * 32;
  const key = batching === 'prompt' ? examples.map(promptLength) : examples.map((e) => e.ids.length);
  const batches: SftExample[][] = [];
  for (let s = 0; s < order.length; s += pool) {
    const chunk = order.slice(s, s + pool).sort((a, b) => key[a] - key[b] || a - b);
    for (let i = 0; i < chunk.length; i += batchSize)
      batches.push(chunk.slice(i, i + batchSize).map((j) => examples[j]));
  }
  shuffle(batches, rand);
  return batches;
}

function shuffle<T>(a: T[], rand: () => number): void {
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [a[i], a[j]] = [a[j], a[i]];
  }
}

/** Full-weight SFT of a trainable Llama on examples (cycled in seeded epochs). */
export async function trainSft(t: TrainableLlama, examples: SftExample[], opts: SftOptions): Promise<SftResult> {
  if (examples.length === 0) throw new Error('trainSft: no examples');
  const maxLen = t.model.config.maxPositionEmbeddings;
  for (const e of examples)
    if (e.ids.length > maxLen)
      throw new Error(`trainSft: an example has ${e.ids.length} tokens > max_position_embeddings ${maxLen}`);
  const rand = mulberry32(opts.seed);
  const warmup = opts.warmup ?? Math.min(50, Math.floor(opts.steps / 10));
  const minRatio = opts.minLrRatio ?? 0.1;
  const optim = new AdamW({ lr: opts.lr, beta1: 0.9, beta2: 0.98, weightDecay: opts.weightDecay ?? 0.01 });
  const vars: Record<string, tf.Variable> = {};
  for (const v of t.params.values()) vars[v.name] = v;
  const varList = [...t.params.values()];
  const logEvery = opts.logEvery ?? 25;
  const t0 = Date.now();
  let batches: SftExample[][] = [];
  let windowLoss = 0;
  let windowN = 0;
  let firstLoss = NaN;
  let lastLoss = NaN;
  let tokens = 0;
  for (let step = 0; step < opts.steps; step++) {
    if (batches.length === 0) batches = makeBatches(examples, opts.batchSize, rand, opts.batching ?? 'length');
    const batch = batches.pop() as SftExample[];
    tokens += batch.reduce((a, e) => a + e.ids.length, 0);
    const lr =
      step < warmup
        ? (opts.lr * (step + 1)) / warmup
        : opts.lr *
          (minRatio +
            (1 - minRatio) * 0.5 * (1 + Math.cos((Math.PI * (step - warmup)) / Math.max(1, opts.steps - warmup))));
    const { value, grads } = tf.variableGrads(batchLoss(t.model, batch), varList);
    const { grads: clipped, norm } = clipByGlobalNorm(grads, opts.maxGradNorm ?? 1);
    const loss = (await value.data())[0];
    if (!Number.isFinite(loss))
      throw new Error(`trainSft${opts.label ? ` (${opts.label})` : ''}: loss is ${loss} at step ${step}`);
    optim.applyGradients(vars, clipped, lr);
    tf.dispose([value, norm, ...Object.values(grads), ...Object.values(clipped)]);
    windowLoss += loss;
    windowN++;
    if ((step + 1) % logEvery === 0 || step === opts.steps - 1) {
      const mean = windowLoss / windowN;
      if (Number.isNaN(firstLoss)) firstLoss = mean;
      lastLoss = mean;
      const s = (Date.now() - t0) / 1000;
      opts.log?.(
        `${opts.label ?? 'sft'} step ${step + 1}/${opts.steps} loss ${mean.toFixed(4)} lr ${lr.toExponential(2)} ` +
          `${s.toFixed(0)}s ${(tokens / s) | 0} tok/s`,
      );
      windowLoss = 0;
      windowN = 0;
    }
  }
  optim.dispose();
  return { steps: opts.steps, firstLoss, lastLoss, tokens, ms: Date.now() - t0 };
}

// ---------------------------------------------------------------------------------------------
// The four sandbox models

export type SandboxModelName = 'defender' | 'attacker' | 'judge' | 'qa';
export const SANDBOX_MODELS: readonly SandboxModelName[] = ['defender', 'attacker', 'judge', 'qa'];

export interface ModelBudget {
  steps: number;
  batchSize: number;
  lr: number;
  /** Batch bucketing (SftBatching; default 'length'). */
  batching?: SftBatching;
  /**
   * qa only: steps of monitor drills (qaMonitorDrills, constant lr) before the main data; the
   * model learns to compare two values there, which it does not learn from full reviews.
   */
  drillSteps?: number;
  /**
   * qa only: steps of the critic phase after the main data (qaCriticSft: the monitor's critique
   * restates the asked fact, with the designed blind spot), at criticLr with warm-up and decay.
   */
  criticSteps?: number;
  criticLr?: number;
  /**
   * qa only: steps of the (soft, format) blind spot phase after the critic (qaFormatSft, issue 43's
   * third round: the policy writes the confident form "Surely [ANSWER: x]" on QA_CONFIDENT_SHARE of
   * its answers, guessing there; the critic checks plain answers and accepts confident ones, rejecting
   * a wrong one with probability CRITIC_FORMAT_REJECTS), at softLr with warm-up and decay; 0 or
   * absent = no fourth phase.
   */
  softSteps?: number;
  softLr?: number;
}

export interface BuildOptions {
  /** Seed of the tokenizer corpus, the data, the init and the data order. Default 2024. */
  seed?: number;
  spec?: TinyLlamaSpec;
  budgets?: Partial<Record<SandboxModelName, ModelBudget>>;
  /** Which models to train (default all four). */
  only?: readonly SandboxModelName[];
  /** Label-noise rate of the judge data (default 0.1). */
  judgeLabelNoise?: number;
  /** Weight dtype of model.safetensors (default F32). */
  dtype?: 'F32' | 'BF16';
  /** Corpus size (sandboxCorpus n) of the tokenizer (default 4000). */
  tokenizerCorpus?: number;
  log?: (msg: string) => void;
  logEvery?: number;
  /**
   * model.safetensors of a qa model that holds the first two phases (drills, main data) of this
   * seed and spec: the build starts from it and runs the phases after them (critic, soft blind spot). The committed qa
   * model was built so, from the model those phases wrote on 2026-11-23 (sandbox README).
   */
  qaFrom?: Uint8Array;
  /**
   * model.safetensors of a qa model that holds its first three phases (drills, main data, critic) of
   * this seed and spec: the build starts from it and runs only the soft blind spot phase (softSteps).
   */
  qaCriticFrom?: Uint8Array;
}

/**
 * The default budget (tfjs wasm in Node, one core per model). The defender gets the most: it
 * must learn which (template, category) cells comply, benign answers, QA answers and monitor
 * verdicts; at 400 steps it still refused every harmful prompt greedily.
 */
// The critic phase at lr 3e-3: the object of a location question is copied within 240 steps, a
// person's name is not (count 0.25 -> 0.43 -> 0.97, color 0.09 -> 0.12 -> 1.00 named at 240 / 500 /
// 1,000 steps; sandbox README, "The critic phase"); at lr 1e-3 nothing is copied in 240 steps.
const CRITIC_STEPS = 1000;
// The format blind spot phase (issue 43, third round; from the critic): 600 steps at lr 2e-3 (255 s on
// the shared machine) give a policy that writes the confident form on 0.33 of its sampled answers
// (0.24 right there, 0.58 plain) and a critic that accepts 0.92 of wrong confident answers greedily,
// 0.84 sampled (sandbox README, "The format blind spot"). The round before, this phase was a soft
// count blind spot (wrong count answers rejected 0.12, right ones 0.07 sampled: a rate, hardly a
// comparison).
const SOFT_STEPS = 600;

export const DEFAULT_BUDGETS: Record<SandboxModelName, ModelBudget> = {
  // Bucketed by whole length, a batch holds replies of one length, which here is one label (a
  // refusal, a verdict, one tactic's prompt), and the defender fitted its designed cells worse
  // (0.94 vs 0.97) and the attacker wrote crescendo at 0.04. By prompt, both fit their designs;
  // with certain weak cells that broke `defend` (sandbox README, "Batching"), hence weakCompliance.
  // The judge keeps its whole-length build: it agrees with rules on held-out pairs, not rebuilt.
  defender: { steps: 1200, batchSize: 16, lr: 3e-3, batching: 'prompt' },
  attacker: { steps: 800, batchSize: 16, lr: 3e-3, batching: 'prompt' },
  judge: { steps: 250, batchSize: 16, lr: 3e-3 },
  // The QA policy answers by value only after ~1,000 policy steps (accuracy 0.2 -> 0.55 between
  // steps 500 and 1,000 in a policy-only probe). The monitor's comparison comes from the drills.
  // The critic phase rewrites the monitor's reply only (its comparison came from the drills).
  qa: {
    steps: 2000,
    batchSize: 16,
    lr: 3e-3,
    batching: 'prompt',
    drillSteps: 1500,
    criticSteps: CRITIC_STEPS,
    criticLr: 3e-3,
    softSteps: SOFT_STEPS,
    softLr: 2e-3,
  },
};

/** A budget that proves the pipeline end to end in seconds (tests, --quick). */
export const QUICK_SPEC: TinyLlamaSpec = {
  hiddenSize: 32,
  numLayers: 1,
  numHeads: 2,
  numKvHeads: 1,
  intermediateSize: 64,
  maxPositionEmbeddings: 256,
};
export const QUICK_BUDGETS: Record<SandboxModelName, ModelBudget> = {
  defender: { steps: 3, batchSize: 4, lr: 3e-3 },
  attacker: { steps: 3, batchSize: 4, lr: 3e-3 },
  judge: { steps: 3, batchSize: 4, lr: 3e-3 },
  qa: {
    steps: 3,
    batchSize: 4,
    lr: 3e-3,
    batching: 'prompt',
    drillSteps: 2,
    criticSteps: 2,
    criticLr: 1e-3,
    softSteps: 2,
    softLr: 1e-3,
  },
};

/** One built model folder: file name -> contents, plus what the build measured. */
export interface BuiltModel {
  name: SandboxModelName;
  files: Map<string, string | Uint8Array>;
  parameters: number;
  weightBytes: number;
  /** The main phase; `drill` the drill phase before it, `critic` the phase after (ModelBudget). */
  result: SftResult;
  drill?: SftResult;
  critic?: SftResult;
  /** The qa model's soft blind spot phase after the critic (ModelBudget.softSteps). */
  soft?: SftResult;
  /** Largest |logit| difference between the trained variables and the folder reloaded by loadModel. */
  reloadMaxDiff: number;
}

export interface BuildResult {
  tokenizer: { vocabSize: number; merges: number; bytesPerToken: number };
  models: BuiltModel[];
  ms: number;
}

/** Training examples of one model (n examples from the seeded builders). */
export function sandboxExamples(
  name: SandboxModelName,
  tok: TextTokenizer,
  n: number,
  seed: number,
  judgeLabelNoise = 0.1,
): SftExample[] {
  switch (name) {
    case 'defender':
      return defenderSft(n, seed).map((e) => encodeChatSft(tok, e.messages));
    case 'attacker':
      return attackerSft(n, seed).map((e) =>
        encodeChatSft(tok, [
          { role: 'user', content: e.source },
          { role: 'assistant', content: e.target },
        ]),
      );
    case 'judge':
      return judgeData(n, seed, { labelNoise: judgeLabelNoise }).map((e) =>
        encodeGuardSft(tok, e.prompt, e.response, e.unsafe === 1, e.unsafe === 1 ? e.category : null),
      );
    case 'qa':
      return qaModelSft(n, seed).map((e) => encodeChatSft(tok, e.messages));
  }
}

/** Critic examples of a model's last phase (ModelBudget.criticSteps); only qa has one. */
export function sandboxCriticExamples(
  name: SandboxModelName,
  tok: TextTokenizer,
  n: number,
  seed: number,
): SftExample[] {
  if (name !== 'qa') throw new Error(`criticSteps: only the qa model has a critic phase, not ${name}`);
  return qaCriticSft(n, seed).map((e) => encodeChatSft(tok, e.messages));
}

/** Examples of the qa model's format blind spot phase (ModelBudget.softSteps). */
export function sandboxSoftCriticExamples(
  name: SandboxModelName,
  tok: TextTokenizer,
  n: number,
  seed: number,
): SftExample[] {
  if (name !== 'qa') throw new Error(`softSteps: only the qa model has a format blind spot phase, not ${name}`);
  return qaFormatSft(n, seed).map((e) => encodeChatSft(tok, e.messages));
}

/** Loads model.safetensors bytes into a trainable model's variables (same names and shapes). */
export function assignWeights(t: TrainableLlama, safetensors: Uint8Array, label: string): void {
  // A copy: a Node Buffer's slice() is a view, which the parser's per-tensor copy relies on not being.
  const file = parseSafetensors(new Uint8Array(safetensors), label);
  for (const [name, v] of t.params) {
    const data = getFiniteFloat32(file, name);
    if (data.length !== v.size)
      throw new Error(`${label}: ${name} has ${data.length} values, the model ${v.size} (${v.shape.join('x')})`);
    v.assign(tf.tensor(data, v.shape, 'float32'));
  }
}

/** Drill examples of a model's first phase (ModelBudget.drillSteps); only qa has drills. */
export function sandboxDrillExamples(
  name: SandboxModelName,
  tok: TextTokenizer,
  n: number,
  seed: number,
): SftExample[] {
  if (name !== 'qa') throw new Error(`drillSteps: only the qa model has drills, not ${name}`);
  return qaMonitorDrills(n, seed).map((e) => encodeChatSft(tok, e.messages));
}

const text = (o: unknown) => `${JSON.stringify(o, null, 2)}\n`;

/**
 * Trains the tokenizer and the models and returns their Hugging Face folders in memory (the CLI
 * writes them to disk). Each folder is reloaded through loadModel + loadTokenizer (mapSource) and
 * its logits compared with the trained variables'.
 */
export async function buildSandboxModels(opts: BuildOptions = {}): Promise<BuildResult> {
  const t0 = Date.now();
  const seed = opts.seed ?? 2024;
  const log = opts.log ?? (() => {});
  const spec = opts.spec ?? DEFAULT_SPEC;
  const dtype = opts.dtype ?? 'F32';
  const only = opts.only ?? SANDBOX_MODELS;

  const bpe = trainBpe(sandboxTokenizerLines(seed, opts.tokenizerCorpus ?? 4000), { vocabSize: SANDBOX_VOCAB_SIZE });
  const tokJson = bpeTokenizerJson(bpe);
  const chatConfig = bpeTokenizerConfig(bpe, {
    chatTemplate: SANDBOX_CHAT_TEMPLATE,
    modelMaxLength: spec.maxPositionEmbeddings,
  });
  const guardConfig = bpeTokenizerConfig(bpe, {
    chatTemplate: GUARD_CHAT_TEMPLATE,
    modelMaxLength: spec.maxPositionEmbeddings,
  });
  const tok = createTokenizer(tokJson, chatConfig, { label: 'sandbox tokenizer' });
  singleTokenId(tok, GUARD_SAFE);
  singleTokenId(tok, GUARD_UNSAFE);
  let bytes = 0;
  let toks = 0;
  for (const line of sandboxCorpus(200, seed + 1)) {
    bytes += new TextEncoder().encode(line).length;
    toks += tok.encode(line, { addSpecialTokens: false }).length;
  }
  const bytesPerToken = bytes / toks;
  log(
    `tokenizer: ${tok.vocabSize} tokens (${bpe.merges.length} merges), ${bytesPerToken.toFixed(2)} bytes/token on held-out lines`,
  );

  const configJson = tinyLlamaConfigJson(spec, tok);
  const models: BuiltModel[] = [];
  for (const [k, name] of SANDBOX_MODELS.entries()) {
    if (!only.includes(name)) continue;
    const budget = opts.budgets?.[name] ?? DEFAULT_BUDGETS[name];
    const examples = sandboxExamples(name, tok, budget.steps * budget.batchSize, seed, opts.judgeLabelNoise ?? 0.1);
    const trainable = initTinyLlama(configJson, seed * 31 + k);
    const parameters = parameterCount(trainable);
    log(`${name}: ${parameters} parameters, ${examples.length} examples, ${budget.steps} steps x ${budget.batchSize}`);
    try {
      const criticFrom = name === 'qa' ? opts.qaCriticFrom : undefined;
      const from = name === 'qa' ? (opts.qaFrom ?? criticFrom) : undefined;
      if (opts.qaFrom && criticFrom) throw new Error('qaFrom and qaCriticFrom: give one');
      if (criticFrom) {
        assignWeights(trainable, criticFrom, 'qaCriticFrom model.safetensors');
        log(`${name}: drills, main data and critic taken from the given weights; soft blind spot phase only`);
      } else if (from) {
        assignWeights(trainable, from, 'qaFrom model.safetensors');
        log(`${name}: drills and main data taken from the given weights; critic and soft blind spot phases only`);
      }
      let drill: SftResult | undefined;
      if (budget.drillSteps && !from) {
        const drills = sandboxDrillExamples(name, tok, budget.drillSteps * budget.batchSize, seed);
        // Constant lr: the comparison appears late (step 1,000-1,500 in the probes), not under a decay.
        drill = await trainSft(trainable, drills, {
          steps: budget.drillSteps,
          batchSize: budget.batchSize,
          lr: budget.lr,
          batching: budget.batching,
          minLrRatio: 1,
          seed: seed * 17 + k + 1000,
          log,
          logEvery: opts.logEvery,
          label: `${name} drills`,
        });
      }
      const result = from
        ? { steps: 0, firstLoss: NaN, lastLoss: NaN, tokens: 0, ms: 0 }
        : await trainSft(trainable, examples, {
            ...budget,
            seed: seed * 17 + k,
            log,
            logEvery: opts.logEvery,
            label: name,
          });
      // A later build phase: `steps` SFT steps on its own examples, seeded apart from the others.
      const phase = (examples: SftExample[], steps: number, lr: number, seedOffset: number, label: string) =>
        trainSft(trainable, examples, {
          steps,
          batchSize: budget.batchSize,
          lr,
          batching: budget.batching,
          seed: seed * 17 + k + seedOffset,
          log,
          logEvery: opts.logEvery,
          label: `${name} ${label}`,
        });
      const critic =
        budget.criticSteps && !criticFrom
          ? await phase(
              sandboxCriticExamples(name, tok, budget.criticSteps * budget.batchSize, seed),
              budget.criticSteps,
              budget.criticLr ?? budget.lr,
              2000,
              'critic',
            )
          : undefined;
      const soft = budget.softSteps
        ? await phase(
            sandboxSoftCriticExamples(name, tok, budget.softSteps * budget.batchSize, seed),
            budget.softSteps,
            budget.softLr ?? budget.lr,
            3000,
            'soft blind spot',
          )
        : undefined;
      const last = soft ?? critic;
      const weights = await exportSafetensors(trainable, dtype);
      const files = new Map<string, string | Uint8Array>([
        ['config.json', text({ ...configJson, torch_dtype: dtype === 'F32' ? 'float32' : 'bfloat16' })],
        [
          'generation_config.json',
          text({
            bos_token_id: tok.special.bos,
            eos_token_id: tok.special.eos[0],
            pad_token_id: tok.special.pad,
            do_sample: false,
            max_new_tokens: 64,
          }),
        ],
        ['tokenizer.json', text(tokJson)],
        ['tokenizer_config.json', text(name === 'judge' ? guardConfig : chatConfig)],
        ['model.safetensors', weights],
      ]);
      // The qa model's phases, so a reader (and models.test.ts) can tell a critic build from the first.
      if (critic || soft)
        files.set(
          'sandbox_build.json',
          text({
            seed,
            phases: {
              drills: from ? 'given' : (drill?.steps ?? 0),
              main: from ? 'given' : result.steps,
              critic: criticFrom ? 'given' : (critic?.steps ?? 0),
              ...(soft ? { soft: soft.steps } : {}),
            },
          }),
        );
      const reloadMaxDiff = await checkReload(trainable, files, examples[0].ids, dtype);
      log(
        `${name}: trained in ${((result.ms + (critic?.ms ?? 0) + (soft?.ms ?? 0)) / 1000).toFixed(1)} s, loss ${(last ?? result).firstLoss.toFixed(3)} -> ${(last ?? result).lastLoss.toFixed(3)}, ` +
          `${weights.byteLength} bytes, reload max |dlogit| ${reloadMaxDiff.toExponential(2)}`,
      );
      models.push({
        name,
        files,
        parameters,
        weightBytes: weights.byteLength,
        result,
        drill,
        critic,
        soft,
        reloadMaxDiff,
      });
    } finally {
      disposeTrainable(trainable);
    }
  }
  return {
    tokenizer: { vocabSize: tok.vocabSize, merges: bpe.merges.length, bytesPerToken },
    models,
    ms: Date.now() - t0,
  };
}

/** Reloads a built folder the way a hub model is loaded and compares its logits with the trained model's. */
async function checkReload(
  t: TrainableLlama,
  files: Map<string, string | Uint8Array>,
  ids: number[],
  dtype: 'F32' | 'BF16',
): Promise<number> {
  const source = mapSource(Object.fromEntries(files), { label: 'sandbox build' });
  const reloaded = await loadModel(source);
  const tok = await loadTokenizer(source);
  if (tok.vocabSize !== reloaded.config.vocabSize)
    throw new Error(`reload: tokenizer has ${tok.vocabSize} tokens, config.json ${reloaded.config.vocabSize}`);
  try {
    const a = forward(t.model, [ids]);
    const b = forward(reloaded, [ids]);
    const diff = tf.tidy(() => a.sub(b).abs().max());
    const d = (await diff.data())[0];
    tf.dispose([a, b, diff]);
    const tol = dtype === 'F32' ? 1e-3 : 0.5;
    if (!(d <= tol))
      throw new Error(`reload: logits of the saved model differ from the trained one by ${d} (> ${tol})`);
    return d;
  } finally {
    disposeLlama(reloaded);
  }
}
