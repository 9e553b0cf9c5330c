// The work `npm run bench:cpu` times, declared once for both workers (torch_worker.py reads the
// same records from its commands).

export type CpuWork =
  | { kind: 'forward'; B: number; L: number }
  | { kind: 'decode'; B: number; P: number; new: number }
  | { kind: 'learn'; B: number; P: number; T: number }
  | { kind: 'grpo'; prompts: number; group: number; P: number; new: number };

export interface CpuCase {
  name: string;
  work: CpuWork;
}

/** Deterministic prompt ids [n][length] below V (the same formula as the GPU step profile). */
export function benchPrompts(n: number, length: number, V: number): number[][] {
  return Array.from({ length: n }, (_, b) => Array.from({ length }, (_, t) => (3 + 7 * t + 11 * b) % V));
}

/** Issue 42's rows: the sandbox defender (all of them) and the SmolLM2-135M shape (lighter work). */
export const DEFENDER_CASES: CpuCase[] = [
  { name: 'forward 8 x 64, all logits', work: { kind: 'forward', B: 8, L: 64 } },
  { name: 'greedy decode b1, 16 + 32 tokens', work: { kind: 'decode', B: 1, P: 16, new: 32 } },
  { name: 'greedy decode b64, 16 + 32 tokens', work: { kind: 'decode', B: 64, P: 16, new: 32 } },
  { name: 'LoRA learning step 8 x (32 + 32)', work: { kind: 'learn', B: 8, P: 32, T: 32 } },
  {
    name: 'GRPO step (8 x 8 rows, 16 + 32 sampled, ref pass, learn)',
    work: { kind: 'grpo', prompts: 8, group: 8, P: 16, new: 32 },
  },
];

export const SMOLLM2_CASES: CpuCase[] = [
  { name: 'forward 1 x 64, all logits', work: { kind: 'forward', B: 1, L: 64 } },
  { name: 'greedy decode b1, 16 + 16 tokens', work: { kind: 'decode', B: 1, P: 16, new: 16 } },
  { name: 'LoRA learning step 1 x (32 + 32)', work: { kind: 'learn', B: 1, P: 32, T: 32 } },
];
