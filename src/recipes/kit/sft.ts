// The supervised step on target tokens that attacker-sft and minmax's monitor warm-up share:
// prompt -> target pairs, loss = mean NLL of the target tokens only (never the prompt or the
// template), clipped by global norm, one AdamW update of the adapter.
import * as tf from '@tensorflow/tfjs';
import type { LoraSet } from '../../model/lora';
import type { LlamaModel } from '../../model/llama';
import type { AdamW } from '../../rl/optim';
import { clipByGlobalNorm } from '../../rl/optim';
import { policyStats } from '../../rl/policy';
import { plannedGrads, plannedLearnBlocker } from '../../rl/plannedLearn';
import type { ChatCodec } from './types';

/** Prompt ids (user turn + generation prompt) and target ids (assistant content + end of turn). */
export function encodeSftPair(
  codec: ChatCodec,
  source: string,
  target: string,
  maxTargetTokens: number,
): { prompt: number[]; target: number[] } {
  const prompt = codec.encodeChat([{ role: 'user', content: source }], { addGenerationPrompt: true });
  const full = codec.encodeChat(
    [
      { role: 'user', content: source },
      { role: 'assistant', content: target },
    ],
    { addGenerationPrompt: false },
  );
  let tgt: number[];
  if (full.length > prompt.length && prompt.every((id, i) => full[i] === id)) {
    tgt = full.slice(prompt.length);
    // Keep up to and including the end-of-turn token (drop the template's trailing newline).
    const end = tgt.findIndex((id) => codec.eos.includes(id));
    if (end >= 0) tgt = tgt.slice(0, end + 1);
  } else {
    tgt = [...codec.encodeText(target), ...(codec.eos.length ? [codec.eos[0]] : [])];
  }
  return { prompt, target: tgt.slice(0, maxTargetTokens) };
}

export interface SftStepResult {
  /** Mean NLL per target token before the update. */
  loss: number;
  gradNorm: number;
  /** 1 when the loss or the gradient norm was not finite and no update was applied. */
  skipped: boolean;
  /** Target tokens the loss covered (the mask's sum). */
  targetTokens: number;
}

/**
 * One supervised update: responses = the targets padded with `pad`, mask 1 on target tokens only.
 * The planned WebGPU pass when it can run this adapter (src/rl/plannedLearn.ts), tfjs otherwise.
 */
export async function sftStep(
  learner: { model: LlamaModel; lora: LoraSet; optimizer: AdamW },
  enc: readonly { prompt: number[]; target: number[] }[],
  o: { pad: number; lr: number; maxGradNorm: number },
): Promise<SftStepResult> {
  const { model, lora, optimizer } = learner;
  const T = Math.max(...enc.map((e) => e.target.length));
  const responses = enc.map((e) => [...e.target, ...Array<number>(T - e.target.length).fill(o.pad)]);
  const mask: number[][] = enc.map((e) => Array.from({ length: T }, (_, t): number => (t < e.target.length ? 1 : 0)));
  const nTok = mask.flat().reduce((a, b) => a + b, 0);
  const vars: Record<string, tf.Variable> = {};
  for (const v of lora.variables()) vars[v.name] = v;
  const maskT = tf.tensor2d(mask.flat(), [enc.length, T]);
  lora.training = true;
  let lossValue: tf.Scalar | null = null;
  let grads: tf.NamedTensorMap;
  try {
    const batch = { prompts: enc.map((e) => e.prompt), responses, mask };
    const sftLoss = (logp: tf.Tensor2D) => tf.div(tf.neg(tf.sum(tf.mul(logp, maskT))), Math.max(1, nTok)) as tf.Scalar;
    const planned =
      plannedLearnBlocker(model, lora) === null
        ? await plannedGrads(model, lora, batch, { padTokenId: o.pad }, (s) => sftLoss(s.logp))
        : null;
    if (planned) {
      lossValue = tf.scalar(planned.loss);
      grads = planned.grads;
    } else {
      const r = tf.variableGrads(
        () => sftLoss(policyStats(model, batch, { padTokenId: o.pad }).logp),
        Object.values(vars),
      );
      lossValue = r.value;
      grads = r.grads;
    }
  } finally {
    lora.training = false;
    maskT.dispose();
  }
  const clipped = clipByGlobalNorm(grads, o.maxGradNorm);
  const [loss, norm] = await Promise.all([lossValue.data(), clipped.norm.data()]);
  const skipped = !Number.isFinite(norm[0]) || !Number.isFinite(loss[0]);
  if (!skipped) optimizer.applyGradients(vars, clipped.grads, o.lr);
  tf.dispose([lossValue, ...Object.values(grads), ...Object.values(clipped.grads), clipped.norm]);
  return { loss: loss[0], gradNorm: norm[0], skipped, targetTokens: nTok };
}
