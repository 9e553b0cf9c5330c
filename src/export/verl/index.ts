// A recipe run as a veRL (and, where it fits, TRL) job: the files of the export folder, built in
// memory with no Node or DOM API, so the CLI writes them to disk and the browser zips them.
//
//   verl_config.yaml   Hydra config for `python3 -m verl.trainer.main_ppo` (veRL's ppo_trainer + overrides)
//   reward.py          compute_score(data_source, solution_str, ground_truth, extra_info): the recipe's reward
//   data/train.parquet, data/val.parquet   the prompts in RLHFDataset's layout
//   run.sh             the launch command
//   dry_run.py         veRL's start-up without Ray or a GPU: run.sh through Hydra, conversions, batches, prompts, reward.py
//   trl_grpo.py        the same job on TRL's GRPOTrainer (redteam, attack, defend, tokenbuncher, rlhf)
//   README.md          hardware, launch, starting from the lab's adapter, what veRL cannot express
//   sparring_export.json   recipe, seed and the validated config the export came from
//   models/NAME/       the sandbox model the recipe trains, when the caller passes its files
// A recipe adds its own files through its entry (multiturn: its veRL Interaction and interaction
// config); attacker-sft is an SFT job instead (sft.ts): verl_sft_config.yaml, data/sft_*.parquet,
// run.sh. The entries live with the recipes (src/recipes/<name>/export.ts), which pass theirs in:
// the exporter never imports a recipe.
import { resolveAliases } from '../../contract/aliases';
import { ConfigError, validateConfig, type Schema } from '../../contract/schema';
import { rowsToParquet } from './parquet';
import { ATTACKER_PROMPTS_NOTE, datasetRows, type Cfg, type ExportRecipe } from './entry';
import { exportReadme } from './readme';
import { rewardPy } from './rewardPy';
import { sftOverrides, sftParquet, sftReadme, sftRows, sftRunSh } from './sft';
import { trlArgs, trlLora, trlScript } from './trlScript';
import { verlBatches } from './batch';
import { episodeNote, fitEpisodes, type EpisodeFit } from './episodes';
import { chatTokenCounter } from './tokens';
import { learningNotes, trlNotes } from './notes';
import { pyFile } from './python';
import DRY_RUN from './python/dry_run.py?raw';
import { HERE, optimiserStepsPerStep, verlOverrides, verlYaml } from './verlConfig';

export type { ExportRecipe } from './entry';

export interface VerlExportInput {
  /** The recipe's name and schema (the registry's, or the list the worker posts). */
  recipe: { name: string; schema: Schema };
  /** Config input as the CLI or the form holds it: lab names, veRL keys or TRL names; strings are coerced. */
  config: Record<string, unknown>;
  seed: number;
  /** trainer.total_training_steps (default 200). */
  steps?: number;
  /** GPUs per node for the launch (default 1). */
  gpus?: number;
  /** Files of a sandbox model to ship in models/NAME/ (the CLI reads them from public/models). */
  modelFiles?: Record<string, Uint8Array>;
  /** Lab version or commit, written into every generated file's header. */
  labVersion?: string;
  /** Files of the sandbox models reward.py asks (attack's defender), by sandbox name; shipped in models/NAME/. */
  frozenModelFiles?: Record<string, Record<string, Uint8Array>>;
  /** defend / arena: prompts the attacker model wrote for attackerPlan's goals (goal id -> prompt). */
  attackPrompts?: Readonly<Record<string, string>>;
}

/**
 * defend / arena: the goals an attacker model should write prompts for, with the validated config
 * (attacker, attackerCheckpoint, its sampling fields), so a caller with models (the CLI) can sample
 * them and pass attackPrompts. Null for recipes whose prompts come from the sandbox.
 */
export function attackerPlan(
  input: Omit<VerlExportInput, 'attackPrompts'>,
  spec: ExportRecipe,
): { goals: { id: string; text: string }[]; config: Record<string, unknown> } | null {
  if (!spec.attackGoals) return null;
  const { c } = prepare(input);
  return { goals: spec.attackGoals(c, input.seed), config: c };
}

export interface VerlExport {
  /** Relative path -> text or bytes. */
  files: Record<string, string | Uint8Array>;
  /** What veRL cannot express (also in the README). */
  unsupported: string[];
  /** The veRL overrides as dotted keys (tests check them against veRL's key list). */
  overrides: Record<string, unknown>;
}

/** Where veRL loads the model from: a hub id as it is, a sandbox name from the export's models/ folder. */
export function modelPathFor(ref: string): { path: string; sandbox: string | null } {
  if (/^[a-z][a-z0-9_-]*$/.test(ref)) return { path: `${HERE}/models/${ref}`, sandbox: ref };
  const hub = /^https?:\/\/huggingface\.co\/([^/]+)\/([^/?#]+)/i.exec(ref);
  if (hub) return { path: `${hub[1]}/${hub[2]}`, sandbox: null };
  return { path: ref, sandbox: null };
}

/**
 * A model the lab loaded from a URL (not a hub page): veRL hands model paths to transformers'
 * from_pretrained, which takes a hub id or a folder on disk, so the job would not start. `key` is
 * the override that names the model.
 */
export function urlModelNote(path: string, key: string): string[] {
  if (!/^(https?:|blob:)/i.test(path)) return [];
  return [
    `The model was loaded from the URL ${path}: veRL loads a hub id or a folder on disk (transformers' from_pretrained), not a URL. Download that folder to the cluster and set ${key} to it.`,
  ];
}

const utf8Length = (s: string) => new TextEncoder().encode(s).length;

/** The input's config validated (aliases resolved), steps and GPUs checked. */
function prepare(input: VerlExportInput) {
  const { recipe } = input;
  const aliased = resolveAliases(recipe.name, recipe.schema, input.config);
  const v = validateConfig(recipe.schema, aliased.input);
  const errors = { ...aliased.errors, ...v.errors };
  if (Object.keys(errors).length) throw new ConfigError(`recipe ${recipe.name}`, errors);
  const steps = input.steps ?? 200;
  if (!Number.isInteger(steps) || steps < 1)
    throw new Error(`export-verl: steps must be a positive integer, got ${steps}`);
  // The export writes the sandbox's prompts; an uploaded or on-disk dataset must not be swapped for them silently.
  const ds = v.config.dataset;
  if (recipe.name !== 'attacker-sft' && typeof ds === 'string' && ds !== 'sandbox') {
    throw new Error(
      `export-verl: field "dataset" is ${JSON.stringify(ds)}; the export writes the sandbox's prompts only, so set dataset=sandbox and put your rows into data/train.parquet (columns prompt [{role, content}], data_source, reward_model.ground_truth)`,
    );
  }
  return {
    c: v.config as Record<string, unknown>,
    steps,
    gpus: input.gpus ?? 1,
    header: `Generated by Sparring${input.labVersion ? ` ${input.labVersion}` : ''} from recipe ${recipe.name}, seed ${input.seed}.`,
  };
}

const manifest = (input: VerlExportInput, c: Record<string, unknown>, steps: number) =>
  JSON.stringify(
    { format: 1, recipe: input.recipe.name, seed: input.seed, steps, config: c, labVersion: input.labVersion ?? null },
    null,
    2,
  ) + '\n';

/** attacker-sft: a veRL SFT job (sft.ts). */
export function exportSft(input: VerlExportInput): VerlExport {
  const { c, steps, gpus, header } = prepare(input);
  if (c.dataset !== 'sandbox')
    throw new Error(
      `export-verl: attacker-sft exports the sandbox pairs only; field "dataset" is ${JSON.stringify(c.dataset)} (convert that JSONL to parquet columns prompt = "Goal: <goal>", response = <prompt>)`,
    );
  const model = modelPathFor(String(c.attacker));
  const rows = sftRows(c.dataSize as number, input.seed);
  const val = sftRows(64, input.seed + 9001);
  const overrides = sftOverrides(c, [...rows, ...val], {
    steps,
    modelPath: model.path,
    gpus,
    experiment: `attacker-sft-seed${input.seed}`,
  });
  const files: Record<string, string | Uint8Array> = {
    'verl_sft_config.yaml': verlYaml(
      overrides,
      [header, "Launch: bash run.sh (see README.md). Every key is one of veRL's SFT trainer config keys."],
      'sft_trainer',
    ),
    'data/sft_train.parquet': sftParquet(rows),
    'data/sft_val.parquet': sftParquet(val),
    'run.sh': sftRunSh(header, gpus),
    'sparring_export.json': manifest(input, c, steps),
    'dry_run.py': pyFile(
      'Dry run of this veRL SFT job (no GPU): python3 dry_run.py [--gpus 1,2,4,8] [override ...]',
      { CONFIG_NAME: 'verl_sft_config', SFT: true, REPLY_CAP: null },
      DRY_RUN,
    ),
    'README.md': sftReadme({
      seed: input.seed,
      steps,
      rows: rows.length,
      modelPath: model.path,
      sandbox: model.sandbox,
      shipped: !!(model.sandbox && input.modelFiles),
      batch: c.batchSize as number,
      gpuCounts: verlBatches(c.batchSize as number, 1, 1, gpus, 4).gpuCounts,
    }),
  };
  if (model.sandbox && input.modelFiles)
    for (const [name, bytes] of Object.entries(input.modelFiles)) files[`models/${model.sandbox}/${name}`] = bytes;
  return { files, unsupported: urlModelNote(model.path, 'model.partial_pretrain'), overrides };
}

/**
 * An RL export's settings without its files (no dataset, no parquet, no README): the validated
 * config, the veRL overrides, the TRL arguments and LoRA, and every note the README lists. The
 * same functions exportVerl calls; data.max_prompt_length is left at its floor (no prompts read).
 */
export function exportSettings(input: VerlExportInput, spec: ExportRecipe) {
  const { c, steps, gpus } = prepare(input);
  const experiment = `${input.recipe.name}-seed${input.seed}`;
  const model = modelPathFor(String(c[spec.modelField]));
  const overrides = verlOverrides(spec, input.recipe, c, {
    steps,
    modelPath: model.path,
    maxPromptTokens: 0,
    gpus,
    experiment,
  });
  const trl = spec.trl
    ? trlArgs(input.recipe, c, {
        steps,
        batchPrompts: spec.batchPrompts(c),
        experiment,
        entropyCoef: overrides['actor_rollout_ref.actor.entropy_coeff'] as number,
      })
    : null;
  return {
    c,
    overrides,
    trl,
    lora: spec.trl ? trlLora(c) : null,
    unsupported: [
      ...spec.unsupported(c),
      ...learningNotes(c, steps, spec.unsupported(c)),
      ...(spec.trl ? trlNotes(c) : []),
    ],
  };
}

/**
 * filterGroups in an export: recipe/dapo's dynamic sampling, which main_ppo lacks. Its metric reads
 * seq_reward / seq_final_reward from the rewards and any other name from reward.py's dict, so
 * metric = acc works only where the exported reward.py returns an "acc" key.
 */
export function filterGroupsNote(c: Cfg, rewardPyText: string): string {
  const m = String(c.filterGroupsMetric);
  const metric =
    m === 'acc'
      ? /"acc":/.test(rewardPyText)
        ? "metric=acc reads the acc key of reward.py's dict"
        : 'this reward.py returns no acc key, so metric=acc has nothing to read there: use metric=seq_reward'
      : `veRL's ${m} sums ${m === 'seq_reward' ? "reward.py's score (with any KL term reward.py subtracts)" : "the reward after use_kl_in_reward's KL"}`;
  return `filterGroups (DAPO dynamic sampling): veRL runs it in recipe/dapo's trainer, not in main_ppo that this job uses; to keep it, launch recipe/dapo with algorithm.filter_groups.enable=True, metric=${m}, max_num_gen_batches=${c.maxNumGenBatches} (${metric}; veRL stops with an error at the cap, the lab trains on the groups it kept).`;
}

/** An RL recipe's veRL job (and TRL script where its entry fits GRPOTrainer). */
export function exportVerl(input: VerlExportInput, spec: ExportRecipe): VerlExport {
  const { recipe, seed } = input;
  const { c, steps, gpus, header } = prepare(input);
  const model = modelPathFor(String(c[spec.modelField]));
  const { train, val } = spec.dataset(c, seed, input.attackPrompts);
  const trainRows = datasetRows(recipe.name, train, 'train');
  const valRows = datasetRows(recipe.name, val, 'test');
  // With the shipped model's tokenizer the prompts are measured as RLHFDataset measures them;
  // without one, byte-level BPE never makes more tokens than bytes: the bytes bound the tokens.
  const count = chatTokenCounter(model.sandbox ? input.modelFiles : undefined);
  const allRows = [...trainRows, ...valRows];
  const maxPromptTokens = count
    ? Math.max(...allRows.map((r) => count(r.prompt)))
    : Math.max(...allRows.map((r) => utf8Length(r.prompt.map((m) => m.content).join('\n'))));
  const experiment = `${recipe.name}-seed${seed}`;
  const overrides = verlOverrides(spec, recipe, c, {
    steps,
    modelPath: model.path,
    maxPromptTokens,
    promptTokensExact: count !== null,
    gpus,
    experiment,
  });
  const unsupported = [...spec.unsupported(c), ...learningNotes(c, steps, spec.unsupported(c))].map((u) =>
    u === ATTACKER_PROMPTS_NOTE && input.attackPrompts
      ? `Attacker prompts: sampled once at export from the attacker "${c.attacker}"${c.attackerCheckpoint ? ` with the adapter of ${c.attackerCheckpoint}` : ''} (one per goal); the lab's attacker writes fresh ones every step.`
      : u,
  );
  unsupported.push(...urlModelNote(model.path, 'actor_rollout_ref.model.path'));
  if (c.advantage === 'gae') {
    unsupported.push(
      "advantage = gae: veRL's critic is a copy of the base model with its own LoRA and value head (critic.model.path = the actor's base); the lab's critic is a value head on the policy's own final hidden state. The GAE, value loss and their settings (gamma, lam, cliprange_value, critic lr) are the same.",
    );
  }
  const reward = rewardPy(
    spec,
    c,
    `${header}\n\nveRL custom reward: custom_reward_function.path=reward.py, name=compute_score.\nStandard library only.`,
  );
  if (c.filterGroups === true) unsupported.push(filterGroupsNote(c, reward));
  // A shipped model's context bounds prompt + response (vLLM refuses longer sequences).
  const maxPos =
    model.sandbox && input.modelFiles?.['config.json']
      ? (JSON.parse(new TextDecoder().decode(input.modelFiles['config.json'])) as { max_position_embeddings?: number })
          .max_position_embeddings
      : undefined;
  // Multi-turn episodes: the response holds every reply and later user turn the lab scores (episodes.ts).
  const episodes = [...train, ...val].flatMap((i) =>
    Array.isArray(i.episode?.turns) ? [{ turns: i.episode.turns as string[] }] : [],
  );
  let fit: EpisodeFit | null = null;
  if (episodes.length > 0) {
    fit = fitEpisodes(episodes, {
      maxTurns: c.maxTurns as number,
      maxNewTokens: c.maxNewTokens as number,
      maxPos: maxPos ?? Infinity,
      count,
    });
    overrides['data.max_response_length'] = fit.responseLength;
  }
  const room = maxPos === undefined ? Infinity : maxPos - (overrides['data.max_prompt_length'] as number);
  if ((overrides['data.max_response_length'] as number) > room) {
    unsupported.push(
      `data.max_response_length is cut from ${overrides['data.max_response_length']} to ${room} so prompt + response fit the model's ${maxPos} positions.`,
    );
    overrides['data.max_response_length'] = room;
  }
  if (fit)
    unsupported.push(
      episodeNote(fit, overrides['data.max_response_length'] as number, maxPos ?? Infinity, c.maxNewTokens as number),
    );

  const files: Record<string, string | Uint8Array> = {
    'verl_config.yaml': verlYaml(overrides, [
      header,
      "Launch: bash run.sh (see README.md). Every key is one of veRL's trainer config keys.",
    ]),
    'reward.py': reward,
    'data/train.parquet': rowsToParquet(trainRows),
    'data/val.parquet': rowsToParquet(valRows),
    'run.sh': [
      '#!/usr/bin/env bash',
      `# ${header}`,
      "# Starts veRL on this folder's config; extra Hydra overrides go after the script name.",
      'set -euo pipefail',
      'cd "$(dirname "$0")"',
      '# reward.py and any interaction / reward-manager module of this folder import each other by name.',
      'export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"',
      'python3 -m verl.trainer.main_ppo --config-path="$PWD" --config-name=verl_config "$@"',
      '',
    ].join('\n'),
    'sparring_export.json': manifest(input, c, steps),
    'dry_run.py': pyFile(
      'Dry run of this veRL job (no Ray, no GPU): python3 dry_run.py [--gpus 1,2,4,8] [override ...]',
      // Multi-turn: the lab's per-reply cap, which the dry run sizes episodes with.
      { CONFIG_NAME: 'verl_config', SFT: false, REPLY_CAP: fit ? (c.maxNewTokens as number) : null },
      DRY_RUN,
    ),
  };
  Object.assign(files, spec.extraFiles?.(c));
  const frozen = (spec.frozen?.(c) ?? []).map((m) => {
    const ref = String(c[m.field]);
    const where = modelPathFor(ref);
    const local = where.path.replace(`${HERE}/`, '');
    let missing: string | null = null;
    if (where.sandbox) {
      const shipped = (where.sandbox === model.sandbox && input.modelFiles) || input.frozenModelFiles?.[where.sandbox];
      if (shipped && where.sandbox !== model.sandbox)
        for (const [name, bytes] of Object.entries(shipped)) files[`models/${where.sandbox}/${name}`] = bytes;
      if (!shipped)
        missing = `The sandbox model "${where.sandbox}" is not in this zip: copy the lab's \`public/models/${where.sandbox}/\` folder to \`${local}/\` (the CLI export ships it).`;
    }
    return { role: m.role, env: m.env, served: ref, path: local, missing };
  });
  if (spec.trl)
    files['trl_grpo.py'] = trlScript(recipe, c, {
      steps,
      batchPrompts: spec.batchPrompts(c),
      experiment,
      modelPath: model.path,
      entropyCoef: overrides['actor_rollout_ref.actor.entropy_coeff'] as number,
    });
  if (model.sandbox && input.modelFiles)
    for (const [name, bytes] of Object.entries(input.modelFiles)) files[`models/${model.sandbox}/${name}`] = bytes;
  files['README.md'] = exportReadme({
    recipe: recipe.name,
    seed,
    steps,
    gpus,
    modelRef: String(c[spec.modelField]),
    model,
    modelShipped: !!(model.sandbox && input.modelFiles),
    trainRows: trainRows.length,
    valRows: valRows.length,
    batchPrompts: spec.batchPrompts(c),
    groupSize: c.groupSize as number,
    optimiserSteps: optimiserStepsPerStep(c),
    judge: String(c.judge),
    unsupported,
    trl: spec.trl,
    trlNotes: spec.trl ? trlNotes(c) : [],
    gpuCounts: verlBatches(
      spec.batchPrompts(c),
      c.groupSize as number,
      (c.ppoMiniBatches as number | undefined) ?? 1,
      gpus,
    ).gpuCounts,
    frozen,
  });
  return { files, unsupported, overrides };
}
