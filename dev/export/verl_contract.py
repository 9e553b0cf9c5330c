"""The contract veRL enforces on an exported job, checked without veRL (the export's contract test
drives this with python3; it needs OmegaConf, Debian's python3-omegaconf).

  python3 verl_contract.py config TYPES_JSON FILE.yaml...
      For each exported Hydra config (verl_config.yaml / verl_sft_config.yaml): OmegaConf reads it as
      veRL's Hydra would; every section veRL converts with omega_conf_to_dataclass (the fixture's
      `sections`: model, actor, rollout, critic, algorithm) is merged into a mirror of veRL's
      dataclass built from the fixture's declared field types (OmegaConf.merge(structured, cfg),
      the step that raises "Cannot convert 'ListConfig' to string" in veRL); every other key's value
      is compared with the type of veRL's YAML default. Prints {file: [errors]} as JSON.

  python3 verl_contract.py reward FOLDER CASES_JSON
      Imports FOLDER/reward.py and calls compute_score by keyword exactly as veRL's reward managers
      do (naive: data_source=, solution_str=, ground_truth=, extra_info=; batch: data_sources=,
      solution_strs=, ground_truths=, extra_infos=), and prints what each returned.

Mirrors use Dict[str, Any] for a bare `dict` (OmegaConf 2.2 refuses the bare annotation; veRL's
2.3 accepts it) and Any for types OmegaConf cannot hold (Union, Callable, classes not in the
fixture).
"""
import ast
import dataclasses
import importlib.util
import json
import sys
from typing import Any, Dict, List, Optional


def mirror_factory(classes):
    built = {}

    def conv(node):
        if isinstance(node, ast.Constant) and node.value is None:
            return type(None)
        if isinstance(node, ast.Name):
            n = node.id
            if n in ("int", "float", "str", "bool"):
                return {"int": int, "float": float, "str": str, "bool": bool}[n]
            if n in ("dict", "Dict"):
                return Dict[str, Any]
            if n in ("list", "List"):
                return List[Any]
            if n in classes:
                return build(n)
            return Any
        if isinstance(node, ast.Attribute):
            return Any
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            parts = [node.left, node.right]
            rest = [p for p in parts if not (isinstance(p, ast.Constant) and p.value is None)]
            return Optional[conv(rest[0])] if len(rest) == 1 else Any
        if isinstance(node, ast.Subscript):
            head = ast.unparse(node.value)
            args = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if head == "Optional":
                return Optional[conv(args[0])]
            if head == "Union":
                rest = [a for a in args if not (isinstance(a, ast.Constant) and a.value is None)]
                return Optional[conv(rest[0])] if len(rest) == 1 and len(args) == 2 else Any
            if head in ("list", "List"):
                return List[conv(args[0])]
            if head in ("dict", "Dict"):
                return Dict[str, conv(args[1])] if len(args) == 2 else Dict[str, Any]
            return Any
        return Any

    def fields_of(name):
        c = classes[name]
        out = {}
        for b in c["bases"]:
            if b in classes:
                out.update(fields_of(b))
        out.update(c["fields"])
        return out

    def build(name):
        if name in built:
            return built[name]
        built[name] = Any  # a cycle resolves to Any
        specs = []
        for fname, f in fields_of(name).items():
            t = conv(ast.parse(f["type"], mode="eval").body)
            if dataclasses.is_dataclass(t):
                specs.append((fname, t, dataclasses.field(default_factory=t)))
            else:
                specs.append((fname, t, dataclasses.field(default="???")))
        built[name] = dataclasses.make_dataclass("Mirror" + name, specs)
        return built[name]

    return build


def yaml_type_ok(declared, value):
    if declared in ("null", "interpolation"):
        return True
    if declared == "bool":
        return isinstance(value, bool)
    if declared == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if declared == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if declared == "str":
        return isinstance(value, str)
    if declared == "list":
        return isinstance(value, list)
    if declared == "dict":
        return isinstance(value, dict)
    if declared == "node":
        return isinstance(value, (list, dict))
    return False


def flatten(d, prefix=""):
    for k, v in d.items():
        key = prefix + str(k)
        if isinstance(v, dict) and v:
            yield from flatten(v, key + ".")
        else:
            yield key, v


def merge_section(types, build, section, node):
    """Merge a section into its class's mirror; a sub-section with a `_target_` of its own (the
    actor's optim is FSDPOptimizerConfig where the field says OptimizerConfig) into that class."""
    from omegaconf import OmegaConf

    cls = types["sections"][section]["class"]
    own = {k: v for k, v in node.items() if not (isinstance(v, dict) and section + "." + k in types["sections"])}
    errors = []
    try:
        OmegaConf.merge(OmegaConf.structured(build(cls)), OmegaConf.create(own))
    except Exception as e:  # noqa: BLE001 (OmegaConf's own message names the key)
        errors.append("%s (%s): %s" % (section, cls, str(e).splitlines()[0]))
    for k, v in node.items():
        if isinstance(v, dict) and section + "." + k in types["sections"]:
            errors.extend(merge_section(types, build, section + "." + k, v))
    return errors


def check_config(types, path, build=None):
    from omegaconf import OmegaConf

    cfg = OmegaConf.load(path)
    sft = path.endswith("verl_sft_config.yaml")
    errors = []
    plain = OmegaConf.to_container(cfg, resolve=False)
    plain.pop("hydra", None)
    plain.pop("defaults", None)
    build = build or mirror_factory(types["classes"])
    converted = set()
    if not sft:
        # The sections veRL converts to dataclasses (fsdp_workers / ray_trainer / utils/config.py).
        for section in ("actor_rollout_ref.model", "actor_rollout_ref.actor", "actor_rollout_ref.rollout", "critic", "algorithm"):
            node = plain
            for p in section.split("."):
                node = node.get(p) if isinstance(node, dict) else None
            if node is None:
                continue
            converted.add(section)
            errors.extend(merge_section(types, build, section, node))
    table = types["sft_yaml"] if sft else types["yaml"]
    for key, value in flatten(plain):
        if any(key.startswith(s + ".") for s in converted):
            continue
        d = table.get(key)
        if d is None:
            errors.append("%s: not a key of veRL's %s config" % (key, "SFT" if sft else "PPO"))
        elif not yaml_type_ok(d["type"], value):
            errors.append(
                "%s: %r is a %s; veRL's default (%s:%s) is a %s" % (key, value, type(value).__name__, d["file"], d["line"], d["type"])
            )
    return errors


def check_reward(folder, cases_path):
    sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location("reward", folder + "/reward.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    cases = json.load(open(cases_path))
    naive = [
        mod.compute_score(data_source=c["data_source"], solution_str=c["solution_str"], ground_truth=c["ground_truth"], extra_info=c["extra_info"])
        for c in cases
    ]
    batch = mod.compute_score_batch(
        data_sources=[c["data_source"] for c in cases],
        solution_strs=[c["solution_str"] for c in cases],
        ground_truths=[c["ground_truth"] for c in cases],
        extra_infos=[c["extra_info"] for c in cases],
    )
    describe = lambda r: {k: type(v).__name__ for k, v in r.items()} if isinstance(r, dict) else type(r).__name__
    return {"naive": [describe(r) for r in naive], "batch": [describe(r) for r in batch]}


if __name__ == "__main__":
    if sys.argv[1] == "config":
        types = json.load(open(sys.argv[2]))
        build = mirror_factory(types["classes"])  # the mirrors once for every file
        print(json.dumps({p: check_config(types, p, build) for p in sys.argv[3:]}))
    elif sys.argv[1] == "reward":
        print(json.dumps(check_reward(sys.argv[2], sys.argv[3])))
    else:
        raise SystemExit("usage: verl_contract.py config TYPES_JSON FILE... | reward FOLDER CASES_JSON")
