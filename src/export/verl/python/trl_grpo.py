# TRL GRPOTrainer job of a Sparring recipe. The export writes the job's data above this text:
# MODEL (hub id or folder), GRPO_ARGS (GRPOConfig keyword arguments), LORA (peft LoraConfig).
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import reward as sparring_reward  # noqa: E402


def _text(completion):
    # Conversational datasets give a list of messages per completion; plain ones a string.
    if isinstance(completion, list):
        return completion[-1]["content"]
    return completion


def sparring_reward_func(prompts, completions, reward_model, data_source, extra_info=None, **kwargs):
    """TRL reward function: one float per completion, from reward.py (the batch form, so a group's
    completions are scored together where the reward needs the group)."""
    infos = [dict(extra_info[i]) if extra_info is not None else {} for i in range(len(completions))]
    rs = sparring_reward.compute_score_batch(list(data_source), [_text(c) for c in completions], [m["ground_truth"] for m in reward_model], infos)
    return [float(r["score"] if isinstance(r, dict) else r) for r in rs]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--adapter", help="start from the lab's exported PEFT adapter folder (unzipped)")
    args = p.parse_args()
    from datasets import load_dataset
    from peft import LoraConfig, PeftModel
    from transformers import AutoModelForCausalLM
    from trl import GRPOConfig, GRPOTrainer

    data = load_dataset("parquet", data_files={"train": os.path.join(HERE, "data/train.parquet")})["train"]
    model = MODEL if os.path.isabs(MODEL) or not os.path.exists(os.path.join(HERE, MODEL)) else os.path.join(HERE, MODEL)  # noqa: F821
    peft_config = LoraConfig(**LORA)  # noqa: F821
    if args.adapter:
        model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(model), args.adapter, is_trainable=True)
        peft_config = None
    # Checkpoints beside this script, wherever it is started from.
    grpo_args = dict(GRPO_ARGS, output_dir=os.path.join(HERE, GRPO_ARGS["output_dir"]))  # noqa: F821
    trainer = GRPOTrainer(model=model, reward_funcs=[sparring_reward_func], args=GRPOConfig(**grpo_args), train_dataset=data, peft_config=peft_config)
    trainer.train()


if __name__ == "__main__":
    main()
