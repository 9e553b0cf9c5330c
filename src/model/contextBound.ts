// The one check between a prompt's length and an allocation sized from it: the KV cache, the
// prefill's activations and the attention scores grow with prompt + new tokens, and four ~100 KB
// prompts (~25,000 tokens each) asked for a 253 GB typed array. Past the model's context
// (max_position_embeddings) the rotary positions were never trained either, so the longest prompt
// plus the new tokens must fit it; the message names both numbers.
import { PromptLengthError } from '../contract/promptBounds';

export function checkContext(context: number, prompts: readonly (readonly number[])[], maxNewTokens: number): void {
  let longest = 0;
  let row = 0;
  prompts.forEach((p, b) => {
    if (p.length > longest) [longest, row] = [p.length, b];
  });
  const need = longest + Math.max(0, Number.isFinite(maxNewTokens) ? maxNewTokens : 0);
  if (need > context)
    throw new PromptLengthError(
      `prompt ${row} is ${longest.toLocaleString('en-US')} tokens; with ${maxNewTokens} new tokens it needs ` +
        `${need.toLocaleString('en-US')} positions, over the model's context of ${context.toLocaleString('en-US')} ` +
        `(max_position_embeddings): shorten the prompts (an upload can cut them) or lower the new tokens`,
    );
}
