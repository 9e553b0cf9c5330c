// attacker-sft as a veRL SFT job (`verl.trainer.fsdp_sft_trainer`): the (goal -> adversarial
// prompt) pairs as a parquet of `prompt` / `response` strings (its SFTDataset renders them as one
// user turn and one assistant turn, as the lab does), and a Hydra config over veRL's
// sft_trainer. No reward: the lab's loss is the mean NLL of the target tokens, which is veRL's.
import { parquetWriteBuffer } from 'hyparquet-writer';
import { attackerSft } from '../../data/sandbox/index';
import type { LoraTargetSet } from '../../contract/loraTargets';
import { verlBatches } from './batch';
import { HERE, trainerKeys, verlLoraAlpha, verlTargetModules } from './verlConfig';

/** veRL's wsd schedule keeps the learning rate constant for this share of the steps after warm-up (torch_functional.py:847). */
export const WSD_STABLE_RATIO = 0.9;

export interface SftRow {
  prompt: string;
  response: string;
  prompt_id: string;
}

/** The lab's sandbox pairs: attackerSource(goal) -> the tactic-wrapped prompt (crescendo turns joined by newlines). */
export function sftRows(dataSize: number, seed: number): SftRow[] {
  return attackerSft(dataSize, seed).map((e) => ({ prompt: e.source, response: e.target, prompt_id: e.id }));
}

export function sftParquet(rows: readonly SftRow[]): Uint8Array {
  const col = (name: keyof SftRow) => ({ name, data: rows.map((r) => r[name]), type: 'STRING' as const });
  return new Uint8Array(
    parquetWriteBuffer({
      columnData: [col('prompt'), col('response'), col('prompt_id')],
      createdBy: 'sparring (hyparquet-writer)',
    }),
  );
}

const utf8 = (s: string) => new TextEncoder().encode(s).length;

export function sftOverrides(
  c: Record<string, unknown>,
  rows: readonly SftRow[],
  job: { steps: number; modelPath: string; gpus: number; experiment: string },
): Record<string, unknown> {
  // Byte-level BPE: tokens <= bytes; the chat template adds a few dozen.
  const longest = Math.max(
    ...rows.map((r) => utf8(r.prompt) + Math.min(utf8(r.response), (c.maxTargetTokens as number) * 8)),
  );
  // The SFT trainer splits the batch over the GPUs and each share into micro-batches (fsdp_sft_trainer.py:149-155).
  const sizes = verlBatches(c.batchSize as number, 1, 1, job.gpus, 4);
  return {
    'data.train_files': `${HERE}/data/sft_train.parquet`,
    'data.val_files': `${HERE}/data/sft_val.parquet`,
    'data.prompt_key': 'prompt',
    'data.response_key': 'response',
    'data.train_batch_size': c.batchSize,
    'data.micro_batch_size_per_gpu': sizes.micro,
    'data.max_length': Math.ceil((longest + 64) / 64) * 64,
    'data.truncation': 'right',
    'model.partial_pretrain': job.modelPath,
    'model.lora_rank': c.loraRank,
    'model.lora_alpha': verlLoraAlpha(c.loraAlpha),
    'model.target_modules': verlTargetModules(c.loraTargets as LoraTargetSet),
    'model.enable_gradient_checkpointing': true,
    'optim.lr': c.lr,
    // The lab's AdamW: betas (0.9, 0.999), constant learning rate, no warm-up. The SFT trainer has
    // cosine and wsd only (fsdp_sft_trainer.py:361-370); wsd holds the rate for its first 90% of
    // steps_per_epoch x total_epochs, so enough epochs keep every trained step at the lab's rate.
    'optim.betas': [0.9, 0.999],
    'optim.weight_decay': c.weightDecay,
    'optim.clip_grad': c.maxGradNorm,
    'optim.lr_warmup_steps_ratio': 0,
    'optim.lr_scheduler': 'wsd',
    ...trainerKeys(job),
    'trainer.total_epochs': Math.max(1000, Math.ceil(job.steps / WSD_STABLE_RATIO) + 1),
  };
}

export function sftRunSh(header: string, gpus: number): string {
  return [
    '#!/usr/bin/env bash',
    `# ${header}`,
    "# Starts veRL's SFT trainer on this folder's config; extra Hydra overrides go after the script name.",
    'set -euo pipefail',
    'cd "$(dirname "$0")"',
    `torchrun --standalone --nnodes=1 --nproc_per_node=${gpus} -m verl.trainer.fsdp_sft_trainer --config-path="$PWD" --config-name=verl_sft_config "$@"`,
    '',
  ].join('\n');
}

export function sftReadme(f: {
  seed: number;
  steps: number;
  rows: number;
  modelPath: string;
  sandbox: string | null;
  shipped: boolean;
  batch: number;
  /** GPU counts of 1, 2, 4, 8 the batch splits over (the dry run checks each). */
  gpuCounts: number[];
}): string {
  return `# Sparring recipe "attacker-sft" as a veRL SFT job

Exported from the Sparring lab (seed ${f.seed}): MTSA phase 1, the attacker learns to turn a goal into an
adversarial prompt. ${f.rows} (goal -> prompt) pairs, ${f.batch} per step, ${f.steps} steps, LoRA on ${f.sandbox ? `the sandbox model "${f.sandbox}"${f.shipped ? ' (in models/)' : ` (copy the lab's public/models/${f.sandbox}/ to models/${f.sandbox}/)`}` : f.modelPath}.

| file | what |
| --- | --- |
| \`verl_sft_config.yaml\` | Hydra config: veRL's \`sft_trainer\` with this recipe's overrides (every key checked against veRL's) |
| \`data/sft_train.parquet\`, \`data/sft_val.parquet\` | \`prompt\` (the goal, as the lab writes it: "Goal: ...") and \`response\` (the adversarial prompt) |
| \`run.sh\` | \`torchrun -m verl.trainer.fsdp_sft_trainer\` on this config |

## Launch

\`\`\`sh
pip install verl
python3 dry_run.py --gpus ${f.gpuCounts.join(',')}   # run.sh's command line through Hydra, the trainer's scheduler and batch split, veRL's SFTDataset: no GPU
bash run.sh
\`\`\`

Checkpoints land in \`checkpoints/\` in this folder (trainer.default_local_dir, an absolute path), one
\`global_step_N/\` per save. The learning rate is the lab's constant one: veRL's SFT trainer offers cosine and wsd
only, and the export uses wsd with enough epochs that every trained step falls in its constant phase.

One GPU is plenty for the sandbox model; 7B attackers (MTSA) want 4-8 80 GB GPUs (trainer.n_gpus_per_node).
The trained adapter is then the attacker of the \`attack\` / \`defend\` exports (serve it with vLLM's LoRA support).

## Start from the lab's adapter

veRL's SFT trainer starts a fresh LoRA. To continue the lab's, merge it first (the lab's Export panel:
"Merged model (safetensors)") and point \`model.partial_pretrain\` at the merged folder.

## What veRL cannot express

- The lab's greedy samples of held-out goals every \`sampleEvery\` steps (their tactic mix): run \`attack\`'s
  export or vLLM on the checkpoint instead.
- Targets are cut to \`maxTargetTokens\` tokens in the lab; veRL truncates the whole sequence at data.max_length.
`;
}
