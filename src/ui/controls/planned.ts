// Recipes the lab plans beyond the registered ones, shown (disabled) in the recipe picker.
export const PLANNED_RECIPES = [
  ['arena', 'attacker and defender co-trained, live'],
  ['redteam', 'GRPO red-teaming of the defender (Tinker red-team trainer)'],
  ['attack', 'RL on the attacker against a frozen defender'],
  ['defend', 'defender RL against an attacker (MTSA-RLVR)'],
  ['attacker-sft', 'attacker supervised fine-tuning (MTSA phase 1)'],
  ['tokenbuncher', 'entropy-as-reward defence (Token Buncher)'],
  ['multiturn', 'multi-turn escalation (SaFeR-Steer)'],
  ['minmax', 'monitor vs policy min-max game'],
  ['rlhf', 'single-player RLHF baseline'],
] as const;
