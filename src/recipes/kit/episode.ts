// Multi-turn episodes as single training rows. A conversation user_0, reply_0, user_1, reply_1, ...
// becomes
//
//   prompt   = chat(user_0) + generation prompt
//   response = reply_0 [+ end of turn] + glue_1 + reply_1 [+ end of turn] + glue_2 + reply_2 ...
//
// where glue_k is what the chat template writes between the end of reply k-1 and the generation
// prompt after user_k (for ChatML: "\n<|im_start|>user\n{user_k}<|im_end|>\n<|im_start|>assistant\n").
// The reply tokens are the sampled ids themselves (never re-encoded text), so the row is exactly
// the context each turn was sampled in, and one forward over it gives every turn's log-probs.
//
// Masks: `attention` is 1 on every real token (glue included: later replies read it); `policy` is 1
// only on model-written tokens, so user turns written by a script, a judge or an attacker never
// enter the loss (SaFeR-Steer masks judge-written turns out).
import type { ChatMessage } from '../../model/chat';
import type { PromptFit } from './promptBudget';
import type { ChatCodec } from './types';

/**
 * The template tokens after an assistant reply up to the generation prompt of the next user turn,
 * and the end-of-turn id the template closes a reply with. Throws when the template does not
 * extend a conversation by appending (then turns cannot be concatenated).
 */
export function turnGlue(
  codec: ChatCodec,
  before: readonly ChatMessage[],
  reply: string,
  nextUser: string,
): { endOfTurn: number; glue: number[] } {
  const head = codec.encodeChat(before, { addGenerationPrompt: true });
  const full = codec.encodeChat(
    [...before, { role: 'assistant', content: reply }, { role: 'user', content: nextUser }],
    { addGenerationPrompt: true },
  );
  for (let i = 0; i < head.length; i++) {
    if (full[i] !== head[i])
      throw new Error(
        `episode: the chat template of ${codec.label} is not prefix-stable (a longer conversation does not start with the shorter one's tokens at position ${i})`,
      );
  }
  for (let i = head.length; i < full.length; i++) {
    if (codec.eos.includes(full[i])) return { endOfTurn: full[i], glue: full.slice(i + 1) };
  }
  throw new Error(`episode: the chat template of ${codec.label} writes no end-of-turn token after an assistant reply`);
}

/** One episode being built turn by turn. */
export class EpisodeRow {
  readonly prompt: number[];
  /** Everything after the prompt: replies and glue. */
  readonly response: number[] = [];
  /** 1 on model-written tokens. */
  readonly policy: number[] = [];
  /** Rollout log-prob / entropy of model-written tokens, 0 elsewhere. */
  readonly logprobs: number[] = [];
  readonly entropy: number[] = [];
  /** Turn k on reply k's tokens, -1 elsewhere (placeTurnRewards' layout). */
  readonly turnIndex: number[] = [];
  readonly messages: ChatMessage[] = [];
  /** Per reply: its ids, log-probs and entropies (report traces). */
  readonly replies: { ids: number[]; logp: number[]; entropy: number[]; ended: boolean }[] = [];

  constructor(
    private readonly codec: ChatCodec,
    firstUser: string,
    /** The prompt budget on the first turn (veRL's max_prompt_length holds the initial prompt; later turns are response). */
    fit: PromptFit,
  ) {
    this.messages.push({ role: 'user', content: firstUser });
    this.prompt = fit([codec.encodeChat(this.messages, { addGenerationPrompt: true })])[0];
  }

  /** The ids the next reply is sampled after. */
  context(): number[] {
    return [...this.prompt, ...this.response];
  }

  get turns(): number {
    return this.replies.length;
  }

  /** Append a sampled reply (ids up to and including the stop token when it stopped). */
  addReply(ids: number[], logp: number[], entropy: number[]): string {
    const text = this.codec.decode(ids);
    const k = this.replies.length;
    const ended = ids.length > 0 && this.codec.eos.includes(ids[ids.length - 1]);
    this.replies.push({ ids, logp, entropy, ended });
    ids.forEach((id, t) => {
      this.response.push(id);
      this.policy.push(1);
      this.logprobs.push(logp[t]);
      this.entropy.push(entropy[t]);
      this.turnIndex.push(k);
    });
    this.messages.push({ role: 'assistant', content: text });
    return text;
  }

  /** Append the next user turn (context only: policy mask 0). */
  addUser(text: string): void {
    const last = this.replies[this.replies.length - 1];
    if (!last) throw new Error('episode: a user turn follows a reply; add the reply first');
    const before = this.messages.slice(0, -1);
    const { endOfTurn, glue } = turnGlue(this.codec, before, this.messages[this.messages.length - 1].content, text);
    const context = last.ended ? glue : [endOfTurn, ...glue]; // a cut-off reply is closed by the template's token
    this.userStart = this.response.length;
    for (const id of context) {
      this.response.push(id);
      this.policy.push(0);
      this.logprobs.push(0);
      this.entropy.push(0);
      this.turnIndex.push(-1);
    }
    this.messages.push({ role: 'user', content: text });
  }

  private userStart = -1;

  /** Undo the last addUser (the episode ends before that turn: it would not fit the model). */
  dropLastUser(): void {
    if (this.userStart < 0 || this.messages[this.messages.length - 1]?.role !== 'user')
      throw new Error('episode: no user turn to drop');
    for (const a of [this.response, this.policy, this.logprobs, this.entropy, this.turnIndex])
      a.length = this.userStart;
    this.messages.pop();
    this.userStart = -1;
  }
}

/** Rows padded to one length T: ids (pad after the end), attention mask, policy mask, turn index. */
export function padEpisodes(rows: readonly EpisodeRow[], pad: number) {
  const T = Math.max(1, ...rows.map((r) => r.response.length));
  const fill = <X>(xs: readonly X[], v: X): X[] => [...xs, ...Array<X>(T - xs.length).fill(v)];
  return {
    T,
    prompts: rows.map((r) => r.prompt),
    responses: rows.map((r) => fill(r.response, pad)),
    attention: rows.map((r) =>
      fill(
        r.response.map(() => 1),
        0,
      ),
    ),
    policy: rows.map((r) => fill(r.policy, 0)),
    logprobs: rows.map((r) => fill(r.logprobs, 0)),
    turnIndex: rows.map((r) => fill(r.turnIndex, -1)),
  };
}
