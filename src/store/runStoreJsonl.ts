// Reading a recorded run: a JSONL file with one StepReport per line (what the CLI writes).
// Every line is checked before anything is loaded, so a bad file changes nothing on screen; the
// error names the file, the line and the field.
import { brief, briefText, clampMessage, kindOf } from '../contract/brief';
import type { Message, RolloutSample, StepReport, TokenTrace } from '../contract/report';
import { stepProblem } from '../contract/reportRules';

export class ReplayError extends Error {
  constructor(
    readonly line: number,
    readonly detail: string,
    readonly file?: string,
  ) {
    super(clampMessage(`${file ? `${briefText(file, 200)}, ` : ''}line ${line}: ${detail}`));
    this.name = 'ReplayError';
  }
}

class FieldError extends Error {}

const ROLES = new Set(['system', 'attacker', 'user', 'defender', 'assistant', 'monitor', 'judge']);

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function str(o: Record<string, unknown>, key: string, path: string): string {
  if (typeof o[key] !== 'string') throw new FieldError(`${path}${key} is ${describe(o[key])}, expected a string`);
  return o[key] as string;
}

function num(o: Record<string, unknown>, key: string, path: string): number {
  const v = o[key];
  // JSON has no NaN: writers emit null for it.
  if (v === null) return NaN;
  if (typeof v !== 'number') throw new FieldError(`${path}${key} is ${describe(v)}, expected a number`);
  return v;
}

const describe = kindOf;

function numArray(v: unknown, path: string): number[] {
  if (!Array.isArray(v)) throw new FieldError(`${path} is ${describe(v)}, expected an array of numbers`);
  return v.map((x, i) => {
    if (x === null) return NaN;
    if (typeof x !== 'number') throw new FieldError(`${path}[${i}] is ${describe(x)}, expected a number`);
    return x;
  });
}

function checkTokens(v: unknown, path: string): TokenTrace {
  if (!isObj(v)) throw new FieldError(`${path} is ${describe(v)}, expected an object`);
  const pieces = v.pieces;
  if (!Array.isArray(pieces) || pieces.some((p) => typeof p !== 'string'))
    throw new FieldError(`${path}.pieces must be an array of strings`);
  const n = pieces.length;
  const ids = v.ids === undefined ? pieces.map(() => -1) : numArray(v.ids, `${path}.ids`);
  const logp = numArray(v.logp, `${path}.logp`);
  const entropy = numArray(v.entropy, `${path}.entropy`);
  for (const [name, arr] of [
    ['ids', ids],
    ['logp', logp],
    ['entropy', entropy],
  ] as const) {
    if (arr.length !== n) throw new FieldError(`${path}.${name} has ${arr.length} entries but pieces has ${n}`);
  }
  const out: TokenTrace = { ids, pieces: pieces as string[], logp, entropy };
  if (v.top !== undefined) {
    if (!Array.isArray(v.top)) throw new FieldError(`${path}.top is ${describe(v.top)}, expected an array`);
    out.top = v.top.map((alts, i) => {
      if (!Array.isArray(alts)) throw new FieldError(`${path}.top[${i}] is ${describe(alts)}, expected an array`);
      return alts.map((a, j) => {
        if (!isObj(a)) throw new FieldError(`${path}.top[${i}][${j}] is ${describe(a)}, expected an object`);
        return { piece: str(a, 'piece', `${path}.top[${i}][${j}].`), logp: num(a, 'logp', `${path}.top[${i}][${j}].`) };
      });
    });
  }
  return out;
}

function checkMessage(v: unknown, path: string): Message {
  if (!isObj(v)) throw new FieldError(`${path} is ${describe(v)}, expected an object`);
  const role = str(v, 'role', `${path}.`);
  if (!ROLES.has(role)) throw new FieldError(`${path}.role ${brief(role)} is not one of ${[...ROLES].join(', ')}`);
  const msg: Message = { role: role as Message['role'], text: str(v, 'text', `${path}.`) };
  if (v.tokens !== undefined) msg.tokens = checkTokens(v.tokens, `${path}.tokens`);
  if (v.turnScore !== undefined) msg.turnScore = num(v, 'turnScore', `${path}.`);
  return msg;
}

function checkSample(v: unknown, path: string): RolloutSample {
  if (!isObj(v)) throw new FieldError(`${path} is ${describe(v)}, expected an object`);
  const p = `${path}.`;
  if (!Array.isArray(v.messages)) throw new FieldError(`${p}messages is ${describe(v.messages)}, expected an array`);
  const messages = v.messages.map((m, i) => checkMessage(m, `${p}messages[${i}]`));
  const verdict = v.verdict;
  if (!isObj(verdict)) throw new FieldError(`${p}verdict is ${describe(verdict)}, expected an object`);
  const vp = `${p}verdict.`;
  if (typeof verdict.refused !== 'boolean')
    throw new FieldError(`${vp}refused is ${describe(verdict.refused)}, expected true or false`);
  if (typeof verdict.success !== 'boolean')
    throw new FieldError(`${vp}success is ${describe(verdict.success)}, expected true or false`);
  const terms = v.terms === undefined ? {} : v.terms;
  if (!isObj(terms)) throw new FieldError(`${p}terms is ${describe(terms)}, expected an object`);
  for (const [k, t] of Object.entries(terms)) {
    if (t !== null && t !== undefined && typeof t !== 'number')
      throw new FieldError(`${p}terms.${briefText(k)} is ${describe(t)}, expected a number`);
  }
  return {
    ...(v as unknown as RolloutSample),
    id: v.id === undefined ? `${path}` : str(v, 'id', p),
    promptKey: str(v, 'promptKey', p),
    group: v.group === undefined ? 0 : num(v, 'group', p),
    messages,
    verdict: {
      ...(verdict as unknown as RolloutSample['verdict']),
      label: str(verdict, 'label', vp),
      unsafe: num(verdict, 'unsafe', vp),
    },
    reward: num(v, 'reward', p),
    terms: terms as RolloutSample['terms'],
  };
}

/** Checks one parsed line against the StepReport shape; throws FieldError naming the field. */
export function checkStepReport(v: unknown): StepReport {
  if (!isObj(v)) throw new FieldError(`the line is ${describe(v)}, expected a StepReport object`);
  const runId = str(v, 'runId', '');
  if (runId === '') throw new FieldError('runId is empty');
  // The same rule as the storage layer's reader: steps are non-negative integers.
  const stepBad = stepProblem(v.step);
  if (stepBad) throw new FieldError(stepBad);
  const step = v.step as number;
  if (!isObj(v.metrics)) throw new FieldError(`metrics is ${describe(v.metrics)}, expected an object of numbers`);
  const metrics: Record<string, number> = {};
  for (const [k, m] of Object.entries(v.metrics)) {
    if (m !== null && typeof m !== 'number')
      throw new FieldError(`metrics[${brief(k)}] is ${describe(m)}, expected a number`);
    metrics[k] = m === null ? NaN : m;
  }
  const samples = v.samples === undefined ? [] : v.samples;
  if (!Array.isArray(samples)) throw new FieldError(`samples is ${describe(samples)}, expected an array`);
  const t = isObj(v.timings) ? v.timings : {};
  const ms = (k: string) => (typeof t[k] === 'number' ? (t[k] as number) : 0);
  return {
    runId,
    recipe: v.recipe === undefined ? 'unknown' : str(v, 'recipe', ''),
    step,
    time: typeof v.time === 'number' ? v.time : 0,
    ...(v.phase !== undefined ? { phase: str(v, 'phase', '') } : {}),
    metrics,
    samples: samples.map((s, i) => checkSample(s, `samples[${i}]`)),
    timings: {
      rollout_ms: ms('rollout_ms'),
      score_ms: ms('score_ms'),
      learn_ms: ms('learn_ms'),
      total_ms: ms('total_ms'),
    },
  };
}

/** Parses a JSONL log of StepReports. Blank lines are skipped; the first bad line throws a
 *  ReplayError with its 1-based line number. */
export function parseReportsJsonl(text: string, file?: string): StepReport[] {
  const out: StepReport[] = [];
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    if (line === '') continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch (err) {
      throw new ReplayError(i + 1, `not valid JSON (${briefText((err as Error).message, 120)})`, file);
    }
    try {
      out.push(checkStepReport(parsed));
    } catch (err) {
      if (err instanceof FieldError) throw new ReplayError(i + 1, err.message, file);
      throw err;
    }
  }
  if (out.length === 0) throw new ReplayError(1, 'the file holds no StepReport lines', file);
  return out;
}
