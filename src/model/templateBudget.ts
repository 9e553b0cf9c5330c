// Budgets of one chat-template render. A template from a model repo runs in the worker: `{% for i in
// range(1000000000) %}` ran out of memory at 2.5 GB (V8 fatal, the tab gone) and two nested
// `range(100000)` loops hung. @huggingface/jinja's Template.render declares its own globals and
// refuses a variable of the same name, so renderWithin runs the parsed template with the library's
// exported Environment and Interpreter and globals of its own, `range` among them counting: all
// the ranges of one render together hold at most MAX_TEMPLATE_RANGE items (a real template loops
// over the messages, a few dozen). What the render writes is bounded too: the messages' own text
// twice over plus TEMPLATE_OVERHEAD_CHARS.
import { Environment, Interpreter, type Template } from '@huggingface/jinja';

/** Most items all of one render's range() calls may produce together. */
export const MAX_TEMPLATE_RANGE = 100_000;
/** Most characters a render may add to its messages' text (system prompts, tool schemas, markup). */
export const TEMPLATE_OVERHEAD_CHARS = 1_000_000;

export class TemplateBudgetError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TemplateBudgetError';
  }
}

/** A fresh budget for one render: its `range`, as Jinja's, counted against MAX_TEMPLATE_RANGE. */
export function templateBudget(): { range: (start: number, stop?: number, step?: number) => number[] } {
  let used = 0;
  return {
    range(start: number, stop?: number, step = 1) {
      if (stop === undefined) [start, stop] = [0, start];
      if (step === 0) throw new Error('range() step must not be zero');
      const n = Math.max(0, Math.ceil((stop - start) / step));
      if (!Number.isFinite(n) || used + n > MAX_TEMPLATE_RANGE)
        throw new TemplateBudgetError(
          `loops over range() asked for ${(used + n).toLocaleString('en-US')} items in one render, over the limit of ${MAX_TEMPLATE_RANGE.toLocaleString('en-US')}`,
        );
      used += n;
      return Array.from({ length: n }, (_, i) => start + i * step);
    },
  };
}

/** Most characters one render may write for these messages. */
export function templateOutputLimit(messages: readonly { content: string }[]): number {
  return messages.reduce((n, m) => n + m.content.length, 0) * 2 + TEMPLATE_OVERHEAD_CHARS;
}

const pad2 = (n: number) => String(n).padStart(2, '0');

/** Jinja's strftime_now as the library gives it (transformers' chat templates ask for "%d %b %Y"). */
function strftimeNow(format: string): string {
  const d = new Date();
  return String(format).replace(/%[YmdbBHM%]/g, (t) => {
    switch (t) {
      case '%Y':
        return String(d.getFullYear());
      case '%m':
        return pad2(d.getMonth() + 1);
      case '%d':
        return pad2(d.getDate());
      case '%b':
        return new Intl.DateTimeFormat(undefined, { month: 'short' }).format(d);
      case '%B':
        return new Intl.DateTimeFormat(undefined, { month: 'long' }).format(d);
      case '%H':
        return pad2(d.getHours());
      case '%M':
        return pad2(d.getMinutes());
      default:
        return '%';
    }
  });
}

/** Template.render with the counted range (the same globals otherwise). */
export function renderWithin(
  template: Template,
  budget: ReturnType<typeof templateBudget>,
  items: Record<string, unknown>,
): string {
  const env = new Environment();
  const globals: Record<string, unknown> = {
    false: false,
    true: true,
    none: null,
    False: false,
    True: true,
    None: null,
    raise_exception: (message: unknown) => {
      throw new Error(String(message));
    },
    range: budget.range,
    strftime_now: strftimeNow,
  };
  for (const [k, v] of Object.entries({ ...globals, ...items })) env.set(k, v);
  return new Interpreter(env).run(template.parsed).value as string;
}
