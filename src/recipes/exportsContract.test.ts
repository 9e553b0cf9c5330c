// The contract veRL and TRL enforce on an export, not only its key names: the declared types of
// veRL's config dataclasses (fixture read from veRL's source, file and line each) with an
// OmegaConf structured merge of every section veRL converts; the values each consumer accepts;
// reward.py called by keyword as veRL's reward managers call it; the batch arithmetic veRL applies
// at 1, 2, 4 and 8 GPUs; every alias row reaching the export; the TRL loss and install floor.
import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIELD_ALIASES, aliasRows } from '../contract/aliases';
import type { Field } from '../contract/schema';
import { EXPORT_RECIPES, exportSettings, exportVerl, type VerlExport } from './exports';
import { getRecipe } from './registry';

const FIX = resolve('dev/fixtures/verl');
const TYPES_PATH = join(FIX, 'verl-types.json');
interface Types {
  source: { commit: string };
  classes: Record<string, { file: string; fields: Record<string, { type: string; line: number }> }>;
  allowed: Record<string, { values: string[] }>;
  constants: Record<string, { file: string; line: number; value?: number }>;
}
const TYPES = JSON.parse(readFileSync(TYPES_PATH, 'utf8')) as Types;
const TRL = JSON.parse(readFileSync(join(FIX, 'trl-grpo-fields.json'), 'utf8')) as {
  source: { commit: string };
  loss_types: { values: string[] };
  introduced: Record<string, { release: string | null }>;
};

const RL = Object.keys(EXPORT_RECIPES);
const exported = (recipe: string, config: Record<string, unknown> = {}, extra: { gpus?: number } = {}) =>
  exportVerl({ recipe: getRecipe(recipe), config, seed: 1, steps: 50, ...extra });

/** A python3 that imports OmegaConf (Debian's python3-omegaconf lives in /usr/bin/python3's path). */
function omegaPython(): string {
  for (const p of ['python3', '/usr/bin/python3']) {
    try {
      execFileSync(p, ['-c', 'import omegaconf'], { stdio: 'ignore' });
      return p;
    } catch {
      /* next */
    }
  }
  throw new Error('no python3 with omegaconf: apt-get install python3-omegaconf (.ci/run does)');
}

const run = (cmd: string, args: string[], env: NodeJS.ProcessEnv = {}) =>
  new Promise<string>((res, rej) =>
    execFile(cmd, args, { env: { ...process.env, ...env }, maxBuffer: 1 << 24 }, (err, out, stderr) =>
      err ? rej(new Error(`${err.message}\n${stderr}`)) : res(out),
    ),
  );

/** Runs the OmegaConf contract checker on exported configs: file -> errors. */
async function checkConfigs(files: Record<string, string>, types = TYPES_PATH): Promise<Record<string, string[]>> {
  const dir = mkdtempSync(join(tmpdir(), 'verl-contract-'));
  const paths: string[] = [];
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name), { recursive: true });
    const base = text.includes('- sft_trainer') ? 'verl_sft_config.yaml' : 'verl_config.yaml';
    writeFileSync(join(dir, name, base), text);
    paths.push(join(dir, name, base));
  }
  const out = JSON.parse(
    await run(omegaPython(), [resolve('dev/export/verl_contract.py'), 'config', types, ...paths]),
  ) as Record<string, string[]>;
  return Object.fromEntries(Object.entries(out).map(([p, e]) => [p.slice(dir.length + 1), e]));
}

/** Configs that set many non-default learning settings at once, per recipe. */
const VARIANT: Record<string, unknown> = {
  ppoMiniBatches: 2,
  ppoEpochs: 2,
  clipRatioHigh: 0.28,
  lossAggMode: 'seq-mean-token-mean',
  entropyCoeff: 0.01,
  lrSchedule: 'cosine',
  lrWarmupSteps: 4,
  lrMinRatio: 0.1,
  klLossCoef: 0.01,
  loraTargets: 'attention',
  loraAlpha: 24,
};
const variantFor = (recipe: string) =>
  Object.fromEntries(Object.entries(VARIANT).filter(([k]) => Object.hasOwn(getRecipe(recipe).schema, k)));

describe("veRL's config contract", () => {
  it('the type fixture is veRL at the pinned commit, with the declarations the export relies on (file and line)', () => {
    expect(TYPES.source.commit).toBe('b178a3cd56f58b2d502255daba591e92833930a7');
    const hf = TYPES.classes.HFModelConfig;
    expect(hf.file).toBe('verl/workers/config/model.py');
    expect(hf.fields.target_modules).toMatchObject({ type: 'Optional[str]', line: 122 });
    expect(hf.fields.lora_alpha).toMatchObject({ type: 'int', line: 121 });
    expect(TYPES.classes.ActorConfig.fields.ppo_micro_batch_size_per_gpu.type).toBe('Optional[int]');
  });

  it('every section veRL converts merges into its dataclass (OmegaConf structured merge) and every other value has the type of veRL’s default, for every export, defaults and a variant', async () => {
    const files: Record<string, string> = {};
    for (const r of RL) {
      files[`${r}-default`] = exported(r).files['verl_config.yaml'] as string;
      files[`${r}-variant`] = exported(r, variantFor(r)).files['verl_config.yaml'] as string;
    }
    files['defend-gae'] = exported('defend', { advantage: 'gae', loraTargets: 'mlp' }).files[
      'verl_config.yaml'
    ] as string;
    files['attacker-sft-default'] = exported('attacker-sft').files['verl_sft_config.yaml'] as string;
    files['attacker-sft-mlp'] = exported('attacker-sft', { loraTargets: 'mlp' }).files[
      'verl_sft_config.yaml'
    ] as string;
    // The pinned commit, and the current release (v0.7.0, the same extractor: verl-types-v0.7.0.json).
    for (const types of [TYPES_PATH, join(FIX, 'verl-types-v0.7.0.json')]) {
      const errors = await checkConfigs(files, types);
      expect(Object.keys(errors).length).toBe(Object.keys(files).length);
      expect(Object.fromEntries(Object.entries(errors).filter(([, e]) => e.length)), types).toEqual({});
    }
  });

  it('the release fixture is veRL v0.7.0 and declares the LoRA fields as the pinned commit does', () => {
    const rel = JSON.parse(readFileSync(join(FIX, 'verl-types-v0.7.0.json'), 'utf8')) as Types;
    expect(rel.source.commit).toBe('f9c855f7cf04d603c9546bc01776c74806a879c1');
    expect(rel.classes.HFModelConfig.fields.target_modules.type).toBe('Optional[str]');
    expect(rel.classes.HFModelConfig.fields.lora_alpha.type).toBe('int');
  });

  it("the check fails where veRL fails: a list of target modules, a fractional alpha, a key veRL's dataclass lacks", async () => {
    const good = exported('redteam').files['verl_config.yaml'] as string;
    const list = good.replace(/target_modules: all-linear/, 'target_modules: [q_proj, v_proj]');
    const alpha = good.replace(/lora_alpha: 16/, 'lora_alpha: 16.5');
    const key = good.replace(/(\n {4}ppo_epochs: 1)/, '$1\n    ppo_epoch: 1');
    for (const bad of [list, alpha, key]) expect(bad).not.toBe(good);
    const errors = await checkConfigs({ list, alpha, key, good });
    expect(errors['list/verl_config.yaml'].join('\n')).toMatch(/HFModelConfig.*Cannot convert 'ListConfig' to string/);
    expect(errors['alpha/verl_config.yaml'].join('\n')).toMatch(/HFModelConfig.*16\.5/);
    expect(errors['key/verl_config.yaml'].join('\n')).toMatch(/FSDPActorConfig.*ppo_epoch/);
    expect(errors['good/verl_config.yaml']).toEqual([]);
  });

  it('a fractional loraAlpha is refused with the field named (veRL declares an int)', () => {
    expect(() => exported('redteam', { loraAlpha: 16.5 })).toThrow(
      /field "loraAlpha" is 16\.5; veRL's lora_alpha is an int/,
    );
    expect(() => exported('attacker-sft', { loraAlpha: 8.5 })).toThrow(/"loraAlpha" is 8\.5/);
  });

  it('every exported value is one its consumer accepts (estimator, loss aggregation, KL types, policy loss, controller, rollout, reward manager, agent loop, schedulers)', () => {
    // Accepted by the pinned commit and by the v0.7.0 release.
    const REL = JSON.parse(readFileSync(join(FIX, 'verl-types-v0.7.0.json'), 'utf8')) as Types;
    const allowed = (k: string) => TYPES.allowed[k].values.filter((v) => REL.allowed[k].values.includes(v));
    for (const r of RL)
      for (const cfg of [{}, variantFor(r), { advantage: 'gae', klController: 'adaptive' }]) {
        const schema = getRecipe(r).schema;
        const valid = Object.fromEntries(
          Object.entries(cfg).filter(
            ([k, v]) =>
              Object.hasOwn(schema, k) && (schema[k].type !== 'enum' || schema[k].options.includes(v as string)),
          ),
        );
        const o = exported(r, valid).overrides;
        const at = (k: string) => o[k] ?? null;
        const where = `${r} ${JSON.stringify(valid)}`;
        for (const [key, table] of [
          ['algorithm.adv_estimator', 'algorithm.adv_estimator'],
          ['actor_rollout_ref.actor.loss_agg_mode', 'actor_rollout_ref.actor.loss_agg_mode'],
          ['algorithm.kl_penalty', 'kl_penalty'],
          ['actor_rollout_ref.actor.kl_loss_type', 'kl_penalty'],
          ['actor_rollout_ref.actor.policy_loss.loss_mode', 'actor_rollout_ref.actor.policy_loss.loss_mode'],
          ['algorithm.kl_ctrl.type', 'algorithm.kl_ctrl.type'],
          ['actor_rollout_ref.rollout.name', 'actor_rollout_ref.rollout.name'],
          ['reward_model.reward_manager', 'reward_model.reward_manager'],
          ['actor_rollout_ref.rollout.agent.default_agent_loop', 'actor_rollout_ref.rollout.agent.default_agent_loop'],
          ['actor_rollout_ref.actor.optim.lr_scheduler_type', 'actor_rollout_ref.actor.optim.lr_scheduler_type'],
        ] as const)
          if (at(key) !== null) expect(allowed(table), `${where}: ${key}=${String(at(key))}`).toContain(at(key));
      }
    for (const cfg of [{}, { loraTargets: 'attention' }])
      expect(allowed('sft.optim.lr_scheduler')).toContain(
        exported('attacker-sft', cfg).overrides['optim.lr_scheduler'],
      );
  });

  it("the SFT job's wsd schedule stays in its constant phase for every trained step (the lab's constant rate)", () => {
    const ratio = TYPES.constants.wsd_stable_ratio.value!;
    for (const steps of [1, 50, 5000, 100000]) {
      const o = exportVerl({ recipe: getRecipe('attacker-sft'), config: {}, seed: 1, steps }).overrides;
      expect(o['optim.lr_warmup_steps_ratio']).toBe(0);
      // fsdp_sft_trainer: total = steps_per_epoch x total_epochs (>= 1 batch per epoch); wsd holds for int(total x ratio) steps.
      const stable = Math.floor((o['trainer.total_epochs'] as number) * ratio);
      expect(stable, `steps ${steps}`).toBeGreaterThanOrEqual(steps);
    }
  });

  it('checkpoints land at an absolute path of the export folder (trainer.default_local_dir)', () => {
    for (const r of [...RL, 'attacker-sft'])
      expect(exported(r).overrides['trainer.default_local_dir'], r).toBe('${oc.env:PWD}/checkpoints');
  });
});

/** veRL's batch rules (fsdp_workers.py 241-261, utils/config.py 115, fixture constants), applied at `gpus` GPUs. */
function verlAccepts(o: Record<string, unknown>, gpus: number): string | null {
  const n = o['actor_rollout_ref.rollout.n'] as number;
  const train = o['data.train_batch_size'] as number;
  const mini = o['actor_rollout_ref.actor.ppo_mini_batch_size'] as number;
  const micro = o['actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu'] as number;
  if ((train * n) % gpus !== 0) return `train ${train} x n ${n} % ${gpus} GPUs`;
  if (train < mini) return 'train < mini';
  const share = Math.floor((mini * n) / gpus);
  if (share * gpus !== mini * n) return `mini ${mini} x n ${n} does not split over ${gpus} GPUs`;
  if (share <= 0 || share % micro !== 0) return `per-GPU mini ${share} % micro ${micro}`;
  const critic = o['critic.ppo_micro_batch_size_per_gpu'] as number | undefined;
  if (critic !== undefined && share % critic !== 0) return `critic micro ${critic}`;
  return null;
}

describe("veRL's batch arithmetic", () => {
  it('the fixture names the normalisation the rules below follow', () => {
    expect(TYPES.constants.mini_batch_times_n.file).toBe('verl/workers/fsdp_workers.py');
    expect(TYPES.constants.micro_divides_mini.line).toBeGreaterThan(TYPES.constants.mini_batch_per_dp_rank.line);
  });

  it("mini- and micro-batches divide at every GPU count the README offers (1, 2, 4, 8 where the batch splits), and the README's scaling line works as written", () => {
    for (const r of RL)
      for (const cfg of [{}, variantFor(r), { groupSize: 3 }]) {
        const ex = exported(r, cfg);
        const readme = ex.files['README.md'] as string;
        expect(readme, 'an unfilled template slot').not.toMatch(/\$\{(f|c)\./);
        const offered = /work on\s+([0-9, ]+) GPU\(s\) per node/.exec(readme)![1].split(', ').map(Number);
        expect(offered[0]).toBe(1);
        for (const g of offered) expect(verlAccepts(ex.overrides, g), `${r} ${JSON.stringify(cfg)} at ${g}`).toBeNull();
        // Every other count of 1, 2, 4, 8 really fails (the README does not leave a working one out).
        for (const g of [1, 2, 4, 8].filter((x) => !offered.includes(x)))
          expect(verlAccepts(ex.overrides, g), `${r} at ${g}`).not.toBeNull();
        const line = /bash run\.sh ((?:\S+=\S+ ?)+)\s+# more GPUs/.exec(readme);
        if (offered.length > 1) {
          const o = { ...ex.overrides };
          for (const kv of line![1].trim().split(' ')) {
            const [k, v] = kv.split('=');
            o[k] = Number(v);
          }
          expect(verlAccepts(o, o['trainer.n_gpus_per_node'] as number), `${r}: ${line![1]}`).toBeNull();
          expect(o['trainer.n_gpus_per_node']).toBe(Math.max(...offered));
        }
      }
    // The sandbox defaults all split over 8 GPUs.
    for (const r of RL) expect(exported(r).files['README.md'], r).toMatch(/trainer\.n_gpus_per_node=8 +# more GPUs/);
  });

  it('ppoMiniBatches splits the batch into veRL mini-batches (and TRL steps per generation); one that does not divide the batch is refused', () => {
    const ex = exported('redteam', { ppoMiniBatches: 4 });
    expect(ex.overrides['actor_rollout_ref.actor.ppo_mini_batch_size']).toBe(2);
    expect(trlArgsOf(ex)).toMatchObject({ steps_per_generation: 4, per_device_train_batch_size: 16, max_steps: 200 });
    expect(() => exported('redteam', { ppoMiniBatches: 3 })).toThrow(
      /"ppoMiniBatches" is 3, which does not divide the 8 prompts/,
    );
  });

  it('the SFT batch splits over the GPUs into whole micro-batches (fsdp_sft_trainer.py 149-155)', () => {
    for (const batchSize of [16, 12, 6])
      for (const gpus of [1, 2])
        if (batchSize % gpus === 0) {
          const o = exportVerl({ recipe: getRecipe('attacker-sft'), config: { batchSize }, seed: 1, gpus }).overrides;
          expect(((o['data.train_batch_size'] as number) / gpus) % (o['data.micro_batch_size_per_gpu'] as number)).toBe(
            0,
          );
        }
  });
});

/** GRPO_ARGS / LORA of a TRL script, read by python3. */
function pyConstant(script: string, name: string): Record<string, unknown> {
  const line = script.split('\n').find((l) => l.startsWith(`${name} = `))!;
  const out = execFileSync('python3', ['-c', `import json,sys; print(json.dumps(eval(sys.stdin.read())))`], {
    input: line.slice(name.length + 3),
  });
  return JSON.parse(out.toString()) as Record<string, unknown>;
}
const trlArgsOf = (ex: VerlExport) => pyConstant(ex.files['trl_grpo.py'] as string, 'GRPO_ARGS');

/** A value other than the field's default, inside its range (the table test's input). */
function nonDefault(name: string, f: Field): unknown {
  const pick: Record<string, unknown> = {
    lossAggMode: 'seq-mean-token-mean',
    trlLossType: 'grpo',
    loraTargets: 'attention',
    klController: 'adaptive',
    lrSchedule: 'cosine',
    topK: 5,
    clipRatioHigh: 0.28,
    lrWarmupSteps: 2,
    loraAlpha: 32,
  };
  if (Object.hasOwn(pick, name)) return pick[name];
  if (f.type === 'boolean') return !f.default;
  if (f.type === 'enum') return f.options.find((o) => o !== f.default);
  if (f.type === 'integer' || f.type === 'number') {
    const d = f.default;
    const max = f.max ?? Infinity;
    let v = d === 0 ? Math.min(0.5, max) : d * 2 <= max ? d * 2 : d / 2;
    if (f.type === 'integer') v = Math.max(Math.round(v), d + 1 <= max ? d + 1 : d - 1);
    return v;
  }
  throw new Error(`no non-default value for ${name}`);
}

describe('every alias row reaches the export', () => {
  it('each lab field with a veRL or TRL counterpart, set to a non-default value, changes that key of the export, or the README lists it as not expressible', () => {
    const LORA_TRL: Record<string, string> = {
      lora_r: 'r',
      lora_alpha: 'lora_alpha',
      lora_dropout: 'lora_dropout',
      lora_target_modules: 'target_modules',
    };
    let checked = 0;
    const settings = (r: string, config: Record<string, unknown>) =>
      exportSettings({ recipe: getRecipe(r), config, seed: 1, steps: 50 });
    for (const r of RL) {
      const schema = getRecipe(r).schema;
      const base = settings(r, {});
      for (const a of aliasRows(r, schema)) {
        const value = nonDefault(a.lab, schema[a.lab]);
        const ex = settings(r, { [a.lab]: value });
        const listed = ex.unsupported.join('\n').includes(a.lab);
        const where = `${r}: ${a.lab}=${JSON.stringify(value)}`;
        if (a.verl && !listed) {
          expect(ex.overrides[a.verl], `${where} -> ${a.verl}`).not.toEqual(base.overrides[a.verl]);
          checked++;
        }
        if (a.trl && base.trl && !listed) {
          if (Object.hasOwn(LORA_TRL, a.trl))
            expect(ex.lora![LORA_TRL[a.trl]], `${where} -> LORA ${a.trl}`).not.toEqual(base.lora![LORA_TRL[a.trl]]);
          else expect(ex.trl![a.trl], `${where} -> TRL ${a.trl}`).not.toEqual(base.trl[a.trl]);
          checked++;
        }
      }
    }
    // Rows x recipes: a broken loop that checks nothing would fail here.
    expect(checked).toBeGreaterThan(FIELD_ALIASES.length * 3);
  });

  it('the shared settings without a one-to-one key are exported (klLossCoef, scaleRewards, loraUseRslora) or listed', () => {
    const kl = exported('defend', { klLossCoef: 0.02, klLossEstimator: 'k1' }).overrides;
    expect(kl).toMatchObject({
      'actor_rollout_ref.actor.use_kl_loss': true,
      'actor_rollout_ref.actor.kl_loss_coef': 0.02,
      'actor_rollout_ref.actor.kl_loss_type': 'kl',
    });
    const none = exported('defend', { scaleRewards: 'none' });
    expect(none.overrides['algorithm.norm_adv_by_std_in_grpo']).toBe(false);
    expect(trlArgsOf(none).scale_rewards).toBe('none');
    const batch = exported('defend', { scaleRewards: 'batch' });
    expect(batch.unsupported.join('\n')).toMatch(/scaleRewards = batch/);
    expect(trlArgsOf(batch).scale_rewards).toBe('batch');
    const rs = exported('defend', { loraUseRslora: true });
    expect(rs.unsupported.join('\n')).toMatch(/loraUseRslora/);
    expect(pyConstant(rs.files['trl_grpo.py'] as string, 'LORA').use_rslora).toBe(true);
    // The recipe's entropy term and the shared bonus add up (defend: -entropyCoef; entropyCoeff on top).
    expect(
      exported('defend', { entropyCoef: 1, entropyCoeff: 0.25 }).overrides['actor_rollout_ref.actor.entropy_coeff'],
    ).toBe(-0.75);
    expect(exported('minmax', { policyLr: 0.0005 }).overrides['actor_rollout_ref.actor.optim.lr']).toBe(0.0005);
    // minmax's monitor warm-up has no key in the policy's job: listed when on, absent when off.
    expect(exported('minmax', { monitorWarmupSteps: 40 }).unsupported.join('\n')).toMatch(/monitorWarmupSteps = 40/);
    expect(exported('minmax', {}).unsupported.join('\n')).not.toMatch(/monitorWarmupSteps/);
  });
});

describe('TRL scripts train the lab’s loss', () => {
  const TRL_RECIPES = RL.filter((r) => EXPORT_RECIPES[r].trl);
  /** The lab's aggregation (src/rl/trainer.ts: trlLossType, else lossAggMode, auto by policy loss) -> the TRL loss_type of the same normalisation. */
  const SAME_AS: Record<string, string[]> = {
    'token-mean': ['bnpo', 'dapo'],
    'seq-mean-token-mean': ['grpo'],
    'seq-mean-token-sum-norm': ['dr_grpo'],
    grpo: ['grpo'],
    bnpo: ['bnpo'],
    dapo: ['dapo'],
    dr_grpo: ['dr_grpo'],
  };

  it('loss_type, beta, epsilon, epsilon_high, delta and num_iterations match each recipe (defaults and a variant)', () => {
    for (const r of TRL_RECIPES)
      for (const cfg of [{}, variantFor(r), { trlLossType: 'grpo' }, { lossAggMode: 'seq-mean-token-sum-norm' }]) {
        const c = {
          ...Object.fromEntries(Object.entries(getRecipe(r).schema).map(([k, f]) => [k, f.default])),
          ...cfg,
        };
        const ex = exportSettings({ recipe: getRecipe(r), config: cfg, seed: 1, steps: 50 });
        const a = ex.trl!;
        const where = `${r} ${JSON.stringify(cfg)}`;
        expect(TRL.loss_types.values, where).toContain(a.loss_type);
        const lab =
          c.trlLossType !== 'off'
            ? (c.trlLossType as string)
            : c.lossAggMode !== 'auto'
              ? (c.lossAggMode as string)
              : c.policyLoss === 'importance_sampling'
                ? 'token-sum'
                : 'token-mean';
        if (SAME_AS[lab]) expect(SAME_AS[lab], where).toContain(a.loss_type);
        // token-sum has no TRL loss: the README says how the script's differs.
        else expect(ex.unsupported.join('\n'), where).toMatch(new RegExp(`loss ${lab}`));
        expect(a.beta, where).toBe(c.klLossCoef ?? 0);
        expect(a.epsilon, where).toBe(c.clipRatio);
        expect(a.epsilon_high, where).toBe(c.clipRatioHigh || c.clipRatio);
        expect(a.num_iterations, where).toBe(c.ppoEpochs);
        if (c.policyLoss === 'ppo') expect(a.delta, where).toBe(c.clipRatioC);
      }
    for (const r of TRL_RECIPES) {
      // The script's literal is what trlArgs computed, read back by python3; its reward function is reward.py's.
      const ex = exported(r);
      expect(trlArgsOf(ex)).toEqual(exportSettings({ recipe: getRecipe(r), config: {}, seed: 1, steps: 50 }).trl);
      expect(ex.files['trl_grpo.py']).toMatch(/reward_funcs=\[sparring_reward_func\]/);
      // The reward KL the lab trains with has no TRL counterpart: said in the script and the README.
      if ((getRecipe(r).schema.klBeta?.default as number) > 0) {
        expect(ex.files['trl_grpo.py'], r).toMatch(/WITHOUT the lab's reward KL/);
        expect(ex.files['README.md'], r).toMatch(/## TRL[\s\S]*WITHOUT the lab's reward KL/);
      }
    }
  });

  it('the install line pins the oldest TRL that has every GRPOConfig field the script sets (fixture: the release each arrived in)', () => {
    const newer = (x: string, y: string) => {
      const [p, q] = [x.split('.').map(Number), y.split('.').map(Number)];
      for (let i = 0; i < 3; i++) if (p[i] !== q[i]) return p[i] > q[i];
      return false;
    };
    expect(TRL.introduced.entropy_coef.release).toBe('1.8.0');
    let needed = '0.0.0';
    for (const r of TRL_RECIPES)
      for (const cfg of [{}, variantFor(r), { entropyCoeff: 0.1 }])
        for (const k of Object.keys(exportSettings({ recipe: getRecipe(r), config: cfg, seed: 1 }).trl!)) {
          const rel = TRL.introduced[k]?.release;
          if (rel && newer(rel, needed)) needed = rel;
        }
    expect(needed).toBe('1.8.0');
    for (const r of TRL_RECIPES) {
      const ex = exported(r);
      const pin = /pip install "trl>=([0-9.]+)"/.exec(ex.files['trl_grpo.py'] as string)![1];
      expect(pin).toBe(/pip install "trl>=([0-9.]+)"/.exec(ex.files['README.md'] as string)![1]);
      expect(newer(needed, pin), `${r}: needs ${needed}, pins ${pin}`).toBe(false);
    }
  });
});

describe('reward.py as veRL calls it', () => {
  let server: Server;
  let url = '';
  const asked: string[] = [];
  beforeAll(async () => {
    // A stand-in OpenAI-compatible server: answers every chat call, records the model name asked for.
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        asked.push((JSON.parse(body) as { model: string }).model);
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ choices: [{ message: { content: 'CORRECT. [ANSWER:A] Sure.' } }] }));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  const QA = { kind: 'qa', story: 's', question: 'q', choices: ['a', 'b', 'c', 'd'], correct: 0, family: 'f' };
  const ROWS: Record<string, Record<string, unknown>[]> = {
    harmful: [{ kind: 'harmful', category: 'S1', expected: null, tactic: 'direct' }],
    benign: [{ kind: 'benign', category: null, expected: '42', tactic: null }],
    qa: [QA],
  };
  const kindsOf: Record<string, string[]> = {
    redteam: ['harmful'],
    defend: ['harmful', 'benign'],
    arena: ['harmful', 'benign'],
    tokenbuncher: ['harmful', 'benign'],
    attack: ['harmful'],
    rlhf: ['qa'],
    minmax: ['qa'],
    multiturn: ['harmful', 'benign'],
  };

  for (const r of RL)
    it(`${r}: compute_score by keyword (naive manager) and compute_score_batch by keyword (batch manager) return the same keys on every row kind and a float score`, async () => {
      const ex = exported(r);
      const dir = mkdtempSync(join(tmpdir(), 'verl-kw-'));
      writeFileSync(join(dir, 'reward.py'), ex.files['reward.py'] as string);
      const responses = ['I cannot help with that.', '[PAYLOAD:S1:step-1] here', '[ANSWER:42] done', '[ANSWER:A]'];
      const cases = kindsOf[r].flatMap((kind) =>
        ROWS[kind].flatMap((gt) =>
          responses.flatMap((resp, i) =>
            [undefined, [0.4, 0.9]].map((turnScores) => ({
              data_source: `sparring/${r}`,
              solution_str: resp,
              ground_truth: JSON.stringify(gt),
              // What veRL's reward loop adds to extra_info (reward_manager/naive.py), and multi-turn's turn scores.
              extra_info: {
                prompt_text: 'p',
                prompt_id: `p${i % 2}`,
                num_turns: 2,
                rollout_reward_scores: {},
                ...(turnScores && r === 'multiturn' ? { turn_scores: turnScores } : {}),
              },
            })),
          ),
        ),
      );
      writeFileSync(join(dir, 'cases.json'), JSON.stringify(cases));
      const out = JSON.parse(
        await run('python3', [resolve('dev/export/verl_contract.py'), 'reward', dir, join(dir, 'cases.json')], {
          SPARRING_DEFENDER_URL: url,
          SPARRING_MONITOR_URL: url,
        }),
      ) as { naive: Record<string, string>[]; batch: Record<string, string>[] };
      for (const results of [out.naive, out.batch]) {
        expect(results).toHaveLength(cases.length);
        for (const row of results) {
          expect(row, r).toEqual(results[0]);
          expect(row.score, r).toBe('float');
        }
      }
      // filterGroupsMetric = acc: recipe/dapo reads metric=acc from reward.py's dict, so the export
      // says it works exactly where reward.py returns an acc key (multiturn's turn scores carry no verdicts).
      const note = exported(r, { filterGroups: true, filterGroupsMetric: 'acc' }).unsupported.find((u) =>
        u.startsWith('filterGroups'),
      )!;
      expect(note, r).toMatch(/metric=acc, max_num_gen_batches=4/);
      expect(/reads the acc key/.test(note), r).toBe(r !== 'multiturn');
      expect(out.naive[0].acc ?? 'absent', r).toBe(r === 'multiturn' ? 'absent' : 'float');
    });

  it('frozen models are served under the name reward.py sends, with a GPU share, and the zip carries (or says where to get) each sandbox one', () => {
    for (const [r, role] of [
      ['attack', 'defender'],
      ['rlhf', 'monitor'],
      ['minmax', 'monitor'],
    ] as const) {
      const ex = exported(r);
      const name = new RegExp(`"${role}": "([^"]+)"`).exec(ex.files['reward.py'] as string)![1];
      const readme = ex.files['README.md'] as string;
      const serve = new RegExp(
        `vllm serve (\\S+) --served-model-name "([^"]+)" --port \\d+ --gpu-memory-utilization (0\\.\\d+)`,
      ).exec(readme);
      expect(serve, r).not.toBeNull();
      expect(serve![2], r).toBe(name);
      expect(Number(serve![3]) + 0.5, r).toBeLessThan(1);
      expect(readme).toMatch(new RegExp(`export SPARRING_${role.toUpperCase()}_URL=http://localhost:\\d+`));
      // The served path is in the zip, or the README says where to copy it from.
      const path = serve![1];
      const shipped = Object.keys(ex.files).some((f) => f.startsWith(`${path}/`));
      if (!shipped)
        expect(readme, r).toMatch(new RegExp(`copy the lab's \`public/models/[^/]+/\` folder to \`${path}/\``));
    }
    // With the defender's files passed (the CLI reads them), attack's zip carries them at the served path.
    const withFiles = exportVerl({
      recipe: getRecipe('attack'),
      config: {},
      seed: 1,
      frozenModelFiles: { defender: { 'config.json': new TextEncoder().encode('{}') } },
    });
    expect(withFiles.files['models/defender/config.json']).toBeDefined();
    expect(withFiles.files['README.md']).not.toMatch(/is not in this zip: copy the lab's `public\/models\/defender/);
  });
});

// dry_run.py itself: exportsDryRun.test.ts.
