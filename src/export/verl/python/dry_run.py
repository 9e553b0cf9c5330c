# Runs what veRL runs at start-up on this job, without Ray, a GPU or a download, and fails where veRL
# would refuse the job or silently change it:
#   run.sh      its own command line (module, --config-path, --config-name, overrides), read from the file;
#   config      composed through Hydra as main_ppo / the SFT trainer compose it, every section the
#               workers convert converted with veRL's omega_conf_to_dataclass;
#   batches     veRL's validate_config and the workers' batch normalisation at each GPU count asked;
#   prompts     every parquet prompt through the job's tokenizer and chat template, as RLHFDataset
#               measures it, against data.max_prompt_length (RLHFDataset drops longer rows silently);
#   reward      reward.py called on every row with a refusal, an empty and a typical reply, as veRL's
#               reward loop calls it: the same keys on every row, a finite float score;
#   episodes    multi-turn: each episode's replies at the lab's cap (REPLY_CAP) and later user turns,
#               templated as the agent loop templates them, against data.max_response_length;
#   SFT         veRL's SFTDataset and the trainer's scheduler, its batch split.
# Where veRL (or Hydra, pyarrow, transformers) is not installed it says which checks it left out and
# runs the rest with the standard library.
#   python3 dry_run.py [--gpus 1,2,4,8] [override ...]
# The export writes CONFIG_NAME, SFT and REPLY_CAP above this text.
import copy
import importlib.util
import json
import math
import os
import shlex
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
os.environ["PWD"] = HERE  # the config's ${oc.env:PWD} paths, as run.sh sets them
sys.path.insert(0, HERE)

# Where each check comes from in veRL b178a3c (the lab's dev/fixtures/verl/verl-startup.json records
# the same lines, read from veRL's source).
AT = {
    "real_train_batch_size": "verl/utils/config.py:111",
    "mini_positive": "verl/workers/fsdp_workers.py:244",
    "micro_divides_mini": "verl/workers/fsdp_workers.py:256",
    "critic_micro_divides_mini": "verl/workers/fsdp_workers.py:1246",
    "prompt_filter": "verl/utils/dataset/rl_dataset.py:255",
    "agent_loop_stop": "verl/experimental/agent_loop/tool_agent_loop.py:254",
    "agent_loop_user_turn": "verl/experimental/agent_loop/tool_agent_loop.py:398",
    "reward_call": "verl/experimental/reward_loop/reward_manager/naive.py:67",
    "reward_batch_call": "verl/workers/reward_manager/batch.py:70",
    "reward_score_key": "verl/experimental/reward_loop/reward_manager/naive.py:90",
    "reward_extra_key_error": "verl/experimental/agent_loop/agent_loop.py:777",
    "reward_fn_missing": "verl/utils/import_utils.py:195",
    "sft_dp_divides": "verl/trainer/fsdp_sft_trainer.py:150",
    "sft_micro_divides": "verl/trainer/fsdp_sft_trainer.py:155",
    "sft_scheduler": "verl/trainer/fsdp_sft_trainer.py:370",
}
REPLIES = {
    "refusal": "I'm sorry, but I can't help with that.",
    "empty": "",
    "typical": "Sure. Here is a short, careful answer: 42. [ANSWER:A]",
}


class Report:
    def __init__(self):
        self.errors, self.skipped, self.warnings = [], [], []

    def fail(self, msg):
        self.errors.append(msg)
        print("FAIL  " + msg)

    def ok(self, msg):
        print("ok    " + msg)

    def warn(self, msg):
        self.warnings.append(msg)
        print("warn  " + msg)

    def skip(self, msg):
        self.skipped.append(msg)
        print("skip  " + msg)


def get(cfg, dotted, default=None):
    """cfg["a"]["b"] for a DictConfig or a plain dict; default where a key is absent."""
    node = cfg
    for part in dotted.split("."):
        try:
            node = node[part]
        except (KeyError, TypeError, AttributeError):
            return default
        if node is None:
            return default
    return node


def _has(module):
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


# ---- run.sh -----------------------------------------------------------------------------------
def read_run_sh(report):
    """run.sh's launch line: (module, config dir, config name, overrides), or None."""
    path = os.path.join(HERE, "run.sh")
    text = open(path).read().replace("\\\n", " ")
    for line in text.splitlines():
        try:
            words = shlex.split(line, comments=True)
        except ValueError:
            continue
        # python3 -m verl.trainer.main_ppo ... or torchrun ... -m verl.trainer.fsdp_sft_trainer ...
        at = words.index("-m") if "-m" in words else len(words)
        module = words[at + 1] if at + 1 < len(words) else ""
        if not module.startswith("verl."):
            continue
        opts, overrides, rest = {}, [], words[at + 2 :]
        i = 0
        while i < len(rest):
            w = rest[i]
            name = w.split("=", 1)[0]
            if name in ("--config-path", "--config-name", "-cp", "-cn"):
                key = "path" if name in ("--config-path", "-cp") else "name"
                if "=" in w:
                    opts[key] = w.split("=", 1)[1]
                else:
                    i += 1
                    opts[key] = rest[i]
            elif w != "$@":
                overrides.append(w)
            i += 1
        conf_dir = opts.get("path", "").replace("${PWD}", HERE).replace("$PWD", HERE)
        return module, conf_dir, opts.get("name"), overrides
    report.fail("run.sh: no `python3 -m verl...` launch line")
    return None


def check_run_sh(report):
    launch = read_run_sh(report)
    if launch is None:
        return None
    module, conf_dir, name, overrides = launch
    want = "verl.trainer.fsdp_sft_trainer" if SFT else "verl.trainer.main_ppo"  # noqa: F821 (the export's header)
    if module != want:
        report.fail("run.sh launches %s; this job is for %s" % (module, want))
    if os.path.realpath(conf_dir or ".") != os.path.realpath(HERE):
        report.fail("run.sh: --config-path=%s is not this folder" % conf_dir)
    if name is None or not os.path.exists(os.path.join(HERE, name + ".yaml")):
        # Hydra's own words for a config name it cannot find.
        report.fail("run.sh: --config-name=%s: Cannot find primary config '%s' (no %s.yaml in this folder)" % (name, name, name))
        return None
    report.ok("run.sh: python3 -m %s --config-name=%s%s" % (module, name, (" + " + " ".join(overrides)) if overrides else ""))
    return name, overrides


# ---- config -----------------------------------------------------------------------------------
def compose(report, name, overrides):
    """The job's config as run.sh composes it: Hydra where installed, else this folder's YAML read
    with the standard library (veRL's own defaults are then missing, and said so)."""
    if _has("hydra") and _has("omegaconf"):
        from hydra import compose as hydra_compose
        from hydra import initialize_config_dir
        from omegaconf import OmegaConf

        try:
            with initialize_config_dir(config_dir=HERE, version_base=None):
                cfg = hydra_compose(config_name=name, overrides=overrides)
            OmegaConf.resolve(cfg)
        except Exception as e:  # noqa: BLE001 (Hydra's and OmegaConf's messages name the key)
            report.fail("compose (Hydra): %s: %s" % (type(e).__name__, e))
            return None
        report.ok("compose: Hydra composed %s.yaml with %d override(s)" % (name, len(overrides)))
        return cfg
    report.skip("Hydra/OmegaConf not installed: read %s.yaml with the standard library, without veRL's defaults" % name)
    cfg = read_yaml(os.path.join(HERE, name + ".yaml"))
    for o in overrides:
        key, _, value = o.lstrip("+").partition("=")
        node = cfg
        for part in key.split(".")[:-1]:
            node = node.setdefault(part, {})
        node[key.split(".")[-1]] = scalar(value)
    return cfg


def scalar(text):
    t = text.strip().replace("${oc.env:PWD}", HERE)
    if t in ("", "null", "~"):
        return None
    if t in ("true", "True"):
        return True
    if t in ("false", "False"):
        return False
    for conv in (int, float):
        try:
            return conv(t)
        except ValueError:
            pass
    if t[:1] in "'\"" and t[-1:] == t[:1]:
        return t[1:-1]
    if t.startswith("[") and t.endswith("]"):
        return [scalar(x) for x in t[1:-1].split(",") if x.strip()]
    return t


def read_yaml(path):
    """The block mappings, scalars and flow lists the export writes (not general YAML)."""
    root = {}
    stack = [(-1, root)]
    for raw in open(path):
        line = raw.split(" #")[0].rstrip()
        if not line.strip() or line.lstrip().startswith(("#", "- ")):
            continue
        indent = len(line) - len(line.lstrip())
        key, _, value = line.strip().partition(":")
        while stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1]
        key = key.strip("'\"")
        if value.strip() == "":
            parent[key] = {}
            stack.append((indent, parent[key]))
        else:
            parent[key] = scalar(value)
    return root


def convert_sections(report, cfg):
    """Every section the workers convert, converted as they convert it."""
    if not _has("verl"):
        report.skip("veRL not installed: sections not converted to veRL's dataclasses (pip install verl)")
        return
    from omegaconf import OmegaConf

    from verl.utils.config import omega_conf_to_dataclass
    from verl.workers.config import HFModelConfig

    done = []
    # HFModelConfig's __post_init__ loads the tokenizer from model.path; merging into its structured
    # config is the step that checks the types (fsdp_workers.py:618 converts it the same way).
    try:
        OmegaConf.merge(OmegaConf.structured(HFModelConfig), cfg.actor_rollout_ref.model)
        done.append("model")
    except Exception as e:  # noqa: BLE001
        report.fail("actor_rollout_ref.model (HFModelConfig): %s" % str(e).splitlines()[0])
    sections = [("actor", cfg.actor_rollout_ref.actor), ("rollout", cfg.actor_rollout_ref.rollout), ("algorithm", cfg.algorithm)]
    if use_critic(cfg):
        sections.append(("critic", cfg.critic))
    for label, section in sections:
        try:
            omega_conf_to_dataclass(section)
            done.append(label)
        except Exception as e:  # noqa: BLE001 (veRL's __post_init__ messages name the value)
            report.fail("%s: %s: %s" % (label, type(e).__name__, str(e).splitlines()[0]))
    report.ok("converted with veRL's omega_conf_to_dataclass: " + ", ".join(done))


def use_critic(cfg):
    return get(cfg, "algorithm.adv_estimator") == "gae"


def use_reference(cfg):
    return bool(get(cfg, "algorithm.use_kl_in_reward") or get(cfg, "actor_rollout_ref.actor.use_kl_loss"))


# ---- batches ----------------------------------------------------------------------------------
def worker_batches(cfg, dp):
    """The FSDP workers' batch normalisation (fsdp_workers.py 241-262, 1232-1252) at `dp` ranks: veRL's messages."""
    sp = get(cfg, "actor_rollout_ref.actor.ulysses_sequence_parallel_size", 1)
    n = get(cfg, "actor_rollout_ref.rollout.n", 1)
    out = []
    roles = [("actor", get(cfg, "actor_rollout_ref.actor.ppo_mini_batch_size"), get(cfg, "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu"), "micro_divides_mini")]
    if use_critic(cfg):
        roles.append(("critic", get(cfg, "critic.ppo_mini_batch_size", roles[0][1]), get(cfg, "critic.ppo_micro_batch_size_per_gpu"), "critic_micro_divides_mini"))
    for role, mini, micro, at in roles:
        share = mini * n // (dp // sp)
        if share <= 0:
            out.append("%s: ppo_mini_batch_size %d should be larger than 0 after normalization (%s)" % (role, share, AT["mini_positive"]))
        elif micro and share % micro != 0:
            out.append(
                "%s: normalized ppo_mini_batch_size %d should be divisible by ppo_micro_batch_size_per_gpu %d (%s)" % (role, share, micro, AT[at])
            )
    return out


def check_batches(report, cfg, gpus):
    validate = None
    if _has("verl"):
        from verl.utils.config import validate_config as validate
    else:
        report.skip("veRL not installed: validate_config restated here (%s)" % AT["real_train_batch_size"])
    nodes = get(cfg, "trainer.nnodes", 1)
    for g in gpus:
        problems = []
        if validate is not None:
            at_g = copy.deepcopy(cfg)
            at_g.trainer.n_gpus_per_node = g
            try:
                validate(at_g, use_reference_policy=use_reference(cfg), use_critic=use_critic(cfg))
            except Exception as e:  # noqa: BLE001 (veRL's assertion text)
                problems.append("validate_config: %s" % e)
        else:
            real = get(cfg, "data.train_batch_size") * get(cfg, "actor_rollout_ref.rollout.n", 1)
            if real % (g * nodes):
                problems.append(
                    "real_train_batch_size (%d) must be divisible by minimal possible batch size (%d) (%s)" % (real, g * nodes, AT["real_train_batch_size"])
                )
        problems += worker_batches(cfg, g * nodes)
        for p in problems:
            report.fail("at %d GPU(s) per node: %s" % (g, p))
        if not problems:
            report.ok("batches at %d GPU(s) per node: validate_config and the workers' normalisation pass" % g)


def sft_batches(report, cfg, gpus):
    """fsdp_sft_trainer._normalize_config_bsz at each GPU count (its own messages)."""
    batch, micro = get(cfg, "data.train_batch_size"), get(cfg, "data.micro_batch_size_per_gpu")
    for g in gpus:
        dp = g * get(cfg, "trainer.nnodes", 1)
        if batch % dp:
            report.fail("at %d GPU(s): Global batch size %d is not divisible by dp size %d (%s)" % (g, batch, dp, AT["sft_dp_divides"]))
        elif (batch // dp) % micro:
            report.fail(
                "at %d GPU(s): assert self.config.data.train_batch_size %% self.config.data.micro_batch_size_per_gpu == 0 fails: %d %% %d (%s)"
                % (g, batch // dp, micro, AT["sft_micro_divides"])
            )
        else:
            report.ok("SFT batch at %d GPU(s): %d per GPU in micro-batches of %d" % (g, batch // dp, micro))


# ---- data -------------------------------------------------------------------------------------
def files_of(value):
    return [value] if isinstance(value, str) else list(value or [])


def read_rows(report, path):
    if not _has("pyarrow"):
        return None
    import pyarrow.parquet as pq

    return pq.read_table(path).to_pylist()


def load_tokenizer(report, cfg, key):
    path = get(cfg, key)
    if not _has("transformers"):
        report.skip("transformers not installed: prompt lengths not measured")
        return None
    if not os.path.isdir(str(path)):
        report.skip("%s = %s is not a folder here: prompt lengths not measured (the dry run downloads nothing)" % (key, path))
        return None
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path)


def check_prompts(report, cfg, rows_by_file):
    tok = load_tokenizer(report, cfg, "actor_rollout_ref.model.path")
    if tok is None:
        return
    limit = get(cfg, "data.max_prompt_length")
    key = get(cfg, "data.prompt_key", "prompt")
    kwargs = dict(get(cfg, "data.apply_chat_template_kwargs", {}) or {})
    for path, rows in rows_by_file.items():
        # What RLHFDataset measures (rl_dataset.py:247): the chat template with the generation prompt, tokenized.
        lengths = [len(tok.apply_chat_template(list(r[key]), add_generation_prompt=True, **kwargs)) for r in rows]
        over = sum(1 for n in lengths if n > limit)
        name = os.path.relpath(path, HERE)
        if over:
            report.fail(
                "%s: %d of %d prompts are longer than data.max_prompt_length %d (longest %d tokens): veRL's RLHFDataset keeps %d rows and drops the rest without an error (%s: doc2len(doc) <= self.max_prompt_length)"
                % (name, over, len(rows), limit, max(lengths), len(rows) - over, AT["prompt_filter"])
            )
        else:
            report.ok("%s: %d prompts, the longest %d tokens of data.max_prompt_length %d" % (name, len(rows), max(lengths), limit))
    if _has("verl.utils.dataset.rl_dataset") and _has("datasets"):
        from verl.utils.dataset.rl_dataset import RLHFDataset

        for path, rows in rows_by_file.items():
            kept = len(RLHFDataset(data_files=[path], tokenizer=tok, config=cfg.data))
            if kept != len(rows):
                report.fail("%s: veRL's RLHFDataset keeps %d of %d rows" % (os.path.relpath(path, HERE), kept, len(rows)))
            else:
                report.ok("%s: veRL's RLHFDataset keeps every row" % os.path.relpath(path, HERE))


def check_episodes(report, cfg, rows_by_file):
    """Multi-turn: which turns veRL's agent loop scores with every reply at the lab's cap. After each
    reply it adds the next user turn, templated alone (tool_agent_loop.py:398), and right after a reply
    it stops once the response holds data.max_response_length tokens, before that reply is scored (:254)."""
    episodes = [json.loads(r["extra_info"]["interaction_kwargs"]["episode"]) for rows in rows_by_file.values() for r in rows if (r.get("extra_info") or {}).get("interaction_kwargs")]
    if not episodes or not REPLY_CAP:  # noqa: F821 (the export's header)
        return
    tok = load_tokenizer(report, cfg, "actor_rollout_ref.model.path")
    if tok is None:
        return
    limit = get(cfg, "data.max_response_length")
    max_assistant = get(cfg, "actor_rollout_ref.rollout.multi_turn.max_assistant_turns") or 10**9
    max_user = get(cfg, "actor_rollout_ref.rollout.multi_turn.max_user_turns") or 10**9
    short, worst = 0, None
    for ep in episodes:
        turns, response, scored = ep["turns"], 0, 0
        for k, user in enumerate(turns):
            if k > 0:
                response += len(tok.apply_chat_template([{"role": "user", "content": user}], add_generation_prompt=True))
            response += REPLY_CAP  # noqa: F821
            # After reply k+1 the loop has k user turns from the interaction (:254-259).
            if response >= limit or k + 1 >= max_assistant or k >= max_user:
                break
            scored += 1
        if scored < len(turns):
            short += 1
            worst = min(worst or (scored, len(turns)), (scored, len(turns)))
    if short:
        report.warn(
            "multi-turn: with every reply at the lab's cap of %d tokens, %d of %d episodes end before their last turn is scored (data.max_response_length %d; %s, %s): the README says why"
            % (REPLY_CAP, short, len(episodes), limit, AT["agent_loop_stop"], AT["agent_loop_user_turn"])  # noqa: F821
        )
    else:
        report.ok("multi-turn: all %d episodes score every turn with replies at the lab's cap of %d tokens (data.max_response_length %d)" % (len(episodes), REPLY_CAP, limit))  # noqa: F821


def reward_function(report, cfg):
    path, name = get(cfg, "custom_reward_function.path"), get(cfg, "custom_reward_function.name", "compute_score")
    spec = importlib.util.spec_from_file_location("reward", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fn = getattr(module, name, None)
    if not callable(fn):
        # load_extern_object's words (veRL's get_custom_reward_fn loads reward.py through it).
        report.fail("Object not found in module: object_name=%r, module_path=%r. (%s)" % (name, path, AT["reward_fn_missing"]))
        return None
    return fn


def reward_calls(fn, batch, rows, reply):
    """reward.py on `rows` with one reply, as veRL calls it: one keyword call per row (the reward
    loop, naive.py:44-72: the row's extra_info plus num_turns and rollout_reward_scores), or one call
    with lists (reward_manager=batch, batch.py:64-75). Returns one result per row."""
    extras = []
    for row in rows:
        extra = dict(row.get("extra_info") or {})
        if not batch:
            extra["num_turns"] = 2
        extra["rollout_reward_scores"] = {}
        extras.append(extra)
    truths = [row["reward_model"]["ground_truth"] for row in rows]
    sources = [row["data_source"] for row in rows]
    if batch:
        return list(fn(data_sources=sources, solution_strs=[reply] * len(rows), ground_truths=truths, extra_infos=extras))
    return [fn(data_source=s, solution_str=reply, ground_truth=t, extra_info=e) for s, t, e in zip(sources, truths, extras)]


def check_reward(report, cfg, rows_by_file):
    fn = reward_function(report, cfg)
    if fn is None or not rows_by_file:
        return
    batch = get(cfg, "reward_model.reward_manager") == "batch"
    how = "one batch call per file and reply (%s)" % AT["reward_batch_call"] if batch else "one keyword call per row (%s)" % AT["reward_call"]
    first_keys, first_at, calls = None, None, 0
    for path, rows in rows_by_file.items():
        name = os.path.relpath(path, HERE)
        for kind, reply in REPLIES.items():
            try:
                results = reward_calls(fn, batch, rows, reply)
            except Exception as e:  # noqa: BLE001
                if isinstance(e, RuntimeError) and "SPARRING_" in str(e) and "_URL" in str(e):
                    report.skip("reward.py on the rows: %s" % e)
                    return
                report.fail("reward.py raised on %s with the %s reply: %s: %s" % (name, kind, type(e).__name__, e))
                return
            if len(results) != len(rows):
                report.fail("reward.py returned %d results for %d rows of %s" % (len(results), len(rows), name))
                return
            for i, result in enumerate(results):
                calls += 1
                where = "%s row %d, %s reply" % (name, i, kind)
                if isinstance(result, dict):
                    if "score" not in result:
                        report.fail("%s: reward.py's dict has no 'score': veRL reads result[\"score\"] (%s)" % (where, AT["reward_score_key"]))
                        return
                    score, keys = result["score"], sorted(result)
                else:
                    score, keys = result, ["acc"]
                if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
                    report.fail("%s: score %r is not a finite float" % (where, score))
                    return
                if first_keys is None:
                    first_keys, first_at = keys, where
                elif keys != first_keys:
                    missing = sorted(set(first_keys) - set(keys))
                    what = "KeyError: %r" % missing[0] if missing else "no error but drops %s" % sorted(set(keys) - set(first_keys))
                    report.fail(
                        "%s returns keys %s, %s returns %s: veRL's agent loop takes the batch's keys from its first row and raises %s (%s: non_tensor_batch[key] = np.array([info[key] for info in reward_extra_infos]))"
                        % (where, keys, first_at, first_keys, what, AT["reward_extra_key_error"])
                    )
                    return
    report.ok("reward.py: %d results (every row x refusal, empty, typical reply; %s): keys %s on each, finite float scores" % (calls, how, first_keys))


# ---- SFT --------------------------------------------------------------------------------------
def check_sft(report, cfg, gpus):
    sched = get(cfg, "optim.lr_scheduler", "cosine")
    if sched not in ("cosine", "wsd"):
        report.fail("Unknown lr scheduler: %s (%s)" % (sched, AT["sft_scheduler"]))
    sft_batches(report, cfg, gpus)
    if not (_has("verl.trainer.fsdp_sft_trainer") and _has("verl.utils.torch_functional") and _has("torch")):
        report.skip("veRL/torch not installed: SFTDataset and the scheduler not built")
        return
    tok = load_tokenizer(report, cfg, "model.partial_pretrain")
    if tok is None:
        return
    import torch

    from verl.trainer.fsdp_sft_trainer import create_sft_dataset
    from verl.utils.torch_functional import get_cosine_schedule_with_warmup, get_wsd_schedule_with_warmup

    try:
        ds = create_sft_dataset(cfg.data.train_files, cfg.data, tok)
        report.ok("veRL's SFT dataset: %d rows" % len(ds))
        steps = len(ds) // get(cfg, "data.train_batch_size") * get(cfg, "trainer.total_epochs", 1)
        opt = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))], lr=get(cfg, "optim.lr"))
        warm = int(steps * get(cfg, "optim.lr_warmup_steps_ratio", 0))
        make = get_wsd_schedule_with_warmup if sched == "wsd" else get_cosine_schedule_with_warmup
        make(optimizer=opt, num_warmup_steps=warm, num_training_steps=steps)
        report.ok("veRL's %s scheduler over %d steps" % (sched, steps))
    except Exception as e:  # noqa: BLE001
        report.fail("SFT dataset / scheduler: %s: %s" % (type(e).__name__, e))


# ---- main -------------------------------------------------------------------------------------
def parse_args(argv):
    gpus, overrides = None, []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--gpus" or a.startswith("--gpus="):
            value = a.split("=", 1)[1] if "=" in a else argv[i + 1]
            i += 0 if "=" in a else 1
            gpus = [int(g) for g in value.split(",")]
        else:
            overrides.append(a)
        i += 1
    return gpus, overrides


def main(argv):
    report = Report()
    gpus, cli = parse_args(argv)
    launch = check_run_sh(report)
    if launch is not None:
        name, overrides = launch
        cfg = compose(report, name, overrides + cli)
        if cfg is not None:
            gpus = gpus or [get(cfg, "trainer.n_gpus_per_node", 1)]
            if SFT:  # noqa: F821
                check_sft(report, cfg, gpus)
            else:
                convert_sections(report, cfg)
                check_batches(report, cfg, gpus)
                rows = {}
                for f in files_of(get(cfg, "data.train_files")) + files_of(get(cfg, "data.val_files")):
                    r = read_rows(report, f)
                    if r is not None:
                        rows[f] = r
                if not rows:
                    report.skip("pyarrow not installed: the parquet's prompts and reward.py on its rows not checked")
                else:
                    check_prompts(report, cfg, rows)
                    check_episodes(report, cfg, rows)
                check_reward(report, cfg, rows)
    if report.errors:
        print("dry run: %d problem(s): veRL would refuse this job or change it silently" % len(report.errors))
        return 1
    what = "SFT" if SFT else "veRL"  # noqa: F821
    said = ["%d check(s) left out: see skip lines" % len(report.skipped)] if report.skipped else []
    said += ["%d warning(s): see warn lines" % len(report.warnings)] if report.warnings else []
    print("dry run: %s config OK%s" % (what, " (%s)" % "; ".join(said) if said else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
