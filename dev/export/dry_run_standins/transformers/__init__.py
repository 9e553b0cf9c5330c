"""Stand-in of transformers.AutoTokenizer (see README.md): the lab's token counts per chat prompt."""
import json
import os


def _key(messages):
    return "\x1f".join("%s\x1e%s" % (m["role"], m["content"]) for m in messages)


class _Tokenizer:
    def __init__(self, counts):
        self.counts = counts

    def apply_chat_template(self, messages, add_generation_prompt=False, tokenize=True, **kwargs):
        assert add_generation_prompt and tokenize and not kwargs, "RLHFDataset asks for tokens with the generation prompt"
        return list(range(self.counts[_key(messages)]))


class AutoTokenizer:
    @staticmethod
    def from_pretrained(path, **kwargs):
        table = json.load(open(os.environ["SPARRING_STANDIN_TOKENS"]))
        return _Tokenizer(table[os.path.basename(os.path.normpath(path))])
