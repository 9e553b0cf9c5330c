// The fields that configure a model-backed or remote judge, shared by every recipe with a `judge`
// field: the llm-guard judge's Llama Guard 3 checkpoint (a model field with its weight format,
// like the recipe's own models), the categories it judges by and how its verdict is read, and the
// http judge's URL. Added next to `judge`; a recipe passes judgeOptionsOf(config) to env.judge.
import { bool, oneOf, str } from '../../contract/schema';
import type { JudgeOptions } from './types';
import { weightsField } from '../../contract/weightFields';
import type { WeightFormat } from '../../contract/weightFormat';

export function judgeModelFields() {
  return {
    guard: str(
      '',
      'llm-guard judge (judge = llm-guard): the Llama Guard 3 checkpoint, a hub id such as meta-llama/Llama-Guard-3-1B, a URL or a sandbox name; int4 or int8 weights keep it small',
    ),
    guardWeights: weightsField('guard'),
    guardCategories: str(
      '',
      'llm-guard: the Llama Guard 3 categories that count, comma-separated codes S1 to S14 (kept under their own numbers); empty = all fourteen',
    ),
    guardCustomCategories: str(
      '',
      'llm-guard: extra categories listed after those, "S15: Name. what it covers" separated by ";"',
    ),
    guardVerdict: oneOf(
      ['probability', 'text'],
      'probability',
      'llm-guard verdict: probability = P("unsafe") / (P("unsafe") + P("safe")) of the first token (a graded score); text = the greedy answer "safe" / "unsafe\\nS1,S3" (0 or 1, with its categories)',
    ),
    ...httpJudgeFields(),
  };
}

/** The http judge's fields (also minmax / rlhf, whose rm may name it). */
export function httpJudgeFields() {
  return {
    judgeUrl: str(
      '',
      'http judge (judge = http): the scorer URL; it is POSTed {"texts": [...]} and answers {"scores": [...]} in [0, 1]',
    ),
    judgeUrlPromptToo: bool(false, 'http judge: send the prompt and the response (true) or the response alone (false)'),
  };
}

/** What env.judge needs of the http fields. */
export function httpJudgeOptionsOf(c: { judgeUrl: string; judgeUrlPromptToo: boolean }): JudgeOptions {
  return { url: c.judgeUrl, urlText: c.judgeUrlPromptToo ? 'prompt+response' : 'response' };
}

type JudgeConfig = {
  guard: string;
  guardWeights: WeightFormat;
  guardCategories: string;
  guardCustomCategories: string;
  guardVerdict: 'probability' | 'text';
  judgeUrl: string;
  judgeUrlPromptToo: boolean;
};

/** What env.judge needs of a config's judge fields. */
export function judgeOptionsOf(c: JudgeConfig): JudgeOptions {
  return {
    guard: {
      ref: c.guard,
      weights: c.guardWeights,
      categories: c.guardCategories,
      customCategories: c.guardCustomCategories,
      verdict: c.guardVerdict,
    },
    ...httpJudgeOptionsOf(c),
  };
}

/** The judge field values of a config, to hand a nested run (tokenbuncher's redteam comparison) the same judge. */
export function judgeFieldValues(c: JudgeConfig): JudgeConfig {
  const { guard, guardWeights, guardCategories, guardCustomCategories, guardVerdict, judgeUrl, judgeUrlPromptToo } = c;
  return { guard, guardWeights, guardCategories, guardCustomCategories, guardVerdict, judgeUrl, judgeUrlPromptToo };
}
