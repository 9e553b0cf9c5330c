"""Stand-in of Hydra's compose API (see README.md)."""
import contextlib
import json
import os

from omegaconf import OmegaConf, open_dict

from . import errors

_DIR = []


@contextlib.contextmanager
def initialize_config_dir(config_dir, version_base=None):
    _DIR.append(config_dir)
    try:
        yield
    finally:
        _DIR.pop()


def _sections():
    path = os.path.join(os.environ["SPARRING_STANDIN_FIXTURES"], "verl-types.json")
    return json.load(open(path))["sections"]


def compose(config_name, overrides=()):
    path = os.path.join(_DIR[-1], config_name + ".yaml")
    if not os.path.exists(path):
        raise errors.MissingConfigException(
            "Cannot find primary config '%s'. Check that it's in your config search path." % config_name
        )
    cfg = OmegaConf.load(path)
    cfg.pop("hydra", None)
    cfg.pop("defaults", None)
    cfg = OmegaConf.merge(cfg, OmegaConf.from_dotlist([o.lstrip("+") for o in overrides]))
    # veRL's ppo_trainer.yaml gives each converted section its dataclass as _target_.
    for section, spec in _sections().items():
        node = OmegaConf.select(cfg, section)
        if node is not None and OmegaConf.is_dict(node):
            with open_dict(node):
                node["_target_"] = "verl.workers.config." + spec["class"]
    return cfg
