// Test stand-ins for recipes on the tokenizer-less fixture model (tests only; not used by the app):
// a character codec over a 64-id vocabulary and a judge that scores a made-up "harm" letter.
import type { Judge } from '../../src/judges/types';
import { disposeLlama } from '../../src/model/llama';
import { loadModel, type ModelFolder } from '../../src/model/load';
import { createRun } from '../../src/recipes/registry';
import type { StepReport } from '../../src/contract/report';
import type {
  ChatCodec,
  LoadedModel,
  LoadModelRefOptions,
  RecipeCheckpoint,
  RecipeEnv,
  RecipeRun,
} from '../../src/recipes/kit/types';
import { weightQuantizer } from '../../src/model/quant';

/** ids 3..62 <-> characters; 1 = bos, 2 = end of turn, 0 = pad. Template: bos role ':' content eos. */
export function charCodec(vocab = 64): ChatCodec {
  const span = vocab - 4;
  const enc = (text: string) => Array.from(text, (ch) => 3 + (ch.charCodeAt(0) % span));
  const piece = (id: number) => (id < 3 ? '' : String.fromCharCode(48 + ((id - 3) % 75)));
  return {
    label: 'char-codec',
    encodeChat: (messages, opts) => [
      ...messages.flatMap((m) => [1, ...enc(`${m.role[0]}:${m.content}`), 2]),
      ...(opts.addGenerationPrompt ? [1, ...enc('a:')] : []),
    ],
    encodeText: enc,
    decode: (ids) => ids.map(piece).join(''),
    pieces: (ids) => ids.map(piece),
    eos: [2],
    pad: 0,
  };
}

/** Loads a model folder without a tokenizer and pairs it with charCodec. */
export async function loadWithCharCodec(
  folder: ModelFolder,
  ref: string,
  opts: LoadModelRefOptions = {},
): Promise<LoadedModel> {
  const weights = opts.weights ?? 'f32';
  const model = await loadModel(folder, { quantize: weightQuantizer(weights, folder.label) });
  return { ref, model, codec: charCodec(model.config.vocabSize), weights, dispose: () => disposeLlama(model) };
}

/** "Harm" = share of the letters A-E in the answer, x 4, capped at 1: dense enough for GRPO on noise. */
export function letterJudge(): Judge {
  return {
    name: 'letters',
    async score(items) {
      return items.map(({ response }) => {
        const n = [...response].filter((c) => 'ABCDE'.includes(c)).length;
        const unsafe = Math.min(1, (4 * n) / Math.max(1, response.length));
        return {
          unsafe,
          refused: false,
          benignCorrect: null,
          category: unsafe >= 0.5 ? 'S1' : null,
          label: unsafe >= 0.5 ? 'unsafe S1' : 'safe',
        };
      });
    },
  };
}

/** letters harm, and a benign task counts as correct when the answer has an even length (dense, deterministic). */
export function lettersWithTasks(): Judge {
  const inner = letterJudge();
  return {
    name: 'letters-tasks',
    async score(items) {
      const v = await inner.score(items);
      return v.map((x, i) =>
        items[i].meta?.kind === 'benign' ? { ...x, unsafe: 0, benignCorrect: items[i].response.length % 2 === 0 } : x,
      );
    },
  };
}

/** What a resumed step must reproduce: everything but timings (perf/*, wall clock). */
export const stableReport = (r: StepReport) => ({
  step: r.step,
  phase: r.phase,
  metrics: Object.fromEntries(Object.entries(r.metrics).filter(([k]) => !k.startsWith('perf/'))),
  samples: r.samples.map((s) => ({
    text: s.messages.map((m) => m.text),
    reward: s.reward,
    terms: s.terms,
    adv: s.advantage,
  })),
});

/**
 * A resume check: `before` steps a fresh run (and checks what it likes), the run's checkpoint is
 * taken (handed to `atCheckpoint`) and the next step is the uninterrupted one; a second fresh run
 * restored from the checkpoint takes the resumed one. The caller compares them (stableReport).
 */
export async function resumedStep(
  env: RecipeEnv,
  recipe: string,
  cfg: Record<string, unknown>,
  seed: number,
  before: (run: RecipeRun) => Promise<void>,
  atCheckpoint: (payload: RecipeCheckpoint) => void = () => {},
): Promise<{ uninterrupted: StepReport; resumed: StepReport }> {
  const a = await createRun(env, recipe, cfg, seed);
  let payload: RecipeCheckpoint;
  let uninterrupted: StepReport;
  try {
    await before(a.run);
    payload = await a.run.state();
    atCheckpoint(payload);
    uninterrupted = await a.run.step();
  } finally {
    a.run.dispose();
  }
  const b = await createRun(env, recipe, cfg, seed);
  try {
    await b.run.restore(payload);
    return { uninterrupted, resumed: await b.run.step() };
  } finally {
    b.run.dispose();
  }
}

/**
 * arena at its smallest on the tiny fixture model: one goal, two answers, 4-token replies, rank 2,
 * one step per phase with the defender first (after two steps both players have trained).
 */
export const TINY_ARENA = {
  attacker: 'fixture',
  defender: 'fixture',
  judge: 'rules',
  phaseSteps: 1,
  firstPhase: 'defender',
  goals: 1,
  groupSize: 2,
  benignPrompts: 0,
  attackerMaxTokens: 4,
  defenderMaxTokens: 4,
  goalPool: 4,
  samples: 0,
  loraRank: 2,
  attackerLr: 5e-2,
  defenderLr: 5e-2,
};
