"""Stand-in of verl.trainer.fsdp_sft_trainer.create_sft_dataset (see README.md): veRL's signature
(fsdp_sft_trainer.py:851); the dataset is the parquet's rows, read through the pyarrow stand-in, with
the prompt and response columns veRL's SFTDataset reads (data.prompt_key, data.response_key)."""
import pyarrow.parquet as pq


def create_sft_dataset(data_paths, data_config, tokenizer, max_samples=-1):
    rows = []
    for path in [data_paths] if isinstance(data_paths, str) else list(data_paths):
        rows += pq.read_table(path).to_pylist()
    for key in (data_config.prompt_key, data_config.response_key):
        if rows and key not in rows[0]:
            raise KeyError(key)
    return rows if max_samples < 0 else rows[:max_samples]
