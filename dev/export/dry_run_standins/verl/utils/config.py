"""Stand-in of verl.utils.config (see README.md): conversion into mirrors of veRL's dataclasses and
validate_config's batch assertion, with the messages read from veRL's source (the fixtures)."""
import json
import os
import re
import sys
import types as _types

from omegaconf import OmegaConf

FIX = os.environ["SPARRING_STANDIN_FIXTURES"]
sys.path.insert(0, os.path.join(FIX, "..", "..", "export"))
from verl_contract import mirror_factory  # noqa: E402

TYPES = json.load(open(os.path.join(FIX, "verl-types.json")))
POINTS = json.load(open(os.path.join(FIX, "verl-startup.json")))["points"]
BUILD = mirror_factory(TYPES["classes"])


def _fstring(point, **names):
    """The f-string of a recorded source line, formatted with `names` (veRL's message as written)."""
    src = re.search(r'f"[^"]*"', POINTS[point]["source"]).group(0)
    return eval(src, {}, names)  # noqa: S307 (a fixture line of veRL's source, formatted)


def omega_conf_to_dataclass(config, dataclass_type=None):
    node = OmegaConf.to_container(config, resolve=True)
    cls = node.pop("_target_").rsplit(".", 1)[-1] if dataclass_type is None else dataclass_type.__name__.replace("Mirror", "")
    own = {k: v for k, v in node.items() if not (isinstance(v, dict) and "_target_" in v)}
    for v in node.values():
        if isinstance(v, dict) and "_target_" in v and v["_target_"].rsplit(".", 1)[-1] in TYPES["classes"]:
            omega_conf_to_dataclass(OmegaConf.create(v))
    if cls in TYPES["classes"]:
        OmegaConf.merge(OmegaConf.structured(BUILD(cls)), OmegaConf.create(own))
    # ActorConfig.__post_init__ (actor.py:198): the aggregation modes it accepts.
    if "loss_agg_mode" in own and cls.endswith("ActorConfig"):
        if own["loss_agg_mode"] not in TYPES["allowed"]["actor_rollout_ref.actor.loss_agg_mode"]["values"]:
            raise ValueError(_fstring("loss_agg_mode", self=_types.SimpleNamespace(**own)))
    return own


def validate_config(config, use_reference_policy, use_critic):
    n_gpus = config.trainer.n_gpus_per_node * config.trainer.nnodes
    real_train_batch_size = config.data.train_batch_size * config.actor_rollout_ref.rollout.n
    minimal_bsz = n_gpus
    assert real_train_batch_size % minimal_bsz == 0, _fstring(
        "real_train_batch_size", real_train_batch_size=real_train_batch_size
    ) + "(%d)" % minimal_bsz
