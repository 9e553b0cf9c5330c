// attacker-sft's export: a veRL SFT job of the sandbox's (goal -> adversarial prompt) pairs
// (src/export/verl/sft.ts builds it), not an RL entry: the loss is the NLL of the target tokens,
// so there is no reward.py.
export const attackerSftExport = { name: 'attacker-sft', modelField: 'attacker' } as const;
