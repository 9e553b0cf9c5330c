// The tfjs side of `npm run bench:cpu`: the project's own model, generate, learnStep and rlStep on
// the wasm backend (or the one named by --backend), one JSON command per stdin line, one "@@" line
// of JSON per answer on stdout (the same protocol as torch_worker.py).
import * as tf from '@tensorflow/tfjs';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { parseModelConfig } from '../../../src/contract/modelConfig';
import { useTrainingBackend } from '../../../src/cli/nodeBackend';
import { forward, loadLlama, PROJ_NAMES, type LlamaModel } from '../../../src/model/llama';
import { generate } from '../../../src/model/generate';
import { attachLora, withAdaptersDisabled, type LoraSet } from '../../../src/model/lora';
import { parseSafetensors } from '../../../src/model/safetensors';
import { AdamW } from '../../../src/rl/optim';
import { rlStep } from '../../../src/rl/loop';
import { benchLearnStep } from './learnWork';
import { benchPrompts, type CpuWork } from './work';

const backend = process.argv.includes('--backend') ? process.argv[process.argv.indexOf('--backend') + 1] : 'wasm';
const used = await useTrainingBackend(backend === 'cpu' ? 'cpu' : 'wasm');

let model!: LlamaModel;
let lora!: LoraSet;
let optimizer!: AdamW;
let V = 0;

async function run(w: CpuWork, seed: number): Promise<void> {
  if (w.kind === 'forward') {
    const logits = withAdaptersDisabled(lora, () => forward(model, benchPrompts(w.B, w.L, V)));
    await logits.data();
    logits.dispose();
  } else if (w.kind === 'decode') {
    await generate(model, benchPrompts(w.B, w.P, V), { maxNewTokens: w.new, greedy: true });
  } else if (w.kind === 'learn') {
    await benchLearnStep({ model, lora, optimizer }, w.B, w.P, w.T, V);
  } else {
    const r = await rlStep(
      { learner: { model, lora, optimizer }, rewardFn: ({ response }) => (response[0] % 2 === 0 ? 1 : 0) },
      benchPrompts(w.prompts, w.P, V),
      seed,
      { groupSize: w.group, maxNewTokens: w.new, temperature: 1, advantage: 'grpo', trainer: { policyLoss: 'ppo' } },
    );
    phases = { ...r.timings };
  }
}
let phases: Record<string, number> | undefined;

function wasmHeapBytes(): number | null {
  const be = tf.backend() as unknown as { wasm?: { HEAPU8?: Uint8Array } };
  return be.wasm?.HEAPU8?.buffer.byteLength ?? null;
}

for await (const line of createInterface({ input: process.stdin })) {
  const cmd = JSON.parse(line) as Record<string, unknown>;
  let res: Record<string, unknown> = {};
  if (cmd.op === 'load') {
    const cfg = parseModelConfig(readFileSync(cmd.config as string, 'utf8'), cmd.config as string);
    model = loadLlama(cfg, parseSafetensors(new Uint8Array(readFileSync(cmd.weights as string)), 'model.safetensors'));
    const r = cmd.rank as number;
    lora = attachLora(model, { r, alpha: 2 * r, targets: [...PROJ_NAMES], seed: 1 });
    optimizer = new AdamW({ lr: 1e-3 });
    V = cfg.vocabSize;
    res = { backend: used, threads: used === 'wasm' ? 1 : null };
  } else if (cmd.op === 'logits') {
    const logits = withAdaptersDisabled(lora, () => forward(model, benchPrompts(cmd.B as number, cmd.L as number, V)));
    const pos = cmd.positions as number[];
    const picked = tf.tidy(() => tf.gather(logits, pos, 1));
    res = { logits: Array.from(await picked.data()) };
    tf.dispose([logits, picked]);
  } else if (cmd.op === 'greedy') {
    const g = await generate(model, benchPrompts(cmd.B as number, cmd.P as number, V), {
      maxNewTokens: cmd.new as number,
      greedy: true,
    });
    res = { tokens: g.tokens };
  } else if (cmd.op === 'work') {
    phases = undefined;
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    await run(cmd.work as CpuWork, (cmd.seed as number | undefined) ?? 0);
    const c = process.cpuUsage(c0);
    res = { ms: performance.now() - t0, cpuMs: (c.user + c.system) / 1000, phases };
  } else if (cmd.op === 'memory') {
    res = { peakRssBytes: process.resourceUsage().maxRSS * 1024, wasmHeapBytes: wasmHeapBytes() };
  } else if (cmd.op === 'quit') break;
  process.stdout.write('@@' + JSON.stringify(res) + '\n');
}
process.exit(0);
