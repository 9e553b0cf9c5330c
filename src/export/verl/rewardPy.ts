// The `reward.py` of a veRL export: veRL's custom reward function
// `compute_score(data_source, solution_str, ground_truth, extra_info)` (its naive reward manager
// calls it once per response), in plain Python 3 with the standard library only, so it runs
// anywhere veRL runs and in the lab's CI (no pip). python/reward_common.py ports the lab's reward
// pieces:
//   - the rules judge (src/judges/rules.ts): payload and answer markers, the refusal lexicon;
//   - model judges through the http judge's protocol (src/judges/http.ts): POST {"texts": [...]}
//     to $SPARRING_JUDGE_URL/score -> {"scores": [...]};
//   - the repetition ratio of the red-team trainer (src/rl/repetition.ts).
// Per-sequence terms that veRL computes itself (the KL to the reference, the token entropy) are
// not visible to compute_score; they are read from extra_info when present
// (`sparring_mean_kl`, `sparring_mean_entropy`: the lab's parity test feeds its logged values
// there), and otherwise left to veRL's config (the export README says how each is mapped).
//
// JavaScript and Python regexes differ: JS `\s` is Unicode whitespace and `\b` ASCII, so the
// port spells JS's whitespace class out and compiles with re.ASCII.
import type { ExportRecipe } from './entry';
import { pyFile } from './python';
import REWARD_BATCH from './python/reward_batch.py?raw';
import REWARD_COMMON from './python/reward_common.py?raw';

export { pyLiteral } from './python';

/** The whole reward.py of a recipe: header, CONFIG, the shared port, the recipe's compute_score. */
export function rewardPy(recipe: ExportRecipe, config: Record<string, unknown>, header: string): string {
  const body = recipe.computeScore.trim();
  return [
    pyFile(header, { CONFIG: recipe.rewardConstants(config) }, REWARD_COMMON),
    '',
    body,
    // veRL's batch reward manager and the TRL script call the batch form; a recipe whose reward
    // needs the whole group (diversity) defines its own.
    ...(body.includes('def compute_score_batch(') ? [] : ['', '', REWARD_BATCH.trim()]),
    '',
  ].join('\n');
}
