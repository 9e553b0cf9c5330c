// The README.md of a veRL export: what is in the folder, the launch command and the hardware,
// how to start from the lab's PEFT adapter, and every part of the recipe veRL cannot express.
import { TRL_INSTALL, TRL_MIN_VERSION } from './trlScript';

export interface ReadmeFacts {
  recipe: string;
  seed: number;
  steps: number;
  gpus: number;
  modelRef: string;
  model: { path: string; sandbox: string | null };
  modelShipped: boolean;
  trainRows: number;
  valRows: number;
  batchPrompts: number;
  groupSize: number;
  /** Optimiser steps per step (PPO epochs x mini-batches). */
  optimiserSteps: number;
  judge: string;
  unsupported: string[];
  trl: boolean;
  /** Where the TRL script trains something other than the lab. */
  trlNotes: string[];
  /** GPU counts per node the job's batch sizes work for (batch.ts). */
  gpuCounts: number[];
  /** The frozen models reward.py asks, each served under the name it sends. */
  frozen: {
    role: string;
    env: string;
    /** The model name reward.py sends (CONFIG), i.e. vLLM's --served-model-name. */
    served: string;
    /** What `vllm serve` loads, relative to this folder or a hub id. */
    path: string;
    /** A sandbox model that is not in the zip: where to copy it from. */
    missing: string | null;
  }[];
}

/** The share of a GPU a frozen model's vLLM takes beside the job's (the job's own vLLM takes ROLLOUT_GPU_MEMORY). */
export const FROZEN_GPU_MEMORY = 0.2;

/** The README's scaling line: the most GPUs per node (of 1, 2, 4, 8) the batch sizes allow. */
export const scalingOverrides = (f: Pick<ReadmeFacts, 'gpuCounts'>): string =>
  `trainer.n_gpus_per_node=${Math.max(...f.gpuCounts)}`;

function frozenSection(f: ReadmeFacts): string {
  if (!f.frozen.length) return '';
  const lines = f.frozen.map((m, i) => {
    const port = 8001 + i;
    return [
      `The frozen ${m.role} answers inside reward.py, which asks for the model named \`${m.served}\` at \`$${m.env}\`:`,
      ...(m.missing ? ['', m.missing] : []),
      '',
      '```sh',
      `vllm serve ${m.path} --served-model-name ${JSON.stringify(m.served)} --port ${port} --gpu-memory-utilization ${FROZEN_GPU_MEMORY} &`,
      `export ${m.env}=http://localhost:${port}`,
      '```',
    ].join('\n');
  });
  return `## Frozen models

${lines.join('\n\n')}

\`vllm serve PATH\` alone registers the model under PATH, and reward.py's calls would get 404: keep
\`--served-model-name\`. On a GPU the job also uses, veRL's own vLLM takes
actor_rollout_ref.rollout.gpu_memory_utilization (0.5) of the GPU and FSDP's actor most of the rest, so start the
frozen server first with a small \`--gpu-memory-utilization\` (${FROZEN_GPU_MEMORY}: its weights plus a KV cache; raise it for
a 7B model) or give it a GPU of its own (\`CUDA_VISIBLE_DEVICES=N vllm serve ...\`, and one GPU fewer in
trainer.n_gpus_per_node).

`;
}

function hardware(f: ReadmeFacts): string {
  if (f.model.sandbox) {
    return `The sandbox model "${f.model.sandbox}" has under a million parameters: one GPU of any size (vLLM needs CUDA; 8 GB is plenty), a few minutes for ${f.steps} steps.`;
  }
  return `A 0.1-1B model (SmolLM2-135M, Qwen2.5-0.5B) trains with LoRA on one 24-80 GB GPU; 7-8B models want 4-8 80 GB GPUs (set trainer.n_gpus_per_node and actor_rollout_ref.rollout.tensor_model_parallel_size).`;
}

export function exportReadme(f: ReadmeFacts): string {
  const modelLine = f.model.sandbox
    ? f.modelShipped
      ? `\`models/${f.model.sandbox}/\`: the lab's sandbox model (Hugging Face layout: config.json, model.safetensors, tokenizer.json with its chat template).`
      : `The lab's sandbox model "${f.model.sandbox}" is not in this zip: copy the lab's \`public/models/${f.model.sandbox}/\` folder to \`models/${f.model.sandbox}/\` (or export from the CLI, which ships it).`
    : `The model is loaded from \`${f.model.path}\` (the lab's "${f.modelRef}").`;
  return `# Sparring recipe "${f.recipe}" as a veRL job

Exported from the Sparring lab (seed ${f.seed}). The lab tried the method on small models in the
browser; this folder runs the same recipe at scale on veRL (Ray; FSDP training, vLLM rollouts)${f.trl ? ", or on TRL's GRPOTrainer" : ''}.

## What is here

| file | what |
| --- | --- |
| \`verl_config.yaml\` | the Hydra config: veRL's \`ppo_trainer\` with this recipe's overrides (estimator, KL placement and coefficient, clip ratios, loss aggregation, learning rate, batch sizes, rollout n / temperature / top_p, lengths, LoRA, model, steps) |
| \`reward.py\` | \`compute_score(data_source, solution_str, ground_truth, extra_info)\`: the recipe's reward, standard-library Python (the lab's CI checks it returns the lab's rewards within 1e-6 on logged rollouts) |
| \`data/train.parquet\`, \`data/val.parquet\` | ${f.trainRows} training and ${f.valRows} held-out prompts in veRL's RLHFDataset layout (\`prompt\` as chat messages, \`data_source\`, \`reward_model.ground_truth\`, \`extra_info\`) |
| \`run.sh\` | the launch command |
| \`dry_run.py\` | checks the job with veRL's own config code before you rent GPUs (see Launch) |
${f.trl ? "| `trl_grpo.py` | the same job on TRL's GRPOTrainer; its reward function calls `reward.py` |\n" : ''}| \`sparring_export.json\` | the recipe, seed and validated config this came from |

${modelLine}

## Launch

\`\`\`sh
pip install verl vllm          # veRL's own install guide covers CUDA / FSDP / Megatron variants
python3 dry_run.py --gpus ${f.gpuCounts.join(',')}   # veRL's start-up without Ray or a GPU: config, batches, prompts, reward.py
bash run.sh                    # = python3 -m verl.trainer.main_ppo --config-path=$PWD --config-name=verl_config
${f.gpuCounts.length > 1 ? `bash run.sh ${scalingOverrides(f)}   # more GPUs\n` : ''}\`\`\`

\`dry_run.py\` runs what veRL runs at start-up, without Ray, a GPU or a download: run.sh's own command line
through Hydra, every section the workers convert through veRL's \`omega_conf_to_dataclass\`, \`validate_config\` and the
workers' batch normalisation at each GPU count of \`--gpus\`, every parquet prompt through the model's tokenizer and
chat template against data.max_prompt_length (veRL drops longer rows without a word), and reward.py on every row
with a refusal, an empty and a typical reply as veRL's reward loop calls it (the same keys on every row, a finite
score). It exits 1 with veRL's own message where veRL would stop or silently change the job; extra Hydra
overrides go after it as after run.sh. The batch sizes work on
${f.gpuCounts.join(', ')} GPU(s) per node (the micro-batch ppo_micro_batch_size_per_gpu divides each GPU's share of the
mini-batch at each of them); 7-8B models also want actor_rollout_ref.rollout.tensor_model_parallel_size=2 or more.

Checkpoints land in \`checkpoints/\` in this folder (trainer.default_local_dir, an absolute path: veRL's workers
do not start in this folder), one \`global_step_N/\` per save, the LoRA adapter under \`actor/lora_adapter/\`.${f.trl ? ' The TRL script writes to `outputs/` beside it.' : ''}

Each step samples ${f.groupSize} responses for each of ${f.batchPrompts} prompts (data.train_batch_size ${f.batchPrompts},
actor_rollout_ref.rollout.n ${f.groupSize}) and takes ${f.optimiserSteps === 1 ? 'one optimiser step' : `${f.optimiserSteps} optimiser steps (ppo_epochs x train_batch_size / ppo_mini_batch_size)`}, for ${f.steps} steps. Hardware: ${hardware(f)}
${f.judge === 'rules' || f.judge === 'rules-partial' ? `The judge is the lab's rules judge, ported into reward.py: no judge server is needed.` : 'reward.py asks model servers for part of the reward: the list below says which and how to start them.'}

## Start from the lab's adapter

The lab's Export panel (Adapter (PEFT zip)) gives the trained LoRA as a PEFT adapter zip
(adapter_config.json + adapter_model.safetensors, Hugging Face PEFT names). Unzip it to \`adapter/\`, then

\`\`\`sh
bash run.sh actor_rollout_ref.model.lora_adapter_path=$PWD/adapter
${f.trl ? 'python3 trl_grpo.py --adapter adapter          # TRL: PeftModel.from_pretrained(base, "adapter", is_trainable=True)\n' : ''}\`\`\`

The adapter's rank, alpha and target modules must match \`actor_rollout_ref.model.lora_rank\`, \`lora_alpha\` and
\`target_modules\` in verl_config.yaml (the export writes the recipe's).

KL reference: with \`lora_adapter_path\` veRL's reference policy is the BASE model (the actor with its adapter
switched off), not the lab's adapter, so the KL pulls the policy back towards the base${f.trl ? " (TRL's reference for a PEFT model is the same)" : ''}. To keep the lab's trained
policy as the reference, merge the adapter into the base first (the lab's Export panel: "Merged model
(safetensors)") and start a fresh LoRA on the merged folder: \`bash run.sh actor_rollout_ref.model.path=$PWD/merged\`.

${frozenSection(f)}## What veRL cannot express (read before comparing curves)

${f.unsupported.length ? f.unsupported.map((u) => `- ${u}`).join('\n') : "- Nothing: the job is the lab's recipe."}
${
  f.trl
    ? `
## TRL

\`${TRL_INSTALL} && python3 trl_grpo.py\` (the floor: GRPOConfig.entropy_coef arrived in TRL ${TRL_MIN_VERSION}).
${f.trlNotes.length ? `Where the TRL job differs from the lab's (also in the script's docstring):\n\n${f.trlNotes.map((u) => `- ${u}`).join('\n')}\n` : "The TRL job trains the lab's loss and KL.\n"}`
    : ''
}
## Metric names

The lab's \`--metric-names verl\` writes its JSONL log with veRL's names (reward/mean -> critic/score/mean,
loss/policy -> actor/pg_loss, kl/mean -> actor/reward_kl_penalty, entropy/mean -> actor/entropy,
grad/norm -> actor/grad_norm), so one plotting script reads both runs.
`;
}
