// A grader that answers a chat in text (a rubric judge such as StrongREJECT's, where a harm
// classifier's single score is not enough), behind one interface, two ways:
//   local  a model loaded through the model layer (a sandbox, folder, URL or hub model) read through
//          its own chat template, decoding greedily; only the generated ids are decoded
//   http   an OpenAI-compatible chat-completions server (vLLM, llama.cpp, TGI serve one):
//          POST {model, messages, temperature 0, max_tokens} -> choices[0].message.content, with the
//          http judge's timeouts and retries (http.ts postJson)
import type { ChatMessage } from '../model/chat';
import { generate } from '../model/generate';
import type { LlamaModel } from '../model/llama';
import { malformedReply, postJson, type PostOptions } from './http';
import { JudgeError } from './types';

export interface TextGrader {
  readonly name: string;
  /** One answer per chat, in order. Rejects with a JudgeError naming the grader on failure. */
  complete(chats: readonly (readonly ChatMessage[])[], opts?: { signal?: AbortSignal }): Promise<string[]>;
  dispose?(): void;
}

/** What the local grader needs of a loaded model: the weights and its chat codec. */
export interface GraderModel {
  model: LlamaModel;
  codec: {
    encodeChat(messages: ChatMessage[], opts: { addGenerationPrompt: boolean }): number[];
    decode(ids: number[]): string;
    readonly eos: readonly number[];
    readonly pad: number;
  };
}

/**
 * A local model as a text grader: each chat through the model's chat template, `maxNewTokens`
 * greedy tokens, `batch` chats per generate call. A chat that cannot fit the model's positions
 * with its answer fails with one error naming the grader (a rubric is never cut).
 */
export function createChatModelGrader(
  m: GraderModel,
  o: { name: string; maxNewTokens: number; batch?: number },
): TextGrader {
  const batch = Math.max(1, Math.floor(o.batch ?? 8));
  const maxPos = m.model.config.maxPositionEmbeddings;
  return {
    name: o.name,
    async complete(chats, opts) {
      const ids = chats.map((c) => m.codec.encodeChat([...c], { addGenerationPrompt: true }));
      ids.forEach((p, i) => {
        if (p.length + o.maxNewTokens > maxPos)
          throw new JudgeError(
            o.name,
            `chat ${i} needs ${p.length} prompt tokens + ${o.maxNewTokens} answer tokens, more than the grader model's ${maxPos} positions`,
          );
      });
      const out: string[] = [];
      for (let s = 0; s < ids.length; s += batch) {
        opts?.signal?.throwIfAborted();
        const g = await generate(m.model, ids.slice(s, s + batch), {
          maxNewTokens: o.maxNewTokens,
          greedy: true,
          stopTokens: [...m.codec.eos],
          padTokenId: m.codec.pad,
        });
        g.tokens.forEach((t, b) => {
          const n = g.lengths[b];
          const stopped = n > 0 && m.codec.eos.includes(t[n - 1]);
          out.push(m.codec.decode(t.slice(0, stopped ? n - 1 : n)));
        });
      }
      return out;
    },
  };
}

export interface ChatCompletionsOptions extends PostOptions {
  /** Base URL (".../v1/chat/completions" is appended unless it ends in "/chat/completions"). */
  readonly url: string;
  /** The `model` field of the request (the server's model name). Default "default". */
  readonly model?: string;
  readonly maxTokens: number;
  /** Requests in flight at once (default 4). */
  readonly concurrency?: number;
}

/** The chat-completions endpoint of a base URL or a full endpoint. */
export function chatCompletionsEndpoint(url: string): string {
  const u = url.replace(/\/+$/, '');
  if (/\/chat\/completions$/.test(u)) return u;
  return /\/v1$/.test(u) ? `${u}/chat/completions` : `${u}/v1/chat/completions`;
}

/** An OpenAI-compatible chat-completions server as a text grader (temperature 0). */
export function createChatCompletionsGrader(o: ChatCompletionsOptions): TextGrader {
  const endpoint = chatCompletionsEndpoint(o.url);
  const name = 'http-grader';
  const parse = (text: string): string => {
    let data: unknown;
    try {
      data = JSON.parse(text);
    } catch {
      throw malformedReply(endpoint, 'not JSON', '{"choices": [{"message": {"content": "..."}}]}', text);
    }
    const content = (data as { choices?: { message?: { content?: unknown } }[] } | null)?.choices?.[0]?.message
      ?.content;
    if (typeof content !== 'string')
      throw malformedReply(
        endpoint,
        'no choices[0].message.content string',
        '{"choices": [{"message": {"content": "..."}}]}',
        text,
      );
    return content;
  };
  return {
    name,
    async complete(chats, opts) {
      const out: string[] = new Array(chats.length);
      let next = 0;
      const worker = async () => {
        while (next < chats.length) {
          const i = next++;
          const body = {
            model: o.model ?? 'default',
            messages: chats[i].map((m) => ({ role: m.role, content: m.content })),
            temperature: 0,
            max_tokens: o.maxTokens,
          };
          out[i] = await postJson(name, endpoint, body, o, parse, opts?.signal);
        }
      };
      await Promise.all(Array.from({ length: Math.min(chats.length, Math.max(1, o.concurrency ?? 4)) }, worker));
      return out;
    },
  };
}
