// The benchmark CLIs' tables, printed and (with --out DIR) written as they come: DIR/bench.md
// (each table under its title in a code block, as BENCHMARKS.md quotes them) and DIR/bench.json
// (the same header and rows as data, with the run's metadata). Rewritten after every table and,
// for tables filled row by row (`rows`), after every row, so a run cut off by a time limit still
// leaves every row it measured.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { formatTable } from './table';

interface Section {
  id: string;
  title: string;
  header?: string[];
  rows?: (string | number)[][];
  notes: string[];
}

export class BenchReport {
  private readonly sections: Section[] = [];
  private readonly started = Date.now();

  constructor(
    readonly outDir: string | null,
    readonly meta: Record<string, unknown>,
    /** Seconds after which `due` says to skip what is left (null: no limit). */
    readonly budgetS: number | null = null,
  ) {
    if (outDir) mkdirSync(outDir, { recursive: true });
  }

  /** Seconds since the report began. */
  elapsedS(): number {
    return (Date.now() - this.started) / 1000;
  }

  /** Whether section `id` should still run: false (and a note saying so) once the budget is spent. */
  due(id: string): boolean {
    if (this.budgetS === null || this.elapsedS() < this.budgetS) return true;
    this.add({
      id,
      title: `${id}: skipped`,
      notes: [`skipped: ${this.elapsedS().toFixed(0)} s of the ${this.budgetS} s budget were spent`],
    });
    console.log(`\n== ${id}: skipped (time budget of ${this.budgetS} s spent)`);
    return false;
  }

  table(id: string, title: string, header: string[], rows: (string | number)[][], notes: string[] = []): void {
    console.log(`\n${title}\n`);
    console.log(formatTable(header, rows));
    for (const n of notes) console.log(n);
    this.add({ id, title, header, rows, notes });
  }

  /**
   * Appends rows to table `id`, opening it (title, header, notes) at its first rows: its place in
   * the report is where it first got rows. Printed as they come; the whole table again by `close`.
   */
  rows(id: string, title: string, header: string[], rows: (string | number)[][], notes: string[] = []): void {
    let s = this.sections.find((x) => x.id === id && x.header);
    if (!s) {
      s = { id, title, header, rows: [], notes };
      this.sections.push(s);
      console.log(`\n${title} (rows as they come)\n`);
    }
    for (const n of notes) if (!s.notes.includes(n)) s.notes.push(n);
    s.rows!.push(...rows);
    for (const r of rows) console.log(`  ${r.map((c) => (typeof c === 'number' ? c.toPrecision(4) : c)).join(' | ')}`);
    this.flush();
  }

  /** Prints table `id` whole (after its last rows), if it got any. */
  close(id: string): void {
    const s = this.sections.find((x) => x.id === id && x.header);
    if (!s) return;
    console.log(`\n${s.title}\n`);
    console.log(formatTable(s.header!, s.rows!));
    for (const n of s.notes) console.log(n);
  }

  /** A note under the report's metadata (the pre-timing check, a refusal): printed and written at once. */
  note(id: string, title: string, notes: string[]): void {
    console.log(`\n${title}\n`);
    for (const n of notes) console.log(n);
    this.add({ id, title, notes });
  }

  private add(s: Section): void {
    this.sections.push(s);
    this.flush();
  }

  private flush(): void {
    if (!this.outDir) return;
    const md = [
      `# ${String(this.meta.title ?? 'Benchmarks')}`,
      '',
      ...Object.entries(this.meta)
        .filter(([k]) => k !== 'title')
        .map(([k, v]) => `- ${k}: ${String(v)}`),
      '',
    ];
    for (const s of this.sections) {
      md.push(`## ${s.title.replace(/^== /, '')}`, '');
      if (s.header && s.rows) md.push('```', formatTable(s.header, s.rows), '```', '');
      for (const n of s.notes) md.push(n, '');
    }
    writeFileSync(join(this.outDir, 'bench.md'), md.join('\n'));
    writeFileSync(
      join(this.outDir, 'bench.json'),
      JSON.stringify({ ...this.meta, elapsedS: this.elapsedS(), sections: this.sections }, null, 1),
    );
  }
}

/** The value after flag `name` in args (`--out dir`), or null when the flag is absent; a missing value is an error. */
export function flagValue(args: string[], name: string): string | null {
  const i = args.indexOf(name);
  if (i < 0) return null;
  const v = args[i + 1];
  if (v === undefined || v.startsWith('--')) throw new Error(`${name} needs a value`);
  return v;
}
