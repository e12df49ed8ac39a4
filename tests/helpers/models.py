"""Tiny random Llamas and word-level tokenizers, small enough to train on a CPU in seconds."""

import string

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

# The decoding tests' shape (tests/engine/test_agent_greedy_rules.py, test_agent_grounding.py,
# test_agent_gpu.py): their random models' word loops and likeliest figures are what this
# shape's weights at seed 0 make them, so they keep it.
ONE_LAYER = dict(hidden_size=32, intermediate_size=64, layers=1, heads=2, kv_heads=1)


def tiny_llama(
    vocab: PreTrainedTokenizerFast | int,
    *,
    hidden_size: int = 64,
    intermediate_size: int = 128,
    layers: int = 2,
    heads: int = 4,
    kv_heads: int = 2,
    max_positions: int = 1024,
) -> LlamaForCausalLM:
    """A random Llama, the same for the same torch seed. `vocab` is a tokenizer (its size,
    padding and end tokens; no beginning token) or a vocabulary size (LlamaConfig's ids)."""
    if isinstance(vocab, int):
        size, special = vocab, {}
    else:
        size = len(vocab)
        special = dict(
            pad_token_id=vocab.pad_token_id, eos_token_id=vocab.eos_token_id, bos_token_id=None
        )
    return LlamaForCausalLM(
        LlamaConfig(
            vocab_size=size,
            hidden_size=hidden_size,
            intermediate_size=intermediate_size,
            num_hidden_layers=layers,
            num_attention_heads=heads,
            num_key_value_heads=kv_heads,
            max_position_embeddings=max_positions,
            **special,
        )
    )


def tag_tokenizer(pieces: list[str], pattern: str = "") -> PreTrainedTokenizerFast:
    """A word-level tokenizer over the protocol's tags and `pieces`, splitting text into the
    tags, then the words `pattern` matches, then single characters."""
    vocab = ["[PAD]", "[UNK]", "[EOS]", "<search>", "</search>", "<answer>", "</answer>"]
    vocab += ["<results>", "</results>", *pieces]
    backend = Tokenizer(models.WordLevel({w: i for i, w in enumerate(vocab)}, unk_token="[UNK]"))
    split = "|".join(p for p in (r"</?\w+>|\[EOS\]", pattern, r"[\s\S]") if p)
    backend.pre_tokenizer = pre_tokenizers.Split(Regex(split), behavior="isolated")
    backend.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(
        tokenizer_object=backend, pad_token="[PAD]", unk_token="[UNK]", eos_token="[EOS]"
    )


def char_tokenizer() -> PreTrainedTokenizerFast:
    return tag_tokenizer(
        sorted(set(string.ascii_letters + string.digits + string.punctuation + " \n"))
    )


def word_tokenizer() -> PreTrainedTokenizerFast:
    words = [" amount", " usd", " capex"]
    return tag_tokenizer([*words, *"abcdefghij0123 ?,.\n"], "|".join(words))
