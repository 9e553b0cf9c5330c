// The shipped dry_run.py against the stand-ins of Hydra, veRL, transformers and pyarrow
// (dev/export/dry_run_standins: facts from veRL's source as fixtures, token counts from the lab's own
// tokenizer, rows decoded by hyparquet): every clean export passes; each of eight broken jobs fails
// with veRL's own message, the file and line it comes from (dev/fixtures/verl/verl-startup.json).
// Without any of those libraries (python3 -S) it says what it left out and still checks run.sh and
// the batches.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parquetReadObjects } from 'hyparquet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveChatTemplate, type ChatMessage } from '../model/chat';
import { createTokenizer } from '../model/tokenizer';
import { EXPORT_RECIPES, exportVerl, type VerlExport } from './exports';
import { getRecipe } from './registry';

const FIX = resolve('dev/fixtures/verl');
const STANDINS = resolve('dev/export/dry_run_standins');
interface Point {
  file: string;
  line: number;
  source: string;
}
const STARTUP = JSON.parse(readFileSync(join(FIX, 'verl-startup.json'), 'utf8')) as {
  source: { commit: string };
  points: Record<string, Point>;
};
const DRY_RUN = readFileSync(resolve('src/export/verl/python/dry_run.py'), 'utf8');

/** veRL's message of a recorded point as a pattern: its f-string with each {field} as any text. */
function verlMessage(id: string): RegExp {
  const f = /f"([^"]*)"/.exec(STARTUP.points[id].source)![1];
  const parts = f.split(/\{[^}]*\}/).map((s) => s.replace(/[.*+?^$()|[\]\\]/g, '\\$&'));
  return new RegExp(parts.join('.*?'));
}
const where = (id: string) => `${STARTUP.points[id].file}:${STARTUP.points[id].line}`;

const MODELS = resolve('public/models');
const modelFiles = (name: string) =>
  Object.fromEntries(
    readdirSync(join(MODELS, name)).map((f) => [f, new Uint8Array(readFileSync(join(MODELS, name, f)))]),
  );

/** An RL export with its sandbox model in the zip (the tokenizer the dry run measures with). */
function exported(recipe: string, config: Record<string, unknown> = {}): VerlExport {
  const model = String(getRecipe(recipe).schema[EXPORT_RECIPES[recipe]?.modelField ?? 'attacker'].default);
  return exportVerl({ recipe: getRecipe(recipe), config, seed: 1, steps: 50, modelFiles: modelFiles(model) });
}

/** Token counts of each chat prompt, by the lab's tokenizer and chat template (what AutoTokenizer's stand-in answers). */
function tokenCounts(dir: string, prompts: ChatMessage[][]): Record<string, number> {
  const read = (f: string) => JSON.parse(readFileSync(join(dir, f), 'utf8')) as unknown;
  const cfg = read('tokenizer_config.json');
  const tok = createTokenizer(read('tokenizer.json'), cfg);
  const template = resolveChatTemplate({ tokenizerConfig: cfg, model: dir });
  const key = (m: ChatMessage[]) => m.map((x) => `${x.role}\x1e${x.content}`).join('\x1f');
  return Object.fromEntries(
    prompts.map((p) => [
      key(p),
      tok.encode(template.render(p, { addGenerationPrompt: true, specialTokens: tok.specialTokens }), {
        addSpecialTokens: false,
      }).length,
    ]),
  );
}

interface Result {
  code: number;
  out: string;
}

/** Writes the export to a folder and runs its dry_run.py (stand-ins on PYTHONPATH unless `bare`). */
async function dryRun(files: Record<string, string | Uint8Array>, args: string[], bare = false): Promise<Result> {
  const dir = mkdtempSync(join(tmpdir(), 'verl-dry-'));
  const prompts: ChatMessage[][] = [];
  for (const [p, t] of Object.entries(files)) {
    mkdirSync(join(dir, p, '..'), { recursive: true });
    writeFileSync(join(dir, p), t);
    if (p.endsWith('.parquet')) {
      const b = t as Uint8Array;
      const rows = await parquetReadObjects({
        file: b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer,
      });
      writeFileSync(join(dir, `${p}.rows.json`), JSON.stringify(rows));
      for (const r of rows) {
        if (Array.isArray(r.prompt)) prompts.push(r.prompt as ChatMessage[]);
        // Multi-turn: each user turn the interaction plays, templated alone as the agent loop does.
        const episode = (r.extra_info as { interaction_kwargs?: { episode: string } } | undefined)?.interaction_kwargs
          ?.episode;
        if (episode)
          for (const u of (JSON.parse(episode) as { turns: string[] }).turns)
            prompts.push([{ role: 'user', content: u }]);
      }
    }
  }
  const tokens: Record<string, Record<string, number>> = {};
  for (const m of readdirSync(join(dir, 'models'), { withFileTypes: true }))
    if (m.isDirectory()) tokens[m.name] = tokenCounts(join(dir, 'models', m.name), prompts);
  writeFileSync(join(dir, 'tokens.json'), JSON.stringify(tokens));
  const env = bare
    ? { PATH: process.env.PATH }
    : {
        ...process.env,
        PYTHONPATH: STANDINS,
        SPARRING_STANDIN_FIXTURES: FIX,
        SPARRING_STANDIN_TOKENS: join(dir, 'tokens.json'),
        SPARRING_DEFENDER_URL: url,
        SPARRING_MONITOR_URL: url,
      };
  const argv = bare ? ['-S', join(dir, 'dry_run.py'), ...args] : [join(dir, 'dry_run.py'), ...args];
  return new Promise((res) =>
    execFile('/usr/bin/python3', argv, { env, maxBuffer: 1 << 24, cwd: tmpdir() }, (err, out, stderr) =>
      res({ code: err ? ((err as { code?: number }).code ?? -1) : 0, out: out + stderr }),
    ),
  );
}

// A stand-in OpenAI-compatible server for the frozen models reward.py asks (attack, rlhf, minmax).
let server: Server;
let url = '';
beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ choices: [{ message: { content: 'CORRECT. [ANSWER:A] Sure.' } }] }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const edit = (ex: VerlExport, file: string, from: RegExp, to: string) => {
  const text = ex.files[file] as string;
  const changed = text.replace(from, to);
  expect(changed, `${file}: ${String(from)}`).not.toBe(text);
  return { ...ex.files, [file]: changed };
};

describe('dry_run.py: the contract points it quotes', () => {
  it("its table of veRL's files and lines is the fixture's, read from veRL b178a3c's source", () => {
    expect(STARTUP.source.commit).toBe('b178a3cd56f58b2d502255daba591e92833930a7');
    const block = /\nAT = \{\n([\s\S]*?)\n\}/.exec(DRY_RUN)![1];
    const table = [...block.matchAll(/^ {4}"(\w+)": "([^"]+)",$/gm)];
    expect(table.length).toBeGreaterThanOrEqual(12);
    for (const [, id, at] of table) expect(at, id).toBe(where(id));
  });
});

describe('dry_run.py passes every clean export', () => {
  for (const r of [...Object.keys(EXPORT_RECIPES), 'attacker-sft'])
    it(`${r}: at every GPU count the README offers`, async () => {
      const ex = exported(r);
      const readme = ex.files['README.md'] as string;
      const offered = /python3 dry_run\.py --gpus ([0-9,]+)/.exec(readme)![1];
      const { code, out } = await dryRun(ex.files, ['--gpus', offered]);
      expect(out, r).not.toMatch(/^FAIL/m);
      expect(code, out).toBe(0);
      if (r === 'attacker-sft') {
        expect(out).toMatch(/dry run: SFT config OK/);
        // fsdp_sft_trainer.py:350-351: steps = batches per epoch x total_epochs.
        const rows = getRecipe('attacker-sft').schema.dataSize.default as number;
        const o = ex.overrides;
        const steps = Math.floor(rows / (o['data.train_batch_size'] as number)) * (o['trainer.total_epochs'] as number);
        expect(out).toContain(`ok    veRL's SFT dataset: ${rows} rows`);
        expect(out).toContain(`ok    veRL's wsd scheduler over ${steps} steps`);
        return;
      }
      expect(out).toMatch(/dry run: veRL config OK/);
      expect(out).toMatch(/run\.sh: python3 -m verl\.trainer\.main_ppo --config-name=verl_config/);
      expect(out).toMatch(/converted with veRL's omega_conf_to_dataclass: model, actor, rollout, algorithm/);
      for (const g of offered.split(',')) expect(out).toMatch(new RegExp(`ok {4}batches at ${g} GPU\\(s\\) per node`));
      expect(out).toMatch(/data\/train\.parquet: \d+ prompts, the longest \d+ tokens of data\.max_prompt_length \d+/);
      expect(out).toMatch(
        /reward\.py: \d+ results \(every row x refusal, empty, typical reply; one (keyword|batch) call per/,
      );
    });
});

describe("dry_run.py fails each broken job with veRL's message", () => {
  const all = ['--gpus', '1,2,4,8'];

  it('1. reward.py drops a key on some rows: the KeyError of the agent loop', async () => {
    const ex = exported('redteam');
    const files = {
      ...ex.files,
      'reward.py': `${ex.files['reward.py'] as string}
_score = compute_score
def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    out = _score(data_source=data_source, solution_str=solution_str, ground_truth=ground_truth, extra_info=extra_info)
    if extra_info["index"] % 4 == 3:
        out.pop(sorted(k for k in out if k != "score")[0])
    return out
`,
    };
    const { code, out } = await dryRun(files, all);
    expect(code).toBe(1);
    expect(out).toMatch(/FAIL .*raises KeyError: '\w+'/);
    expect(out).toContain(where('reward_extra_key_error'));
    expect(out).toContain(STARTUP.points.reward_extra_key_error.source);
  });

  it('2. max_prompt_length 24: the rows RLHFDataset would drop, counted', async () => {
    const ex = exported('redteam');
    const { code, out } = await dryRun(
      edit(ex, 'verl_config.yaml', /max_prompt_length: \d+/, 'max_prompt_length: 24'),
      all,
    );
    expect(code).toBe(1);
    const m =
      /data\/train\.parquet: (\d+) of (\d+) prompts are longer than data\.max_prompt_length 24 .*RLHFDataset keeps (\d+) rows/.exec(
        out,
      );
    expect(m, out).not.toBeNull();
    expect(Number(m![3])).toBe(Number(m![2]) - Number(m![1]));
    expect(Number(m![1])).toBeGreaterThan(0);
    expect(out).toContain(where('prompt_filter'));
  });

  it("3. ppo_micro_batch_size_per_gpu 3: the FSDP worker's divisibility assertion, at each GPU count", async () => {
    const ex = exported('redteam');
    const { code, out } = await dryRun(
      edit(ex, 'verl_config.yaml', /(\n {4}ppo_micro_batch_size_per_gpu: )\d+/, '$13'),
      all,
    );
    expect(code).toBe(1);
    const o = ex.overrides;
    const samples =
      (o['actor_rollout_ref.actor.ppo_mini_batch_size'] as number) * (o['actor_rollout_ref.rollout.n'] as number);
    expect(out).toMatch(verlMessage('micro_divides_mini'));
    expect(out).toContain(
      `at 1 GPU(s) per node: actor: normalized ppo_mini_batch_size ${samples} should be divisible by ppo_micro_batch_size_per_gpu 3 (${where('micro_divides_mini')})`,
    );
  });

  it('4. a wrong --config-name in run.sh: Hydra cannot find it', async () => {
    const ex = exported('redteam');
    const { code, out } = await dryRun(edit(ex, 'run.sh', /--config-name=verl_config/, '--config-name=verl_confg'), []);
    expect(code).toBe(1);
    expect(out).toMatch(/Cannot find primary config 'verl_confg'/);
  });

  it("5. a list of target_modules: OmegaConf's refusal in HFModelConfig", async () => {
    const ex = exported('redteam');
    const { code, out } = await dryRun(
      edit(ex, 'verl_config.yaml', /target_modules: all-linear/, 'target_modules: [q_proj, v_proj]'),
      [],
    );
    expect(code).toBe(1);
    expect(out).toMatch(/actor_rollout_ref\.model \(HFModelConfig\): .*Cannot convert 'ListConfig' to string/);
  });

  it("6. a loss_agg_mode veRL lacks: ActorConfig's ValueError", async () => {
    const ex = exported('redteam');
    const { code, out } = await dryRun(
      edit(ex, 'verl_config.yaml', /loss_agg_mode: [\w-]+/, 'loss_agg_mode: token-sum'),
      [],
    );
    expect(code).toBe(1);
    expect(out).toMatch(/FAIL {2}actor: ValueError: Invalid loss_agg_mode: token-sum/);
    expect(out).toMatch(verlMessage('loss_agg_mode'));
  });

  it("7. a misspelt reward function: load_extern_object's AttributeError text", async () => {
    const ex = exported('redteam');
    const { code, out } = await dryRun(edit(ex, 'verl_config.yaml', /name: compute_score/, 'name: compute_scor'), []);
    expect(code).toBe(1);
    expect(out).toMatch(/Object not found in module: object_name='compute_scor', module_path='[^']+reward\.py'\./);
    expect(out).toMatch(verlMessage('reward_fn_missing'));
  });

  it("8. an SFT scheduler veRL lacks: the SFT trainer's ValueError", async () => {
    const ex = exported('attacker-sft');
    const { code, out } = await dryRun(
      edit(ex, 'verl_sft_config.yaml', /lr_scheduler: wsd/, 'lr_scheduler: constant'),
      [],
    );
    expect(code).toBe(1);
    expect(out).toContain(`Unknown lr scheduler: constant (${where('sft_scheduler')})`);
    // And a batch the GPUs cannot split, in the trainer's words.
    const odd = await dryRun(ex.files, ['--gpus', '1,3']);
    expect(odd.out).toMatch(verlMessage('sft_dp_divides'));
    expect(odd.code).toBe(1);
  });
});

describe('dry_run.py warns where veRL scores fewer turns of an episode', () => {
  it('multiturn with data.max_response_length 128: the episodes that end before their last turn, counted', async () => {
    const ex = exported('multiturn');
    const { code, out } = await dryRun(
      edit(ex, 'verl_config.yaml', /max_response_length: \d+/, 'max_response_length: 128'),
      [],
    );
    const m =
      /warn {2}multi-turn: with every reply at the lab's cap of 32 tokens, (\d+) of (\d+) episodes end before their last turn is scored \(data\.max_response_length 128/.exec(
        out,
      );
    expect(m, out).not.toBeNull();
    expect(Number(m![1])).toBeGreaterThan(0);
    expect(out).toContain(where('agent_loop_stop'));
    expect(out).toMatch(/dry run: veRL config OK \(1 warning\(s\)/);
    expect(code).toBe(0);
  });
});

describe('dry_run.py with the standard library only (python3 -S: no Hydra, OmegaConf, veRL, pyarrow)', () => {
  it('says what it left out, passes a clean job and still fails a wrong config name and a bad micro-batch', async () => {
    const ex = exported('redteam');
    const clean = await dryRun(ex.files, ['--gpus', '1,2,4,8'], true);
    expect(clean.out).toMatch(/skip {2}Hydra\/OmegaConf not installed/);
    expect(clean.out).toMatch(/skip {2}pyarrow not installed/);
    expect(clean.out).toMatch(/dry run: veRL config OK \(\d+ check\(s\) left out/);
    expect(clean.code, clean.out).toBe(0);
    const name = await dryRun(edit(ex, 'run.sh', /--config-name=verl_config/, '--config-name=verl_confg'), [], true);
    expect(name.code).toBe(1);
    const micro = await dryRun(
      edit(ex, 'verl_config.yaml', /(\n {4}ppo_micro_batch_size_per_gpu: )\d+/, '$13'),
      ['--gpus', '2'],
      true,
    );
    expect(micro.out).toMatch(verlMessage('micro_divides_mini'));
    expect(micro.code).toBe(1);
  });
});
