// Prefill and decode throughput of a model on the current backend, measured the way generation
// runs (KV cache, one sampled token per step), beside the obvious way without a cache (every
// decode step re-runs the whole sequence), so the bench can print both and their ratio.
import { generate } from '../../src/model/generate';
import { forward, type LlamaModel } from '../../src/model/llama';

export interface ThroughputCase {
  batch: number;
  promptLen: number;
  decodeSteps: number;
  reps: number;
}

export interface ThroughputResult extends ThroughputCase {
  prefillMs: number;
  prefillTokPerS: number;
  decodeMsPerStep: number;
  decodeTokPerS: number;
  /** Decode step time without a KV cache: a full forward over prompt + generated tokens. */
  noCacheMsPerStep: number;
  noCacheTokPerS: number;
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

function prompts(model: LlamaModel, c: ThroughputCase): number[][] {
  const V = model.config.vocabSize;
  return Array.from({ length: c.batch }, (_, b) =>
    Array.from({ length: c.promptLen }, (_, t) => (7 + 31 * t + 101 * b) % V),
  );
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

export async function measureThroughput(model: LlamaModel, c: ThroughputCase): Promise<ThroughputResult> {
  const ps = prompts(model, c);
  const greedy = { greedy: true };
  // Warm-up: compile shaders and fill the buffer pool at these shapes.
  await generate(model, ps, { ...greedy, maxNewTokens: c.decodeSteps + 1 });
  const one: number[] = [];
  const many: number[] = [];
  const noCache: number[] = [];
  const full = ps.map((p) => [...p, ...Array(c.decodeSteps).fill(3)]);
  for (let r = 0; r < c.reps; r++) {
    one.push(await timed(() => generate(model, ps, { ...greedy, maxNewTokens: 1 })));
    many.push(await timed(() => generate(model, ps, { ...greedy, maxNewTokens: 1 + c.decodeSteps })));
    noCache.push(
      await timed(async () => {
        const logits = forward(model, full, { lastOnly: true });
        await logits.data();
        logits.dispose();
      }),
    );
  }
  const prefillMs = median(one);
  const decodeMsPerStep = Math.max(median(many) - prefillMs, 1e-6) / c.decodeSteps;
  const noCacheMsPerStep = median(noCache);
  const tok = (n: number, ms: number) => (n / ms) * 1000;
  return {
    ...c,
    prefillMs,
    prefillTokPerS: tok(c.batch * c.promptLen, prefillMs),
    decodeMsPerStep,
    decodeTokPerS: tok(c.batch, decodeMsPerStep),
    noCacheMsPerStep,
    noCacheTokPerS: tok(c.batch, noCacheMsPerStep),
  };
}
