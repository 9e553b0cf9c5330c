// What both decode paths share (tfjs op by op in generate.ts, planned in planned/decode.ts):
// option checks, left padding, and the bookkeeping of one sampled step, so the two paths return
// the same result for the same draws by construction.
import { checkSamplingOptions } from '../../engine/index';

// The options and result of generate() live here, the lowest module of the decode chain
// (generate -> planned/decode -> planned/decodeSteps), so no module imports one above it.
export interface SamplingOptions {
  /** Argmax instead of sampling (also implied by temperature 0). */
  greedy?: boolean;
  /** Logits are divided by this before softmax. Default 1. */
  temperature?: number;
  /** Keep only the k most likely tokens (0 or >= vocab: off). Ties at the k-th value are kept. */
  topK?: number;
  /** Keep the smallest set of most likely tokens whose mass reaches p (1: off). */
  topP?: number;
}

export interface GenerateOptions extends SamplingOptions {
  maxNewTokens: number;
  /** A row stops after emitting one of these (the stop token itself is kept, mask 1). Default none. */
  stopTokens?: number[];
  /** Seed of every random draw. Default 0. */
  seed?: number;
  /**
   * Random stream of each row (default: the row index). Draw t of row b is
   * Philox(seed; streams[b], t) (src/engine/rng/philox.ts), so a row gives the same sample alone
   * or in any batch, on the GPU kernel and the CPU reference alike.
   */
  streams?: number[];
  /** Id written into `tokens` after a row has stopped (mask 0 there). Default 0. */
  padTokenId?: number;
}

export interface GenerateResult {
  /** [B][T] generated ids; T = steps run (<= maxNewTokens; fewer when every row stopped). */
  tokens: number[][];
  /** [B][T] log-prob of each generated token (0 where mask is 0). */
  logprobs: number[][];
  /** [B][T] entropy of each step's next-token distribution (0 where mask is 0). */
  entropy: number[][];
  /** [B][T] 1 for a generated token (up to and including a stop token), 0 after. */
  mask: number[][];
  /** Generated tokens per row (sum of its mask). */
  lengths: number[];
}

export interface DecodeSetup {
  B: number;
  maxNew: number;
  seed: number;
  streams: number[];
  stop: Set<number>;
  pad: number;
  /** 0 when greedy. */
  temperature: number;
  topK: number;
  topP: number;
}

export function decodeSetup(prompts: number[][], opts: GenerateOptions): DecodeSetup {
  const B = prompts.length;
  if (B === 0) throw new Error('generate: no prompts');
  prompts.forEach((p, b) => {
    if (p.length === 0) throw new Error(`generate: prompt ${b} is empty (at least one token, e.g. BOS, is needed)`);
  });
  const maxNew = opts.maxNewTokens;
  if (!Number.isInteger(maxNew) || maxNew < 0)
    throw new Error(`generate: maxNewTokens must be a non-negative integer, got ${maxNew}`);
  const seed = opts.seed ?? 0;
  const streams = opts.streams ?? prompts.map((_, b) => b);
  if (streams.length !== B) throw new Error(`generate: streams has ${streams.length} entries for ${B} prompts`);
  // Statistics are under softmax(logits / T); greedy reports them at T = 1.
  const temperature = opts.greedy ? 0 : (opts.temperature ?? 1);
  const topK = opts.topK ?? 0;
  const topP = opts.topP ?? 1;
  checkSamplingOptions({ temperature, topK, topP, seed, step: 0 });
  return {
    B,
    maxNew,
    seed,
    streams,
    stop: new Set(opts.stopTokens ?? []),
    pad: opts.padTokenId ?? 0,
    temperature,
    topK,
    topP,
  };
}

/** Left-pads the prompts to the longest: ids and the 0/1 attention mask, [B][P]. */
export function leftPad(prompts: number[][], pad: number): { P: number; ids: number[][]; attn: number[][] } {
  const P = Math.max(...prompts.map((p) => p.length));
  return {
    P,
    ids: prompts.map((p) => [...Array(P - p.length).fill(pad), ...p]),
    attn: prompts.map((p) => [...Array(P - p.length).fill(0), ...Array(p.length).fill(1)]),
  };
}

export function emptyResult(B: number): GenerateResult {
  return {
    tokens: Array.from({ length: B }, () => []),
    logprobs: Array.from({ length: B }, () => []),
    entropy: Array.from({ length: B }, () => []),
    mask: Array.from({ length: B }, () => []),
    lengths: new Array<number>(B).fill(0),
  };
}

/** Appends one step's draws to a result; a row that has stopped gets pads with mask 0. */
export class StepRecorder {
  readonly done: boolean[];

  constructor(
    readonly result: GenerateResult,
    private readonly stop: Set<number>,
    private readonly pad: number,
  ) {
    this.done = new Array<boolean>(result.tokens.length).fill(false);
  }

  /** Records row b's id, log-prob and entropy; returns the row's next input and its mask. */
  record(b: number, tok: number, logprob: number, entropy: number): { next: number; mask: number } {
    const r = this.result;
    if (this.done[b]) {
      r.tokens[b].push(this.pad);
      r.logprobs[b].push(0);
      r.entropy[b].push(0);
      r.mask[b].push(0);
      return { next: this.pad, mask: 0 };
    }
    r.tokens[b].push(tok);
    r.logprobs[b].push(logprob);
    r.entropy[b].push(entropy);
    r.mask[b].push(1);
    r.lengths[b]++;
    if (this.stop.has(tok)) this.done[b] = true;
    return { next: tok, mask: 1 };
  }

  allDone(): boolean {
    return this.done.every(Boolean);
  }
}
