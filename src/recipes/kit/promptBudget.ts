// The recipe's prompt budget in tokens (veRL's data.max_prompt_length and data.truncation): a
// rollout tokenizes each dataset prompt with the model's tokenizer and chat template, then keeps it
// within the budget on the side the user chose, or refuses it naming its row. The upload's
// 16,384-character cap (contract/promptBounds.ts) stays only as a memory guard on reading a file.
import { fitPromptTokens, promptRowName, TRUNCATIONS, type Truncation } from '../../contract/promptBounds';
import { int, oneOf } from '../../contract/schema';

/** veRL's default data.max_prompt_length (RLHFDataset: config.get("max_prompt_length", 1024)). */
export const DEFAULT_MAX_PROMPT_LENGTH = 1024;

/**
 * The two fields, defaults as veRL's (1024 tokens, "error"). `applies` says which prompts of the
 * recipe the budget holds (and which, written by a model, it does not); it ends the budget's help.
 */
export function promptBudgetFields(applies = 'each dataset prompt a rollout sends') {
  return {
    maxPromptLength: int(
      DEFAULT_MAX_PROMPT_LENGTH,
      `prompt budget in tokens (chat template included; veRL's data.max_prompt_length) of ${applies}`,
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

/**
 * Each row's ids within the budget (`ids[i]` came from the prompt whose id is `promptIds[i]`); a null
 * id is a prompt a model wrote, sent as it is (its length is that model's answer cap, not a row's).
 */
export function fitPrompts(
  ids: readonly number[][],
  promptIds: readonly (string | null)[],
  b: PromptBudget,
): number[][] {
  return ids.map((x, i) => {
    const id = promptIds[i];
    return id === null ? [...x] : fitPromptTokens(x, b.maxPromptLength, b.truncation, promptRowName(id));
  });
}

/**
 * What a rollout does with its tokenized prompts before generating (the kit's sampleReplies /
 * sampleAnswers take one, so every recipe states where its prompts come from).
 */
export type PromptFit = (ids: number[][]) => number[][];

/** A rollout whose i-th prompt is dataset row `rows[i]` (held to the budget), or null (written by a model: as it is). */
export const budgetFit =
  (b: PromptBudget, rows: readonly (string | null)[]): PromptFit =>
  (ids) =>
    fitPrompts(ids, rows, b);

/** A rollout whose prompts a model wrote (an attacker's prompts to the defender): bounded by that model's answer cap. */
export const modelWrittenPrompts: PromptFit = (ids) => ids;
