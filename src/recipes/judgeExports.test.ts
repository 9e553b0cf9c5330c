// The veRL export carries the judge fields: the http judge's text choice reaches reward.py's
// CONFIG, and an llm-guard judge's checkpoint and categories are named in the README's notes.
import { describe, expect, it } from 'vitest';
import { getRecipe } from './registry';
import { exportVerl } from './exports';

const exported = (config: Record<string, unknown>) =>
  exportVerl({ recipe: getRecipe('redteam'), config, seed: 1, steps: 10 });

describe('veRL export of the judge fields', () => {
  it('judgeUrlPromptToo sends prompt and response from reward.py as the lab does', () => {
    expect(
      exported({ judge: 'http', judgeUrl: 'http://h:9/score', judgeUrlPromptToo: true }).files['reward.py'],
    ).toMatch(/"judge_text": "prompt\+response"/);
    expect(exported({ judge: 'http', judgeUrl: 'http://h:9/score' }).files['reward.py']).toMatch(
      /"judge_text": "response"/,
    );
  });

  it('names the guard checkpoint, its format and categories for llm-guard', () => {
    const readme = String(
      exported({
        judge: 'llm-guard',
        guard: 'meta-llama/Llama-Guard-3-1B',
        guardWeights: 'int4-g32',
        guardCategories: 'S1,S9',
      }).files['README.md'],
    );
    expect(readme).toContain("meta-llama/Llama-Guard-3-1B (int4-g32) in Llama Guard 3's own prompt");
    expect(readme).toContain('categories S1,S9');
  });
});
