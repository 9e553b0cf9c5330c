# Checks this export's veRL job on a machine with veRL installed, without Ray, GPUs or the model:
# composes the Hydra config as run.sh would (veRL's own config files + this folder's overrides),
# converts every section veRL converts at start-up with veRL's omega_conf_to_dataclass, runs
# veRL's validate_config (batch sizes for the configured GPU count), and imports the reward
# function. Extra Hydra overrides (e.g. trainer.n_gpus_per_node=8) go on the command line:
#   python3 dry_run.py [override ...]
# The export writes CONFIG_NAME and SFT above this text.
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
os.environ["PWD"] = HERE  # the config's ${oc.env:PWD} paths, as run.sh sets them
sys.path.insert(0, HERE)


def main(overrides):
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from verl.utils.config import omega_conf_to_dataclass

    with initialize_config_dir(config_dir=HERE, version_base=None):
        cfg = compose(config_name=CONFIG_NAME, overrides=overrides)  # noqa: F821 (the export's header)
    OmegaConf.resolve(cfg)
    if SFT:  # noqa: F821
        # fsdp_sft_trainer reads its config as it is; its scheduler and batch checks, as it makes them.
        assert cfg.optim.lr_scheduler in ("cosine", "wsd"), cfg.optim.lr_scheduler
        gpus = cfg.trainer.n_gpus_per_node * cfg.trainer.nnodes
        assert cfg.data.train_batch_size % gpus == 0, "data.train_batch_size must divide by the GPU count"
        assert (cfg.data.train_batch_size // gpus) % cfg.data.micro_batch_size_per_gpu == 0, "micro-batch must divide each GPU's share"
        print("dry run: SFT config OK")
        return
    from verl.utils.config import validate_config
    from verl.workers.config import HFModelConfig

    # HFModelConfig's __post_init__ loads the tokenizer from model.path; merging into its structured
    # config is the step that checks the types (fsdp_workers.py _build_rollout converts it the same way).
    OmegaConf.merge(OmegaConf.structured(HFModelConfig), cfg.actor_rollout_ref.model)
    for section in (cfg.actor_rollout_ref.actor, cfg.actor_rollout_ref.rollout, cfg.algorithm):
        omega_conf_to_dataclass(section)
    use_critic = cfg.algorithm.adv_estimator == "gae"
    if use_critic:
        omega_conf_to_dataclass(cfg.critic)
    validate_config(cfg, use_reference_policy=True, use_critic=use_critic)
    import importlib.util

    spec = importlib.util.spec_from_file_location("reward", cfg.custom_reward_function.path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert callable(getattr(module, cfg.custom_reward_function.name)), cfg.custom_reward_function.name
    print("dry run: veRL config OK (model, actor, rollout, algorithm%s converted; batch sizes valid for %d GPU(s))" % (", critic" if use_critic else "", cfg.trainer.n_gpus_per_node * cfg.trainer.nnodes))


if __name__ == "__main__":
    main(sys.argv[1:])
