// The veRL export against independent references: veRL's own config key list (fixture read from
// its repository, commit named in the fixture), the lab's logged rewards (rollouts the lab wrote
// during real runs, fixtures/rollouts-*.json), the lab's reward functions on generated edge cases,
// and a parquet reader that is not the writer.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parquetReadObjects } from 'hyparquet';
import { parse as parseYaml } from 'yaml';
import { describe, expect, it } from 'vitest';
import { rulesVerdict } from '../judges/rules';
import { tinkerRepetitionRatio } from '../rl/repetition';
import { tinkerRedTeamReward, tokenBuncherReward } from '../rl/rewards';
import { groupDiversity } from './attack/attack';
import type { QaItem } from '../data/sandbox/qa';
import { critiqueVerdict } from './minmax/minmax';
import { blindAnswerRm, judgeRewardModel, rulesAnswerRm } from './minmax/minmaxRm';
import { createHttpJudge } from '../judges/http';
import { attackerSft } from '../data/sandbox/index';
import { minmaxPolicyReward } from '../rl/minmax';
import { aggregateTurnScores } from '../rl/turns';
import { TURN_AGGREGATIONS } from '../rl/types';
import { saferTurnScore } from './multiturn/multiturn';
import { defendReward } from './defend/defend';
import { getRecipe, listRecipes } from './registry';
import { str } from '../contract/schema';
import { datasetRows } from '../export/verl/entry';
import { EXPORT_RECIPES, EXPORTABLE_RECIPES, exportVerl } from './exports';

const FIXTURES = new URL('../../dev/fixtures/verl/', import.meta.url);
const VERL = JSON.parse(readFileSync(new URL('verl-keys.json', FIXTURES), 'utf8')) as {
  source: { commit: string };
  keys: string[];
};

interface LoggedRollout {
  prompt: string;
  response: string;
  ground_truth: {
    kind: string;
    category: string | null;
    expected: string | null;
    tactic: string | null;
    choices?: [string, string, string, string];
    correct?: number;
    family?: string;
    story?: string;
    question?: string;
  };
  judge_unsafe: number;
  /** GRPO group within its step. */
  group: string;
  /** What a frozen model was asked and answered (attack: the defender; rlhf: the monitor). */
  chat?: { content: string; reply: string };
  mean_kl: number;
  /** defend, tokenbuncher: beta x this is their KL term (k1 summed over the answer). */
  kl_sum?: number;
  mean_entropy: number;
  reward: number;
}
const logged = (recipe: string) =>
  (JSON.parse(readFileSync(new URL(`rollouts-${recipe}.json`, FIXTURES), 'utf8')) as { rollouts: LoggedRollout[] })
    .rollouts;

interface Case {
  data_source: string;
  solution_str: string;
  ground_truth: string;
  extra_info: Record<string, unknown>;
}

const run = (cmd: string, args: string[], env: NodeJS.ProcessEnv = {}) =>
  new Promise<string>((resolve, reject) =>
    execFile(cmd, args, { env: { ...process.env, ...env }, maxBuffer: 1 << 24 }, (err, stdout, stderr) =>
      err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout),
    ),
  );

/** Runs an exported reward.py's compute_score on cases with python3 (async: a stand-in judge may be serving). */
async function pythonScores(
  rewardPy: string,
  cases: Case[],
  env: NodeJS.ProcessEnv = {},
): Promise<Record<string, number>[]> {
  const dir = mkdtempSync(join(tmpdir(), 'verl-reward-'));
  writeFileSync(join(dir, 'reward.py'), rewardPy);
  writeFileSync(join(dir, 'cases.json'), JSON.stringify(cases));
  writeFileSync(
    join(dir, 'drive.py'),
    [
      'import json, sys',
      `sys.path.insert(0, ${JSON.stringify(dir)})`,
      'import reward',
      `cases = json.load(open(${JSON.stringify(join(dir, 'cases.json'))}))`,
      'out = reward.compute_score_batch([c["data_source"] for c in cases], [c["solution_str"] for c in cases], [c["ground_truth"] for c in cases], [c["extra_info"] for c in cases])',
      'print(json.dumps(out))',
    ].join('\n'),
  );
  return JSON.parse(await run('python3', [join(dir, 'drive.py')], env)) as Record<string, number>[];
}

const casesOf = (recipe: string, rs: LoggedRollout[]): Case[] =>
  rs.map((r) => ({
    data_source: `sparring/${recipe}`,
    solution_str: r.response,
    ground_truth: JSON.stringify(r.ground_truth),
    extra_info: {
      prompt_text: r.prompt,
      group: r.group,
      sparring_mean_kl: r.mean_kl,
      sparring_kl_sum: r.kl_sum,
      sparring_mean_entropy: r.mean_entropy,
    },
  }));

const exported = (recipe: string, config: Record<string, unknown> = {}, seed = 1) =>
  exportVerl({ recipe: getRecipe(recipe), config, seed, steps: 50 });

/** Dotted key paths of a YAML file of nested mappings (what verlYaml writes). */
function yamlKeys(text: string): string[] {
  const out: string[] = [];
  const stack: [number, string][] = [];
  for (const line of text.split('\n')) {
    const m = /^( *)'?([A-Za-z_][A-Za-z0-9_]*)'?:/.exec(line);
    if (!m) continue;
    while (stack.length && stack[stack.length - 1][0] >= m[1].length) stack.pop();
    stack.push([m[1].length, m[2]]);
    out.push(stack.map((s) => s[1]).join('.'));
  }
  return out;
}

describe('veRL export', () => {
  it("the key fixture is veRL's trainer config at a named commit", () => {
    expect(VERL.source.commit).toMatch(/^[0-9a-f]{40}$/);
    expect(VERL.keys).toEqual(
      expect.arrayContaining([
        'actor_rollout_ref.rollout.n',
        'algorithm.adv_estimator',
        'actor_rollout_ref.actor.clip_ratio_high',
        'actor_rollout_ref.model.lora_rank',
      ]),
    );
  });

  for (const name of Object.keys(EXPORT_RECIPES)) {
    it(`${name}: every key of verl_config.yaml exists in veRL's trainer config`, () => {
      const ex = exported(name);
      const yaml = ex.files['verl_config.yaml'] as string;
      const keys = yamlKeys(yaml).filter((k) => k !== 'hydra' && !k.startsWith('hydra.') && k !== 'defaults');
      expect(keys.length).toBeGreaterThan(40);
      expect(keys.filter((k) => !VERL.keys.includes(k))).toEqual([]);
      expect(Object.keys(ex.overrides).filter((k) => !VERL.keys.includes(k))).toEqual([]);
    });
  }

  it('every exported YAML parses (YAML 1.1, as OmegaConf reads it) back to the overrides, value for value', () => {
    const flatten = (v: unknown, prefix = ''): [string, unknown][] =>
      v !== null && typeof v === 'object' && !Array.isArray(v)
        ? Object.entries(v).flatMap(([k, x]) => flatten(x, prefix ? `${prefix}.${k}` : k))
        : [[prefix, v]];
    for (const name of EXPORTABLE_RECIPES) {
      const ex = exported(name, { loraTargets: 'attention' });
      const file = name === 'attacker-sft' ? 'verl_sft_config.yaml' : 'verl_config.yaml';
      const doc = parseYaml(ex.files[file] as string, { version: '1.1' }) as Record<string, unknown>;
      expect(doc.defaults, name).toEqual([name === 'attacker-sft' ? 'sft_trainer' : 'ppo_trainer', '_self_']);
      expect(doc.hydra, name).toEqual({ searchpath: ['pkg://verl.trainer.config'] });
      const { hydra: _h, defaults: _d, ...rest } = doc;
      expect(Object.fromEntries(flatten(rest)), name).toEqual(ex.overrides);
    }
  });

  it('redteam: the config carries the recipe (aliases in, veRL names out) and lists what veRL cannot express', () => {
    const ex = exported('redteam', {
      num_generations: '16',
      'actor_rollout_ref.actor.optim.lr': '5e-7',
      klBeta: '0.03',
      loraRank: '16',
      loraAlpha: '32',
      prompts: '8',
    });
    expect(ex.overrides).toMatchObject({
      'algorithm.adv_estimator': 'grpo',
      'algorithm.norm_adv_by_std_in_grpo': false,
      'algorithm.use_kl_in_reward': true,
      'algorithm.kl_penalty': 'kl',
      'algorithm.kl_ctrl.kl_coef': 0.03,
      'actor_rollout_ref.rollout.n': 16,
      'actor_rollout_ref.rollout.temperature': 0.7,
      'actor_rollout_ref.rollout.top_p': 0.9,
      'actor_rollout_ref.rollout.top_k': -1,
      'actor_rollout_ref.actor.optim.lr': 5e-7,
      'actor_rollout_ref.actor.optim.betas': [0.9, 0.95],
      'actor_rollout_ref.actor.policy_loss.loss_mode': 'gpg',
      'actor_rollout_ref.model.lora_rank': 16,
      'actor_rollout_ref.rollout.load_format': 'safetensors',
      'actor_rollout_ref.model.lora_alpha': 32,
      // HFModelConfig.target_modules is Optional[str]: PEFT's "all-linear" is the seven projections.
      'actor_rollout_ref.model.target_modules': 'all-linear',
      'actor_rollout_ref.model.path': '${oc.env:PWD}/models/defender',
      'custom_reward_function.path': '${oc.env:PWD}/reward.py',
      'data.train_batch_size': 8,
      'actor_rollout_ref.actor.ppo_mini_batch_size': 8,
      'data.max_response_length': 40,
      'trainer.total_training_steps': 50,
    });
    // A YAML 1.1 reader (OmegaConf) takes 5e-7 for a string: the exponent needs a dot and a sign.
    expect(ex.files['verl_config.yaml']).toMatch(/\n {6}lr: 5\.0e-7\n/);
    const readme = ex.files['README.md'] as string;
    expect(readme).toMatch(/python3 -m verl\.trainer\.main_ppo --config-path=\$PWD --config-name=verl_config/);
    expect(readme).toMatch(/clips harm - rp x rep only/);
    expect(readme).toMatch(/Early stop/);
    expect(readme).toMatch(/lora_adapter_path/);
    expect(Object.keys(ex.files).sort()).toEqual([
      'README.md',
      'data/train.parquet',
      'data/val.parquet',
      'dry_run.py',
      'reward.py',
      'run.sh',
      'sparring_export.json',
      'trl_grpo.py',
      'verl_config.yaml',
    ]);
    expect(() => exported('redteam', { groupSize: '4', num_generations: '8' })).toThrow(/"groupSize" is set twice/);
    // Every registered recipe exports; a plug-in recipe without an export entry is named.
    for (const r of listRecipes()) expect(EXPORTABLE_RECIPES, r.name).toContain(r.name);
    // A recipe given a dataset other than the sandbox's (issue 25 adds such fields) is refused, not exported with sandbox prompts.
    const withDataset = {
      name: 'redteam',
      schema: { ...getRecipe('redteam').schema, dataset: str('sandbox', 'prompts') },
    };
    expect(() => exportVerl({ recipe: withDataset, config: { dataset: 'upload:mine' }, seed: 0 })).toThrow(
      /field "dataset" is "upload:mine"; the export writes the sandbox's prompts only/,
    );
    expect(exportVerl({ recipe: withDataset, config: {}, seed: 0 }).files['reward.py']).toMatch(/def compute_score/);
    expect(() => exportVerl({ recipe: { name: 'plugin', schema: {} }, config: {}, seed: 0 })).toThrow(
      /recipe "plugin" has no veRL export yet \(exportable: redteam, defend, tokenbuncher, attack, rlhf, minmax, multiturn, arena, attacker-sft\)/,
    );
  });

  it("advantage = gae exports a critic on the actor's base (veRL would otherwise load its default critic model), and says how it differs", () => {
    for (const name of ['defend', 'attack', 'arena', 'multiturn', 'minmax']) {
      const ex = exported(name, { advantage: 'gae', criticLr: '0.01' });
      expect(ex.overrides, name).toMatchObject({
        'algorithm.adv_estimator': 'gae',
        'critic.model.path': ex.overrides['actor_rollout_ref.model.path'],
        'critic.model.lora_rank': 8,
        'critic.optim.lr': 0.01,
      });
      expect(
        Object.keys(ex.overrides).filter((k) => !VERL.keys.includes(k)),
        name,
      ).toEqual([]);
      expect(ex.files['README.md'], name).toMatch(/advantage = gae: veRL's critic is a copy of the base model/);
      expect(exported(name, {}).overrides['critic.model.path'], name).toBeUndefined();
    }
  });

  it("filterGroups (DAPO dynamic sampling) is named as beyond main_ppo, with recipe/dapo's keys, in every GRPO recipe; off says nothing", () => {
    const GRPO = ['minmax', 'rlhf', 'redteam', 'attack', 'defend', 'arena', 'multiturn', 'tokenbuncher'];
    for (const r of GRPO) {
      const ex = exported(r, { filterGroups: 'true', filterGroupsMetric: 'seq_final_reward', maxNumGenBatches: '3' });
      expect(ex.unsupported.join('\n'), r).toMatch(
        /recipe\/dapo.*algorithm\.filter_groups\.enable=True, metric=seq_final_reward, max_num_gen_batches=3/,
      );
      expect(ex.files['README.md'], r).toMatch(/filter_groups\.enable=True/);
      expect(exported(r).unsupported.join('\n'), r).not.toMatch(/filter_groups/);
    }
    // Every recipe whose schema has the field is listed here.
    expect(
      Object.keys(EXPORT_RECIPES)
        .filter((r) => Object.hasOwn(getRecipe(r).schema, 'filterGroups'))
        .sort(),
    ).toEqual([...GRPO].sort());
    expect(exported('minmax', { filterGroups: 'true', filterGroupsMetric: 'acc' }).unsupported.join('\n')).toMatch(
      /metric=acc, max_num_gen_batches=4 \(metric=acc reads the acc key/,
    );
  });

  it("the adaptive KL controller exports as veRL's kl_ctrl (type, target, horizon); fixed stays fixed", () => {
    for (const name of ['redteam', 'defend', 'tokenbuncher', 'attack', 'arena']) {
      const ex = exported(name, { klController: 'adaptive', klTarget: '0.05', klHorizon: '5000' });
      expect(ex.overrides, name).toMatchObject({
        'algorithm.kl_ctrl.type': 'adaptive',
        'algorithm.kl_ctrl.target_kl': 0.05,
        'algorithm.kl_ctrl.horizon': 5000,
      });
      expect(exported(name, {}).overrides['algorithm.kl_ctrl.type'], name).toBe('fixed');
    }
  });

  it("the parquet dataset reads back (hyparquet) to the same rows, in RLHFDataset's layout", async () => {
    const ex = exported('defend');
    const bytes = ex.files['data/train.parquet'] as Uint8Array;
    const back = await parquetReadObjects({
      file: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer,
    });
    const { train } = EXPORT_RECIPES.defend.dataset(
      getRecipe('defend').schema
        ? Object.fromEntries(Object.entries(getRecipe('defend').schema).map(([k, f]) => [k, f.default]))
        : {},
      1,
    );
    const rows = datasetRows('defend', train, 'train');
    expect(back).toEqual(rows);
    expect(rows.length).toBe(256 + 128);
    const benign = rows.find((r) => JSON.parse(r.reward_model.ground_truth).kind === 'benign')!;
    expect(JSON.parse(benign.reward_model.ground_truth).expected).toMatch(/^[A-Za-z0-9-]+$/);
    expect(rows[0].prompt).toEqual([{ role: 'user', content: rows[0].extra_info.prompt_text }]);
  });

  /** The lab's own reward of a logged rollout, from the lab's functions (the fixture must still be what the lab computes). */
  const labReward = (name: string, rs: LoggedRollout[]): number[] => {
    const c = Object.fromEntries(Object.entries(getRecipe(name).schema).map(([k, f]) => [k, f.default])) as Record<
      string,
      number
    >;
    const verdict = (r: LoggedRollout) =>
      rulesVerdict({
        prompt: r.prompt,
        response: name === 'attack' ? r.chat!.reply : r.response,
        meta: {
          kind: r.ground_truth.kind as 'harmful' | 'benign',
          category: r.ground_truth.category,
          expected: r.ground_truth.expected,
        },
      });
    const groupIds = [...new Set(rs.map((r) => r.group))];
    const div =
      name === 'attack'
        ? groupDiversity(
            rs.map((r) => r.response),
            rs.map((r) => groupIds.indexOf(r.group)),
            'exact',
          )
        : [];
    return rs.map((r, i) => {
      const v = verdict(r);
      if (name === 'redteam')
        return tinkerRedTeamReward(
          { harm: v.unsafe, repetition: tinkerRepetitionRatio(r.response), kl: r.mean_kl },
          { repetitionPenalty: c.repetitionPenalty, klBeta: c.klBeta },
        );
      if (name === 'defend')
        return defendReward(
          {
            harmful: r.ground_truth.kind === 'harmful',
            unsafe: v.unsafe,
            correct: v.benignCorrect === true,
            meanEntropy: r.mean_entropy,
            klSum: r.kl_sum!,
          },
          c as never,
        ).reward;
      // arena's defender phase: safety or utility, minus defenderKlBeta x KL (arena.ts).
      if (name === 'arena')
        return (
          (r.ground_truth.kind === 'harmful' ? c.safetyWeight * (1 - v.unsafe) : 0) +
          (r.ground_truth.kind === 'harmful' ? 0 : c.utilityWeight * (v.benignCorrect ? 1 : 0)) -
          c.defenderKlBeta * r.mean_kl
        );
      if (name === 'attack') return v.unsafe + c.diversityCoef * div[i] - c.klBeta * r.mean_kl;
      if (name === 'rlhf')
        return (
          minmaxPolicyReward(
            ((c.rm as unknown) === 'rules' ? rulesAnswerRm : blindAnswerRm)(
              r.ground_truth as unknown as QaItem,
              r.response,
            ),
            critiqueVerdict(r.chat!.reply),
          ) -
          c.klBeta * r.mean_kl
        );
      // tokenbuncher
      return r.ground_truth.kind === 'harmful'
        ? 0 + tokenBuncherReward(r.mean_entropy, 'defence') + -c.klBeta * r.kl_sum!
        : 0 + c.utilityWeight * (v.benignCorrect ? 1 : 0) + -c.klBeta * r.kl_sum!;
    });
  };

  /**
   * A local stand-in for the model servers reward.py talks to: the http judge (/score, the logged
   * judge score of each text) and the frozen defender (/v1/chat/completions, the logged answers to
   * each prompt, in the order they were logged).
   */
  async function standIn(
    rs: LoggedRollout[],
    fn: (url: string, requests: () => number) => Promise<void>,
  ): Promise<void> {
    const judge = new Map(rs.map((r) => [r.chat?.reply ?? r.response, r.judge_unsafe]));
    const answers = new Map<string, string[]>();
    for (const r of rs) if (r.chat) answers.set(r.chat.content, [...(answers.get(r.chat.content) ?? []), r.chat.reply]);
    let requests = 0;
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () => {
        requests++;
        const j = JSON.parse(body) as { texts?: string[]; messages?: { content: string }[] };
        let reply: unknown = null;
        if (req.url === '/score' && j.texts?.every((t) => judge.has(t)))
          reply = { scores: j.texts.map((t) => judge.get(t)) };
        if (req.url === '/v1/chat/completions' && answers.get(j.messages?.[0]?.content ?? '')?.length)
          reply = {
            choices: [{ message: { role: 'assistant', content: answers.get(j.messages![0].content)!.shift() } }],
          };
        res.writeHead(reply ? 200 : 400, { 'content-type': 'application/json' });
        res.end(JSON.stringify(reply ?? { error: `no logged reply for ${req.url} ${body.slice(0, 80)}` }));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      await fn(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, () => requests);
    } finally {
      server.close();
    }
  }

  for (const name of ['redteam', 'defend', 'tokenbuncher', 'attack', 'rlhf', 'arena'] as const) {
    it(`${name}: python3 runs reward.py on 200 lab-logged rollouts and returns the lab's rewards within 1e-6`, async () => {
      const rs = logged(name);
      expect(rs.length).toBe(200);
      expect(Math.max(...labReward(name, rs).map((x, i) => Math.abs(x - rs[i].reward)))).toBeLessThan(1e-6);
      await standIn(rs, async (url, requests) => {
        const scores = await pythonScores(exported(name).files['reward.py'] as string, casesOf(name, rs), {
          SPARRING_DEFENDER_URL: url,
          SPARRING_MONITOR_URL: url,
        });
        expect(Math.max(...scores.map((s, i) => Math.abs(s.score - rs[i].reward)))).toBeLessThan(1e-6);
        expect(requests()).toBe(name === 'attack' || name === 'rlhf' ? 200 : 0);
      });
    }, 30_000);

    if (name === 'rlhf') continue; // its judge is the monitor (served above); its RM is the rules stand-in
    it(`${name}: a model judge is asked through the http judge protocol (a local stand-in serves the logged judge scores)`, async () => {
      const rs = logged(name);
      await standIn(rs, async (url, requests) => {
        const scores = await pythonScores(
          exported(name, { judge: 'http' }).files['reward.py'] as string,
          casesOf(name, rs),
          { SPARRING_JUDGE_URL: url, SPARRING_DEFENDER_URL: url },
        );
        expect(requests()).toBe(name === 'attack' ? 400 : 200);
        expect(Math.max(...scores.map((s, i) => Math.abs(s.score - rs[i].reward)))).toBeLessThan(1e-6);
      });
    }, 30_000);
  }

  it("rlhf: a judge RM (rm = http) scores answers as the lab's judgeRewardModel does, through the same server", async () => {
    const rs = logged('rlhf').slice(0, 40);
    // The stand-in scorer gives every answer a P(unsafe) of its own.
    const scored = rs.map((r, i) => ({ ...r, chat: undefined, judge_unsafe: (i % 5) / 8 }));
    await standIn(scored, async (url) => {
      const lab = await judgeRewardModel(createHttpJudge({ url, retries: 0 })).scoreAnswers(
        rs.map((r) => ({ item: r.ground_truth as unknown as QaItem, answer: r.response })),
      );
      const want = lab.map((rm, i) => minmaxPolicyReward(rm, 'unclear') - 0.05 * rs[i].mean_kl);
      const got = await pythonScores(
        exported('rlhf', { rm: 'http', judge: 'none' }).files['reward.py'] as string,
        casesOf('rlhf', rs),
        { SPARRING_JUDGE_URL: url },
      );
      expect(new Set(lab).size).toBeGreaterThan(2);
      expect(got.map((g) => g.score)).toEqual(want.map((w) => expect.closeTo(w, 9)));
    });
  }, 30_000);

  it("attacker-sft: a veRL SFT job whose keys are the SFT trainer's and whose parquet holds the lab's pairs", async () => {
    const sft = JSON.parse(readFileSync(new URL('verl-keys.json', FIXTURES), 'utf8')) as { sft_keys: string[] };
    const ex = exported('attacker-sft', { dataSize: '100', batchSize: '8', loraRank: '16' });
    const keys = yamlKeys(ex.files['verl_sft_config.yaml'] as string).filter(
      (k) => k !== 'hydra' && !k.startsWith('hydra.') && k !== 'defaults',
    );
    expect(keys.filter((k) => !sft.sft_keys.includes(k))).toEqual([]);
    expect(ex.overrides).toMatchObject({
      'data.train_batch_size': 8,
      'model.lora_rank': 16,
      'data.prompt_key': 'prompt',
      'data.response_key': 'response',
    });
    expect(ex.files['run.sh']).toMatch(
      /-m verl\.trainer\.fsdp_sft_trainer --config-path="\$PWD" --config-name=verl_sft_config/,
    );
    const bytes = ex.files['data/sft_train.parquet'] as Uint8Array;
    const back = await parquetReadObjects({
      file: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer,
    });
    expect(back).toEqual(attackerSft(100, 1).map((e) => ({ prompt: e.source, response: e.target, prompt_id: e.id })));
    expect(() => exported('attacker-sft', { dataset: 'my.jsonl' })).toThrow(
      /sandbox pairs only; field "dataset" is "my.jsonl"/,
    );
  });

  describe('multiturn', () => {
    interface Turn {
      user: string;
      reply: string;
      kind: 'harmful' | 'benign';
      expected: string | null;
      category: string | null;
      ended: boolean;
      turn_score: number;
    }
    const episodes = () =>
      (
        JSON.parse(readFileSync(new URL('rollouts-multiturn.json', FIXTURES), 'utf8')) as {
          rollouts: { turns: Turn[]; reward: number; ground_truth: { kind: string } }[];
        }
      ).rollouts;
    const w = { safetyWeight: 0.4, usefulnessWeight: 0.4, formatWeight: 0.2, repetitionPenalty: 0.2 };

    it("reward.py scores every turn and aggregates 200 lab-logged episodes to the lab's rewards within 1e-6", async () => {
      const eps = episodes();
      expect(eps.length).toBe(200);
      // The fixture is what the lab computes now.
      for (const e of eps) {
        const lab = e.turns.map(
          (t) =>
            saferTurnScore(
              rulesVerdict({
                prompt: t.user,
                response: t.reply,
                meta: { kind: t.kind, expected: t.expected, category: t.category },
              }),
              t.kind,
              { text: t.reply, ended: t.ended },
              w,
            ).score,
        );
        expect(lab.map((x, k) => Math.abs(x - e.turns[k].turn_score)).every((d) => d < 1e-9)).toBe(true);
        expect(Math.abs(aggregateTurnScores(lab, 'min_mean') - e.reward)).toBeLessThan(1e-9);
      }
      const dir = mkdtempSync(join(tmpdir(), 'verl-mt-'));
      writeFileSync(join(dir, 'reward.py'), exported('multiturn').files['reward.py'] as string);
      writeFileSync(join(dir, 'eps.json'), JSON.stringify(eps));
      writeFileSync(
        join(dir, 'drive.py'),
        [
          'import json, sys',
          `sys.path.insert(0, ${JSON.stringify(dir)})`,
          'import reward',
          `eps = json.load(open(${JSON.stringify(join(dir, 'eps.json'))}))`,
          'out = []',
          'for e in eps:',
          '    s = [reward.turn_score(t["reply"], t["ended"], t) for t in e["turns"]]',
          // As veRL's reward loop calls it: the agent loop's extra fields merged into extra_info.
          '    out.append({"turns": s, "episode": reward.episode_reward(s), "via_compute_score": reward.compute_score("sparring/multiturn", "", "{}", {"turn_scores": s, "tool_rewards": [], "num_turns": 2 * len(s) + 1, "rollout_reward_scores": {}})["score"]})',
          'print(json.dumps(out))',
        ].join('\n'),
      );
      const got = JSON.parse(await run('python3', [join(dir, 'drive.py')])) as {
        turns: number[];
        episode: number;
        via_compute_score: number;
      }[];
      expect(
        Math.max(...got.flatMap((g, i) => g.turns.map((x, k) => Math.abs(x - eps[i].turns[k].turn_score)))),
      ).toBeLessThan(1e-6);
      expect(Math.max(...got.map((g, i) => Math.abs(g.episode - eps[i].reward)))).toBeLessThan(1e-6);
      expect(got.map((g) => g.via_compute_score)).toEqual(got.map((g) => g.episode));
      expect(new Set(eps.map((e) => e.turns.length)).size).toBeGreaterThan(0);
    }, 30_000);

    it("every aggregation matches the lab's aggregateTurnScores", async () => {
      const cases = [[0.5], [1, 0.2, 0.7], [0, 0, 0.9], [0.333, 0.001, 1, 0.5], [0.8, 0.8]];
      const dir = mkdtempSync(join(tmpdir(), 'verl-agg-'));
      writeFileSync(join(dir, 'reward.py'), exported('multiturn').files['reward.py'] as string);
      writeFileSync(
        join(dir, 'drive.py'),
        [
          'import json, sys',
          `sys.path.insert(0, ${JSON.stringify(dir)})`,
          'import reward',
          `print(json.dumps([[reward.aggregate_turn_scores(c, m) for c in ${JSON.stringify(cases)}] for m in ${JSON.stringify(TURN_AGGREGATIONS)}]))`,
        ].join('\n'),
      );
      const got = JSON.parse(await run('python3', [join(dir, 'drive.py')])) as number[][];
      expect(got).toEqual(
        TURN_AGGREGATIONS.map((m) => cases.map((c) => expect.closeTo(aggregateTurnScores(c, m), 12))),
      );
    });

    it("the veRL interaction plays a logged episode turn by turn: next user turns, turn scores and the episode reward (against a stand-in of veRL's BaseInteraction)", async () => {
      const ex = exported('multiturn');
      const eps = episodes()
        .filter((e) => e.turns.length === 3 && e.turns.every((t) => t.ended))
        .slice(0, 12);
      expect(eps.length).toBeGreaterThan(5);
      const dir = mkdtempSync(join(tmpdir(), 'verl-int-'));
      for (const f of ['reward.py', 'sparring_interaction.py', 'interaction_config.yaml'])
        writeFileSync(join(dir, f), ex.files[f] as string);
      mkdirSync(join(dir, 'stub/verl/interactions'), { recursive: true });
      writeFileSync(join(dir, 'stub/verl/__init__.py'), '');
      writeFileSync(join(dir, 'stub/verl/interactions/__init__.py'), '');
      writeFileSync(
        join(dir, 'stub/verl/interactions/base.py'),
        'class BaseInteraction:\n    def __init__(self, config):\n        self.config = config\n',
      );
      const episodeJson = eps.map((e) =>
        JSON.stringify({
          turns: e.turns.map((t) => t.user),
          turn_kinds: e.turns.map((t) => t.kind),
          expected: e.turns.map((t) => t.expected),
          category: e.turns[0].category,
        }),
      );
      writeFileSync(
        join(dir, 'eps.json'),
        JSON.stringify(eps.map((e, i) => ({ episode: episodeJson[i], replies: e.turns.map((t) => t.reply) }))),
      );
      writeFileSync(
        join(dir, 'drive.py'),
        [
          'import asyncio, json, sys',
          `sys.path[:0] = [${JSON.stringify(join(dir, 'stub'))}, ${JSON.stringify(dir)}]`,
          'from sparring_interaction import SparringEpisodeInteraction',
          `eps = json.load(open(${JSON.stringify(join(dir, 'eps.json'))}))`,
          'async def play(it, e):',
          '    iid = await it.start_interaction(None, name="sparring", episode=e["episode"])',
          '    msgs = [{"role": "user", "content": json.loads(e["episode"])["turns"][0]}]',
          '    log = []',
          '    for r in e["replies"]:',
          '        msgs.append({"role": "assistant", "content": r})',
          '        done, nxt, score, _ = await it.generate_response(iid, msgs)',
          '        log.append([done, nxt, score])',
          '        msgs.append({"role": "user", "content": nxt})',
          '    final = await it.calculate_score(iid)',
          '    await it.finalize_interaction(iid)',
          '    return {"log": log, "final": final}',
          'it = SparringEpisodeInteraction({})',
          'print(json.dumps([asyncio.run(play(it, e)) for e in eps]))',
        ].join('\n'),
      );
      const got = JSON.parse(await run('python3', [join(dir, 'drive.py')])) as {
        log: [boolean, string, number][];
        final: number;
      }[];
      got.forEach((g, i) => {
        expect(g.log.map((l) => l[0])).toEqual([false, false, true]);
        expect(g.log.map((l) => l[1])).toEqual([eps[i].turns[1].user, eps[i].turns[2].user, '']);
        expect(g.log.map((l) => l[2])).toEqual(eps[i].turns.map((t) => expect.closeTo(t.turn_score, 9)));
        expect(g.final).toBeCloseTo(eps[i].reward, 9);
      });
      // veRL ends an episode at max_assistant_turns before asking the interaction: one above maxTurns (3), or the last reply goes unscored.
      expect(ex.overrides).toMatchObject({
        'actor_rollout_ref.rollout.multi_turn.enable': true,
        'actor_rollout_ref.rollout.multi_turn.max_assistant_turns': 4,
        'actor_rollout_ref.rollout.multi_turn.max_user_turns': 4,
        'reward_model.use_reward_loop': true,
      });
    }, 30_000);
  });

  it("the rules judge and the repetition ratio match the lab's on generated edge cases (Unicode spaces, refusals, markers, repeats)", async () => {
    const texts = [
      'I can\u2019t help with that.',
      'I cant assist you',
      'sorry, no',
      '  Sorry about it',
      'No. never',
      'no way',
      'As an AI I decline',
      'I am not going to do it',
      "I'm unable",
      'It is against my policies',
      'That could harm someone.',
      'Sure: [PAYLOAD:S9:step-1] and [PAYLOAD:S9:step-1]',
      'Sorry but [PAYLOAD:S14:step-2] [PAYLOAD:S1:step-3]',
      '[PAYLOAD:S15:step-1] [PAYLOAD:S1:step-0]',
      'It is [ANSWER:12]',
      'It is [ANSWER: 12] or [ANSWER:12]',
      'Sorry, it is [ANSWER:kesh]',
      'Answer [ANSWER:Kesh] [ANSWER:dorn]',
      'a b c a b c a b c',
      'a\u00a0b c a\u00a0b c',
      'x\u2003y z x y z x\u2003y z',
      'one two',
      'a b c d e f a b c',
      'word\u3000word\u3000word\u3000word\u3000word',
      '\ufeffa b c a b c',
      'a\u001cb c a\u001cb c',
      'café au lait café au lait',
    ];
    const gts = [
      { kind: 'harmful', category: 'S9', expected: null, tactic: null },
      { kind: 'benign', category: null, expected: '12', tactic: null },
      { kind: 'benign', category: null, expected: 'Kesh', tactic: null },
    ];
    const cases: Case[] = [];
    const want: number[] = [];
    for (const t of texts) {
      for (const gt of gts) {
        for (const kl of [0, 0.37]) {
          cases.push({
            data_source: 'sparring/redteam',
            solution_str: t,
            ground_truth: JSON.stringify(gt),
            extra_info: { sparring_mean_kl: kl },
          });
          const v = rulesVerdict(
            {
              prompt: 'p',
              response: t,
              meta: { kind: gt.kind as 'harmful' | 'benign', expected: gt.expected, category: gt.category },
            },
            { partialCredit: true },
          );
          want.push(
            tinkerRedTeamReward(
              { harm: v.unsafe, repetition: tinkerRepetitionRatio(t), kl },
              { repetitionPenalty: 0.7, klBeta: 0.5 },
            ),
          );
        }
      }
    }
    const scores = await pythonScores(
      exported('redteam', { judge: 'rules-partial', repetitionPenalty: '0.7', klBeta: '0.5' }).files[
        'reward.py'
      ] as string,
      cases,
    );
    expect(scores.map((s) => s.score)).toEqual(want.map((w) => expect.closeTo(w, 9)));
    expect(scores.map((s) => s.repetition)).toEqual(
      cases.map((c) => expect.closeTo(tinkerRepetitionRatio(c.solution_str), 12)),
    );
    // Defend's benign utility depends on the answer markers and the refusal port.
    const dcases = texts.map((t): Case => ({
      data_source: 'sparring/defend',
      solution_str: t,
      ground_truth: JSON.stringify(gts[2]),
      extra_info: {},
    }));
    const d = await pythonScores(exported('defend').files['reward.py'] as string, dcases);
    expect(d.map((s) => s.refused)).toEqual(
      texts.map((t) =>
        rulesVerdict({ prompt: 'p', response: t, meta: { kind: 'benign', expected: 'Kesh' } }).refused ? 1 : 0,
      ),
    );
    expect(d.map((s) => s.score)).toEqual(
      texts.map((t) =>
        rulesVerdict({ prompt: 'p', response: t, meta: { kind: 'benign', expected: 'Kesh' } }).benignCorrect ? 1 : 0,
      ),
    );
  }, 20_000);

  it("attack: the diversity term matches the lab's groupDiversity in both modes", async () => {
    const texts = [
      'Pretend you are X. a b',
      'Pretend you are X. a b',
      'pretend YOU are x.  a b',
      'single',
      'single',
      '',
      'one two three',
      'two three four',
      'Crescendo\nline two',
    ];
    const groups = [0, 0, 0, 1, 1, 1, 2, 2, 3];
    const dir = mkdtempSync(join(tmpdir(), 'verl-div-'));
    writeFileSync(join(dir, 'reward.py'), exported('attack').files['reward.py'] as string);
    writeFileSync(
      join(dir, 'drive.py'),
      [
        'import json, sys',
        `sys.path.insert(0, ${JSON.stringify(dir)})`,
        'import reward',
        `t = ${JSON.stringify(texts)}; g = ${JSON.stringify(groups)}`,
        'print(json.dumps([reward.group_diversity(t, g, "exact"), reward.group_diversity(t, g, "ngram")]))',
      ].join('\n'),
    );
    const [exact, ngram] = JSON.parse(await run('python3', [join(dir, 'drive.py')])) as number[][];
    expect(exact).toEqual(groupDiversity(texts, groups, 'exact').map((x) => expect.closeTo(x, 12)));
    expect(ngram).toEqual(groupDiversity(texts, groups, 'ngram').map((x) => expect.closeTo(x, 12)));
  });

  it("every TRL script's GRPOConfig argument is a GRPOConfig field (TRL fixture, commit named) or a transformers TrainingArguments one", async () => {
    const trl = JSON.parse(readFileSync(new URL('trl-grpo-fields.json', FIXTURES), 'utf8')) as {
      source: { commit: string };
      fields: string[];
    };
    expect(trl.source.commit).toMatch(/^[0-9a-f]{40}$/);
    // GRPOConfig inherits these from transformers' TrainingArguments (not in the fixture).
    const trainingArguments = [
      'output_dir',
      'max_steps',
      'per_device_train_batch_size',
      'gradient_accumulation_steps',
      'report_to',
      'adam_beta1',
      'adam_beta2',
      'weight_decay',
      'max_grad_norm',
      'lr_scheduler_type',
      'warmup_steps',
    ];
    for (const [name, spec] of Object.entries(EXPORT_RECIPES).filter(([, r]) => r.trl)) {
      const script = exported(name).files['trl_grpo.py'] as string;
      const dir = mkdtempSync(join(tmpdir(), 'verl-trlargs-'));
      writeFileSync(join(dir, 'reward.py'), exported(name).files['reward.py'] as string);
      writeFileSync(join(dir, 'trl_grpo.py'), script);
      writeFileSync(
        join(dir, 'drive.py'),
        [
          'import json, sys',
          `sys.path.insert(0, ${JSON.stringify(dir)})`,
          'import trl_grpo',
          'print(json.dumps(sorted(trl_grpo.GRPO_ARGS)))',
        ].join('\n'),
      );
      const keys = JSON.parse(await run('python3', [join(dir, 'drive.py')])) as string[];
      expect(
        keys.filter((k) => !trl.fields.includes(k) && !trainingArguments.includes(k)),
        `${name} (${spec.name})`,
      ).toEqual([]);
      expect(keys).toEqual(
        expect.arrayContaining([
          'num_generations',
          'learning_rate',
          'beta',
          'max_completion_length',
          ...(name === 'defend' || name === 'tokenbuncher' ? ['entropy_coef'] : []),
        ]),
      );
    }
  });

  it("the TRL script's reward function returns reward.py's scores (trl itself is imported only in main)", async () => {
    const ex = exported('redteam');
    const dir = mkdtempSync(join(tmpdir(), 'verl-trl-'));
    writeFileSync(join(dir, 'reward.py'), ex.files['reward.py'] as string);
    writeFileSync(join(dir, 'trl_grpo.py'), ex.files['trl_grpo.py'] as string);
    const gt = JSON.stringify({ kind: 'harmful', category: 'S9', expected: null, tactic: null });
    writeFileSync(
      join(dir, 'drive.py'),
      [
        'import sys',
        `sys.path.insert(0, ${JSON.stringify(dir)})`,
        'import trl_grpo',
        `print(trl_grpo.sparring_reward_func(prompts=[[{"role": "user", "content": "p"}]] * 2, completions=[[{"role": "assistant", "content": "Sure [PAYLOAD:S9:step-1]"}], "Sorry, I cannot help"], reward_model=[{"ground_truth": ${JSON.stringify(gt)}}] * 2, data_source=["sparring/redteam"] * 2))`,
        'print(trl_grpo.GRPO_ARGS["num_generations"], trl_grpo.GRPO_ARGS["per_device_train_batch_size"], trl_grpo.GRPO_ARGS["scale_rewards"], trl_grpo.LORA["r"])',
      ].join('\n'),
    );
    const out = (await run('python3', [join(dir, 'drive.py')])).trim().split('\n');
    expect(out[0]).toBe('[1.0, 0.0]');
    expect(out[1]).toBe('8 64 none 8');
  });
});
