// How long a multi-turn episode runs in veRL's agent loop, and which of its turns get scored, next to
// the lab's. veRL's tool agent loop (b178a3c) puts every reply and every later user turn (templated on
// its own with the generation prompt, tool_agent_loop.py:398) into the response, and right after a
// reply stops once the response holds data.max_response_length tokens (:254), before the interaction
// scores that reply. The lab plays turn t while its context plus the reply cap fits the model's
// positions (multiturn.ts), and scores every turn it plays. Sizes assume replies at the cap (maxNewTokens),
// the longest a lab reply can be.
import type { ChatTokenCounter } from './tokens';

/** Response tokens after each reply t (1-based: [0] is after the first): t replies at the cap plus user turns 2..t. */
export function responseAfterReplies(
  turns: readonly string[],
  maxNewTokens: number,
  userTokens: (u: string) => number,
): number[] {
  const out: number[] = [];
  let total = 0;
  turns.forEach((u, t) => {
    if (t > 0) total += userTokens(u);
    total += maxNewTokens;
    out.push(total);
  });
  return out;
}

/** Replies veRL scores at `responseLength`: those after which the response is still shorter (tool_agent_loop.py:254). */
export const verlScoredTurns = (after: readonly number[], responseLength: number): number =>
  after.filter((n) => n < responseLength).length;

/** Replies the lab plays (and scores): prompt + context + the reply cap within the model's positions. */
export const labScoredTurns = (after: readonly number[], promptTokens: number, maxPos: number): number =>
  after.filter((n) => promptTokens + n <= maxPos).length;

export interface EpisodeSpec {
  /** The user turns the interaction plays, first to last (the first is the parquet prompt). */
  turns: readonly string[];
}

export interface EpisodeFit {
  /** data.max_response_length that lets veRL score every turn the lab scores (before the positions cut). */
  responseLength: number;
  /** How the user turns were counted. */
  counted: 'tokens' | 'bytes';
  /** Per episode: response tokens after each reply, the first turn's prompt tokens. */
  episodes: { after: number[]; prompt: number }[];
}

/**
 * Sizes data.max_response_length for episodes played up to maxTurns turns. With the model's
 * tokenizer the counts are veRL's; without one (a hub model) each user turn is bounded by its UTF-8
 * bytes plus 64 for the template (byte-level BPE never makes more tokens than bytes).
 */
export function fitEpisodes(
  episodes: readonly EpisodeSpec[],
  o: { maxTurns: number; maxNewTokens: number; maxPos: number; count: ChatTokenCounter | null },
): EpisodeFit {
  const bytes = (s: string) => new TextEncoder().encode(s).length;
  const tokens = (u: string) => (o.count ? o.count([{ role: 'user', content: u }]) : bytes(u) + 64);
  const measured = episodes.map((e) => {
    const turns = e.turns.slice(0, o.maxTurns);
    return { after: responseAfterReplies(turns, o.maxNewTokens, tokens), prompt: tokens(turns[0]) };
  });
  let responseLength = 1;
  for (const m of measured) {
    const lab = labScoredTurns(m.after, m.prompt, o.maxPos);
    if (lab > 0) responseLength = Math.max(responseLength, m.after[lab - 1] + 1);
  }
  return { responseLength, counted: o.count ? 'tokens' : 'bytes', episodes: measured };
}

/** The README's line: how many turns veRL scores at the response length the job has, against the lab. */
export function episodeNote(fit: EpisodeFit, responseLength: number, maxPos: number, maxNewTokens: number): string {
  let short = 0;
  let worst = { verl: Infinity, lab: 0 };
  for (const m of fit.episodes) {
    const lab = labScoredTurns(m.after, m.prompt, maxPos);
    const verl = verlScoredTurns(m.after, responseLength);
    if (verl < lab) {
      short++;
      if (verl < worst.verl) worst = { verl, lab };
    }
  }
  const sizing = `replies at the lab's cap of maxNewTokens = ${maxNewTokens} tokens, each later user turn counted as veRL's agent loop templates it, ${fit.counted === 'tokens' ? "with the shipped model's tokenizer" : 'bounded by its bytes + 64 (no tokenizer in the export)'}`;
  return short === 0
    ? `Episode length: data.max_response_length = ${responseLength} holds every turn the lab scores in all ${fit.episodes.length} episodes (${sizing}), so veRL scores the same turns.`
    : `Episode length: at data.max_response_length = ${responseLength}, ${short} of ${fit.episodes.length} episodes end before their last scored turn in veRL (the shortest: ${worst.verl} of the lab's ${worst.lab} turns; ${sizing}). veRL gives every episode one response length beside the longest prompt, where the lab gives each episode what its own prompt leaves of the ${maxPos} positions.`;
}
