// The recipe's prompt budget in tokens (veRL's data.max_prompt_length and data.truncation): a
// rollout tokenizes each dataset prompt with the model's tokenizer and chat template, then keeps it
// within the budget on the side the user chose, or refuses it naming its row. The upload's
// 16,384-character cap (contract/promptBounds.ts) stays only as a memory guard on reading a file.
import { fitPromptTokens, promptRowName, TRUNCATIONS, type Truncation } from '../../contract/promptBounds';
import { int, oneOf } from '../../contract/schema';

/** veRL's default data.max_prompt_length (RLHFDataset: config.get("max_prompt_length", 1024)). */
export const DEFAULT_MAX_PROMPT_LENGTH = 1024;

/** The two fields, defaults as veRL's (1024 tokens, "error"). */
export function promptBudgetFields() {
  return {
    maxPromptLength: int(
      DEFAULT_MAX_PROMPT_LENGTH,
      "prompt budget in tokens (chat template included) of each dataset prompt a rollout sends (veRL's data.max_prompt_length)",
      { min: 1, max: 1 << 20 },
    ),
    truncation: oneOf(
      TRUNCATIONS,
      'error',
      'a prompt over maxPromptLength (veRL data.truncation): error refuses it naming its row, left keeps its last tokens, right its first, middle its first and last halves',
    ),
  };
}

export interface PromptBudget {
  maxPromptLength: number;
  truncation: Truncation;
}

/** Each row's ids within the budget (`ids[i]` came from the prompt whose id is `promptIds[i]`). */
export function fitPrompts(ids: readonly number[][], promptIds: readonly string[], b: PromptBudget): number[][] {
  return ids.map((x, i) => fitPromptTokens(x, b.maxPromptLength, b.truncation, promptRowName(promptIds[i])));
}
