// The README.md of a veRL export: what is in the folder, the launch command and the hardware,
// how to start from the lab's PEFT adapter, and every part of the recipe veRL cannot express.

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
  judge: string;
  unsupported: string[];
  trl: boolean;
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
${f.trl ? "| `trl_grpo.py` | the same job on TRL's GRPOTrainer; its reward function calls `reward.py` |\n" : ''}| \`sparring_export.json\` | the recipe, seed and validated config this came from |

${modelLine}

## Launch

\`\`\`sh
pip install verl vllm          # veRL's own install guide covers CUDA / FSDP / Megatron variants
bash run.sh                    # = python3 -m verl.trainer.main_ppo --config-path=$PWD --config-name=verl_config
bash run.sh trainer.n_gpus_per_node=8 actor_rollout_ref.rollout.tensor_model_parallel_size=2   # more GPUs
\`\`\`

Each step samples ${f.groupSize} responses for each of ${f.batchPrompts} prompts (data.train_batch_size ${f.batchPrompts},
actor_rollout_ref.rollout.n ${f.groupSize}) and takes one optimiser step, for ${f.steps} steps. Hardware: ${hardware(f)}
${f.judge === 'rules' || f.judge === 'rules-partial' ? `The judge is the lab's rules judge, ported into reward.py: no judge server is needed.` : 'reward.py asks model servers for part of the reward: the list below says which and how to start them.'}

## Start from the lab's adapter

The lab's Export panel (Adapter (PEFT zip)) gives the trained LoRA as a PEFT adapter zip
(adapter_config.json + adapter_model.safetensors, Hugging Face PEFT names). Unzip it to \`adapter/\`, then

\`\`\`sh
bash run.sh actor_rollout_ref.model.lora_adapter_path=$PWD/adapter
${f.trl ? 'python3 trl_grpo.py --adapter adapter          # TRL: PeftModel.from_pretrained(base, "adapter", is_trainable=True)\n' : ''}\`\`\`

The adapter's rank, alpha and target modules must match \`actor_rollout_ref.model.lora_rank\`, \`lora_alpha\` and
\`target_modules\` in verl_config.yaml (the export writes the recipe's).

## What veRL cannot express (read before comparing curves)

${f.unsupported.length ? f.unsupported.map((u) => `- ${u}`).join('\n') : "- Nothing: the job is the lab's recipe."}

## Metric names

The lab's \`--metric-names verl\` writes its JSONL log with veRL's names (reward/mean -> critic/score/mean,
loss/policy -> actor/pg_loss, kl/mean -> actor/reward_kl_penalty, entropy/mean -> actor/entropy,
grad/norm -> actor/grad_norm), so one plotting script reads both runs.
`;
}
