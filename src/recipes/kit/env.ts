// Recipe environments: model references -> model folders -> (model, codec). The browser worker
// uses urlRecipeEnv (sandbox names under the site's /models/); the CLI builds the same thing on a
// folder reader (src/cli/recipe-env.ts); tests inject stand-ins through createRecipeEnv.
import { createHttpJudge } from '../../judges/http';
import { createLlmGuardJudge } from '../../judges/llmGuard';
import { createLlamaGuard3Judge, guardCategories } from '../../judges/llamaGuard3';
import { createRulesJudge } from '../../judges/rules';
import type { Judge } from '../../judges/types';
import { applyChatTemplate, CHAT_TEMPLATE_FILE, resolveChatTemplate } from '../../model/chat';
import { hubSource } from '../../model/hub';
import { hubRefOf } from '../../contract/hubRef';
import { looksLikeSandboxName, unknownModelError } from '../../contract/sandboxModels';
import { briefName } from '../../contract/brief';
import { disposeLlama } from '../../model/llama';
import { loadModel, type ModelFolder } from '../../model/load';
import { urlSource } from '../../model/sources';
import { createTokenizer, type TextTokenizer } from '../../model/tokenizer';
import type { ChatTemplate } from '../../model/chat';
import type { ChatCodec, JudgeOptions, LoadedModel, LoadModelRefOptions, RecipeEnv } from './types';
import { weightQuantizer } from '../../model/quant';

/** The built-in judges by name. */
export const BUILTIN_JUDGES: Record<string, () => Judge> = {
  rules: () => createRulesJudge(),
  'rules-partial': () => createRulesJudge({ partialCredit: true }),
};

/** A sandbox model name (`defender`), as opposed to a path or URL. */
export function isSandboxName(ref: string): boolean {
  return looksLikeSandboxName(ref);
}

/**
 * Tokens that close a turn in the chat formats the lab renders (ChatML's, Gemma's). A reply stops
 * there even when the files' eos names another token: a Gemma folder whose tokenizer_config says
 * `<eos>` and whose generation_config does not list 106 went on writing past `<end_of_turn>`.
 */
export const TURN_END_TOKENS = ['<|im_end|>', '<end_of_turn>'] as const;

/** The codec of a real tokenizer + chat template. */
export function tokenizerCodec(tok: TextTokenizer, template: ChatTemplate): ChatCodec {
  const eos = [...tok.special.eos];
  for (const token of TURN_END_TOKENS) {
    const id = tok.tokenToId(token);
    if (id !== undefined && !eos.includes(id)) eos.push(id);
  }
  return {
    label: tok.label,
    encodeChat: (messages, opts) =>
      applyChatTemplate(tok, template, messages, { addGenerationPrompt: opts.addGenerationPrompt }).ids,
    encodeText: (text) => tok.encode(text, { addSpecialTokens: false }),
    decode: (ids) => tok.decode(ids, { skipSpecialTokens: true }),
    pieces: (ids) => tok.pieces(ids),
    eos,
    pad: tok.special.pad ?? eos[0] ?? 0,
  };
}

/** The tokenizer files of a Hugging Face-layout folder, parsed (tokenizer.json required). */
async function tokenizerFiles(folder: ModelFolder, ref: string) {
  const json = async (name: string, required: boolean): Promise<unknown> => {
    if (!(await folder.has(name))) {
      if (required)
        throw new Error(`${folder.label.replace(/\/+$/, '')}/${name}: not found (model "${ref}" needs a tokenizer)`);
      return undefined;
    }
    const text = await folder.getText(name);
    try {
      return JSON.parse(text);
    } catch (e) {
      throw new Error(`${folder.label.replace(/\/+$/, '')}/${name}: not valid JSON: ${(e as Error).message}`);
    }
  };
  const tokenizerJson = await json('tokenizer.json', true);
  const tokenizerConfig = await json('tokenizer_config.json', false);
  const modelConfig = await json('config.json', false);
  // Several eos ids (Qwen2.5: <|im_end|> and <|endoftext|>) are listed only here.
  const generationConfig = await json('generation_config.json', false);
  const chatTemplateJinja = (await folder.has(CHAT_TEMPLATE_FILE))
    ? await folder.getText(CHAT_TEMPLATE_FILE)
    : undefined;
  return { tokenizerJson, tokenizerConfig, modelConfig, generationConfig, chatTemplateJinja };
}

type TokenizerFiles = Awaited<ReturnType<typeof tokenizerFiles>>;

/** A folder's tokenizer, its chat template and the codec the recipes use. */
export interface ChatTokenizer {
  tokenizer: TextTokenizer;
  template: ChatTemplate;
  codec: ChatCodec;
}

function chatTokenizerOf(f: TokenizerFiles, label: string): ChatTokenizer {
  const tokenizer = createTokenizer(f.tokenizerJson, f.tokenizerConfig ?? {}, {
    label,
    modelConfig: f.modelConfig,
    generationConfig: f.generationConfig,
  });
  const template = resolveChatTemplate({
    tokenizerConfig: f.tokenizerConfig,
    chatTemplateJinja: f.chatTemplateJinja,
    model: label,
  });
  return { tokenizer, template, codec: tokenizerCodec(tokenizer, template) };
}

/** The tokenizer files of a Hugging Face-layout folder, loaded as a model load reads them. */
export async function loadChatTokenizer(folder: ModelFolder, ref: string): Promise<ChatTokenizer> {
  return chatTokenizerOf(await tokenizerFiles(folder, ref), folder.label);
}

/** The codec (tokenizer + chat template) of a Hugging Face-layout folder, without its weights. */
export async function loadChatCodec(folder: ModelFolder, ref: string): Promise<ChatCodec> {
  return (await loadChatTokenizer(folder, ref)).codec;
}

/** Loads model + tokenizer (tokenizer.json required) + chat template from a Hugging Face-layout folder. */
export async function loadChatModel(
  folder: ModelFolder,
  ref: string,
  opts: LoadModelRefOptions = {},
): Promise<LoadedModel> {
  const files = await tokenizerFiles(folder, ref);
  const weights = opts.weights ?? 'f32';
  const model = await loadModel(folder, { quantize: weightQuantizer(weights, folder.label) });
  try {
    return {
      ref,
      model,
      codec: chatTokenizerOf(files, folder.label).codec,
      weights,
      dispose: () => disposeLlama(model),
    };
  } catch (e) {
    disposeLlama(model);
    throw e;
  }
}

/** A judge built on first use (its model loads then), so recipes that never score never pay for it. */
function lazyJudge(name: string, start: () => Promise<{ judge: Judge; free(): void }>): Judge {
  let inner: Promise<{ judge: Judge; free(): void }> | null = null;
  return {
    name,
    score: async (items, o) => (await (inner ??= start())).judge.score(items, o),
    dispose: () => {
      void inner?.then(
        (x) => x.free(),
        () => undefined,
      );
      inner = null;
    },
  };
}

/** `classifier`: the built-in guard model (sandbox `judge`) read as an LLM guard. */
export function classifierJudge(folder: (ref: string) => ModelFolder, ref = 'judge'): Judge {
  return lazyJudge('classifier', async () => {
    const f = folder(ref);
    const tokenizerConfig = JSON.parse(await f.getText('tokenizer_config.json'));
    const tokenizer = createTokenizer(JSON.parse(await f.getText('tokenizer.json')), tokenizerConfig, {
      label: f.label,
    });
    const template = resolveChatTemplate({ tokenizerConfig, model: f.label });
    const model = await loadModel(f);
    return {
      judge: createLlmGuardJudge({ model, tokenizer, template, name: 'classifier' }),
      free: () => disposeLlama(model),
    };
  });
}

/**
 * `llm-guard`: a Llama Guard 3 checkpoint (the config's `guard` field, in its weight format)
 * asked in its own prompt format. Loaded on first use; the categories are checked at once.
 */
export function llmGuardJudge(
  load: (ref: string, o: LoadModelRefOptions) => Promise<LoadedModel>,
  g: NonNullable<JudgeOptions['guard']> | undefined,
): Judge {
  if (!g || g.ref.trim() === '')
    throw new Error(
      'judge "llm-guard" needs a guard model: set the field "guard" (a Llama Guard 3 checkpoint, e.g. meta-llama/Llama-Guard-3-1B)',
    );
  const categories = guardCategories(g.categories, g.customCategories);
  return lazyJudge('llm-guard', async () => {
    const m = await load(g.ref, { weights: g.weights });
    const c = m.codec;
    try {
      return {
        judge: createLlamaGuard3Judge(
          { model: m.model, encode: c.encodeText, decode: c.decode, eos: c.eos, pad: c.pad, label: c.label },
          { categories, verdict: g.verdict },
        ),
        free: () => m.dispose(),
      };
    } catch (e) {
      m.dispose();
      throw e;
    }
  });
}

export interface RecipeEnvOptions {
  /** Model reference -> folder reader. */
  folder(ref: string): ModelFolder;
  /** Extra or replacement judges by name. */
  judges?: Record<string, () => Judge>;
  readText?(ref: string): Promise<string>;
  backend?: string;
  /** Replace how a folder becomes a model (tests: a fixture without a tokenizer + a stand-in codec). */
  load?(folder: ModelFolder, ref: string, opts?: LoadModelRefOptions): Promise<LoadedModel>;
}

export function createRecipeEnv(opts: RecipeEnvOptions): RecipeEnv {
  const judges: Record<string, () => Judge> = {
    ...BUILTIN_JUDGES,
    classifier: () => classifierJudge(opts.folder),
    ...opts.judges,
  };
  const load = opts.load ?? loadChatModel;
  const loadRef = (ref: string, o?: LoadModelRefOptions) => load(opts.folder(ref), ref, o);
  // Judges built from the config's judge fields (judgeFields.ts); an env's own judges replace them.
  const configured: Record<string, (o: JudgeOptions) => Judge> = {
    'llm-guard': (o) => llmGuardJudge(loadRef, o.guard),
    http: (o) => {
      if (!o.url?.trim()) throw new Error('judge "http" needs a scorer: set the field "judgeUrl"');
      return createHttpJudge({ url: o.url, text: o.urlText ?? 'response' });
    },
  };
  return {
    loadModel: loadRef,
    judge: (name, o = {}) => {
      if (Object.hasOwn(judges, name)) return judges[name]();
      if (Object.hasOwn(configured, name)) return configured[name](o);
      throw new Error(
        `unknown judge "${name}" (judges: ${[...Object.keys(judges), ...Object.keys(configured)].join(', ')})`,
      );
    },
    readText: opts.readText,
    backend: opts.backend,
  };
}

/**
 * A hub model id ("owner/name" or "owner/name@revision") as a folder on `endpoint` (default the
 * hub), or null when `ref` is not one (a URL, a path starting with . or /, a sandbox name).
 */
export function hubFolder(ref: string, endpoint?: string): ModelFolder | null {
  // The setup form's hub picker writes a hub folder URL: it loads as the hub id it names (through
  // a mirror when one is set, with the hub's own messages: "offline?", "no such repository").
  const id = hubRefOf(ref);
  return id && hubSource(id.id, { revision: id.revision, endpoint });
}

/** Browser env: sandbox names under `modelsBase` (default the site's models/ folder), hub ids on `hubEndpoint`, anything else a URL. */
export function urlRecipeEnv(
  opts: {
    modelsBase?: string;
    hubEndpoint?: string;
    judges?: Record<string, () => Judge>;
    backend?: string;
    load?: RecipeEnvOptions['load'];
  } = {},
): RecipeEnv {
  const base = (opts.modelsBase ?? 'models/').replace(/\/?$/, '/');
  return createRecipeEnv({
    folder: (ref) => {
      // The site serves only the sandbox models; any other bare name would fetch its index.html.
      const unknown = unknownModelError(ref);
      if (unknown) throw new Error(unknown);
      return isSandboxName(ref) ? urlSource(`${base}${ref}/`) : (hubFolder(ref, opts.hubEndpoint) ?? urlSource(ref));
    },
    judges: opts.judges,
    backend: opts.backend,
    load: opts.load,
    readText: async (ref) => {
      // Anything else was fetched from the lab's own server, which answers with its index.html,
      // and read as a CSV ("no usable row"): say what a dataset value may be instead.
      if (!/^https?:\/\//i.test(ref))
        throw new Error(
          `dataset ${briefName(ref)} is neither an upload (upload:<file name>) nor an http(s) URL; "sandbox" is the built-in data`,
        );
      const res = await fetch(ref);
      if (!res.ok) throw new Error(`${ref}: HTTP ${res.status}`);
      return res.text();
    },
  });
}
