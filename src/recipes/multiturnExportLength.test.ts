// multiturn's veRL export scores every turn the lab scores: veRL's tool agent loop (b178a3c) replayed
// on every episode of the exported parquet with the exported limits. Each reply runs to the lab's cap
// (maxNewTokens tokens); each later user turn is templated on its own with the generation prompt
// (tool_agent_loop.py:398); right after a reply the loop stops once the response holds
// data.max_response_length tokens, or the assistant / user turn limits are reached (:254-259), before
// the interaction scores that reply. Token counts: the shipped model's tokenizer and chat template
// through the lab's tokenizer code (what transformers' apply_chat_template returns for it).
import { readFileSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parquetReadObjects } from 'hyparquet';
import { describe, expect, it } from 'vitest';
import { resolveChatTemplate, type ChatMessage } from '../model/chat';
import { createTokenizer } from '../model/tokenizer';
import { exportVerl } from './exports';
import { getRecipe } from './registry';

const MODEL = resolve('public/models/defender');
const modelFiles = Object.fromEntries(readdirSync(MODEL).map((f) => [f, new Uint8Array(readFileSync(join(MODEL, f)))]));
const read = (f: string) => JSON.parse(readFileSync(join(MODEL, f), 'utf8')) as unknown;
const tok = createTokenizer(read('tokenizer.json'), read('tokenizer_config.json'));
const template = resolveChatTemplate({ tokenizerConfig: read('tokenizer_config.json') });
const tokens = (m: ChatMessage[]) =>
  tok.encode(template.render(m, { addGenerationPrompt: true, specialTokens: tok.specialTokens }), {
    addSpecialTokens: false,
  }).length;
const maxPos = (read('config.json') as { max_position_embeddings: number }).max_position_embeddings;

interface Limits {
  responseLength: number;
  maxAssistant: number;
  maxUser: number;
  maxTurns: number;
  maxNewTokens: number;
}

/** Replies veRL's tool agent loop scores in one episode (the interaction scores each reply it is asked about). */
function verlScored(turns: string[], l: Limits): number {
  let response = 0;
  let assistant = 0;
  let user = 0;
  let scored = 0;
  for (let k = 0; ; k++) {
    response += l.maxNewTokens; // generating: the reply
    assistant++;
    if (response >= l.responseLength || assistant >= l.maxAssistant || user >= l.maxUser) return scored;
    user++; // interacting: the interaction scores the reply and plays the next user turn
    scored++;
    const done = k + 1 >= Math.min(turns.length, l.maxTurns);
    if (done) return scored;
    response += tokens([{ role: 'user', content: turns[k + 1] }]);
  }
}

/** Replies the lab plays and scores: its context plus the reply cap within the model's positions (multiturn.ts). */
function labScored(turns: string[], l: Limits): number {
  let context = tokens([{ role: 'user', content: turns[0] }]);
  let played = 0;
  for (let k = 0; k < Math.min(turns.length, l.maxTurns); k++) {
    if (k > 0) context += tokens([{ role: 'user', content: turns[k] }]);
    if (context + l.maxNewTokens > maxPos) break;
    context += l.maxNewTokens;
    played++;
  }
  return played;
}

async function episodes(files: Record<string, string | Uint8Array>): Promise<string[][]> {
  const out: string[][] = [];
  for (const f of ['data/train.parquet', 'data/val.parquet']) {
    const b = files[f] as Uint8Array;
    const rows = await parquetReadObjects({
      file: b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer,
    });
    for (const r of rows)
      out.push(
        (
          JSON.parse((r.extra_info as { interaction_kwargs: { episode: string } }).interaction_kwargs.episode) as {
            turns: string[];
          }
        ).turns,
      );
  }
  return out;
}

describe("multiturn's veRL episode length", () => {
  for (const config of [{}, { maxNewTokens: 48 }, { maxTurns: 2 }])
    it(`veRL scores every turn the lab scores where the positions allow, and the README counts the rest (${JSON.stringify(config)})`, async () => {
      const ex = exportVerl({ recipe: getRecipe('multiturn'), config, seed: 1, steps: 50, modelFiles });
      const o = ex.overrides;
      const c = {
        ...Object.fromEntries(Object.entries(getRecipe('multiturn').schema).map(([k, f]) => [k, f.default])),
        ...config,
      };
      const l: Limits = {
        responseLength: o['data.max_response_length'] as number,
        maxAssistant: o['actor_rollout_ref.rollout.multi_turn.max_assistant_turns'] as number,
        maxUser: o['actor_rollout_ref.rollout.multi_turn.max_user_turns'] as number,
        maxTurns: c.maxTurns as number,
        maxNewTokens: c.maxNewTokens as number,
      };
      // vLLM holds prompt + response within the model's positions.
      expect((o['data.max_prompt_length'] as number) + l.responseLength).toBeLessThanOrEqual(maxPos);
      const eps = await episodes(ex.files);
      expect(eps.length).toBeGreaterThan(100);
      const short = eps.filter((t) => verlScored(t, l) < labScored(t, l));
      const readme = ex.files['README.md'] as string;
      if (Object.keys(config).length === 0) {
        // Sandbox-length episodes: the lab scores all their turns, and so does veRL.
        expect(short.length, `${short.length} of ${eps.length} episodes lose turns at ${l.responseLength}`).toBe(0);
        for (const t of eps) expect(verlScored(t, l)).toBe(Math.min(t.length, l.maxTurns));
      }
      // The README says how many episodes score fewer turns than in the lab (none where the positions allow).
      expect(readme).toMatch(
        short.length === 0
          ? new RegExp(
              `data\\.max_response_length = ${l.responseLength} holds every turn the lab scores in all ${eps.length} episodes`,
            )
          : new RegExp(
              `at data\\.max_response_length = ${l.responseLength}, ${short.length} of ${eps.length} episodes end before their last scored turn`,
            ),
      );
      // The earlier sizing (maxTurns x (maxNewTokens + 64), cut to the positions left by a byte-bounded
      // prompt length of 128) loses the last turn of some episodes: the check can fail.
      if (Object.keys(config).length === 0) {
        const before = { ...l, responseLength: Math.min(l.maxTurns * (l.maxNewTokens + 64), maxPos - 128) };
        expect(eps.filter((t) => verlScored(t, before) < labScored(t, before)).length).toBeGreaterThan(0);
      }
    });
});
