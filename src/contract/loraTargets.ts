// The LoRA target sets a recipe's `loraTargets` field names, as the model's projection names and as
// Hugging Face module names (PEFT / veRL / TRL target_modules). No tensors here: the export reads it too.

/** A transformer block's linear projections, by their short names (model/llama.ts maps them to HF names). */
export type ProjName = 'q' | 'k' | 'v' | 'o' | 'gate' | 'up' | 'down';
export const PROJ_NAMES: readonly ProjName[] = ['q', 'k', 'v', 'o', 'gate', 'up', 'down'];

export const LORA_TARGET_SETS = ['all', 'attention', 'mlp'] as const;
export type LoraTargetSet = (typeof LORA_TARGET_SETS)[number];

export function loraTargets(set: LoraTargetSet): ProjName[] {
  switch (set) {
    case 'all':
      return ['q', 'k', 'v', 'o', 'gate', 'up', 'down'];
    case 'attention':
      return ['q', 'k', 'v', 'o'];
    case 'mlp':
      return ['gate', 'up', 'down'];
  }
}

const HF_MODULES: Readonly<Record<ProjName, string>> = {
  q: 'q_proj',
  k: 'k_proj',
  v: 'v_proj',
  o: 'o_proj',
  gate: 'gate_proj',
  up: 'up_proj',
  down: 'down_proj',
};

/** Hugging Face module names of a target set, the same in every family the lab loads (q_proj, ..., down_proj). */
export function hfTargetModules(set: LoraTargetSet): string[] {
  return loraTargets(set).map((p) => HF_MODULES[p]);
}
