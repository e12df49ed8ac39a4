"""The loop guard: with `Limits.loop_guard`, greedy decoding writes no run of words three
times in a row; sampling is never guarded.

The rule on its own, then in the hf engine: a random tiny model made to favour " amount" falls
into word loops greedily ("amount0<answer> amount0<answer> …"), and guarded, into none."""

import pytest
import torch
from test_agent_grounding import FiguresIndex
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from workers.agent.hf_engine import HFRolloutEngine
from workers.agent.loops import ends_in_loop
from workers.agent.trajectory import MODEL, Limits, SamplingParams

LOOPS = [
    "<search>[3M 2018 | cash flow] amount amount amount",
    "[PepsiCo 2021 | cash flow] amount] amount] amount]",
    "x usd millions usd millions usd millions",
    "a b c d a b c d a b c d",
]
NOT_LOOPS = [
    "amount amount",  # twice is not a loop yet
    "[PepsiCo 2022] What is PepsiCo's capex? PepsiCo",  # a name written again
    "$1,000,000,000 and 1,000,000,000",  # a figure's digits repeat tokens, not words
    "amount amount amoun",  # the third is not written yet
    "a b c d e a b c d e a b c d e",  # a run longer than four words
    "",
]


@pytest.mark.parametrize("text", LOOPS)
def test_a_run_of_words_written_three_times_in_a_row_is_a_loop(text):
    assert ends_in_loop(text)


@pytest.mark.parametrize("text", NOT_LOOPS)
def test_repeats_that_are_no_loop(text):
    assert not ends_in_loop(text)


def word_tokenizer() -> PreTrainedTokenizerFast:
    pieces = ["[PAD]", "[UNK]", "[EOS]", "<search>", "</search>", "<answer>", "</answer>"]
    pieces += ["<results>", "</results>", " amount", " usd", " capex", *"abcdefghij0123 ?,.\n"]
    backend = Tokenizer(models.WordLevel({w: i for i, w in enumerate(pieces)}, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Split(
        Regex(r"</?\w+>|\[EOS\]| amount| usd| capex|[\s\S]"), behavior="isolated"
    )
    backend.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(
        tokenizer_object=backend, pad_token="[PAD]", unk_token="[UNK]", eos_token="[EOS]"
    )


@pytest.fixture(scope="module")
def looping_model():
    tokenizer = word_tokenizer()
    torch.manual_seed(0)
    model = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=len(tokenizer),
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=1,
            max_position_embeddings=512,
            pad_token_id=tokenizer.pad_token_id,
            eos_token_id=tokenizer.eos_token_id,
            bos_token_id=None,
        )
    )
    with torch.no_grad():  # " amount" the likeliest token after anything
        model.lm_head.bias = None
        model.lm_head.weight[tokenizer.convert_tokens_to_ids(" amount")] *= 30
    return model, tokenizer


def segments(looping_model, guarded: bool, sampling: SamplingParams) -> list[str]:
    """Each question's model text, after the prompt."""
    model, tokenizer = looping_model
    limits = Limits(max_new_tokens=24, max_result_tokens=60, loop_guard=guarded)
    engine = HFRolloutEngine(model, tokenizer, FiguresIndex(), limits=limits, system_prompt="s")
    trajectories = engine.rollout([f"capex {i} ?" for i in range(4)], sampling)
    return [
        tokenizer.decode([t for t, p in zip(tr.token_ids, tr.producers, strict=True) if p == MODEL])
        for tr in trajectories
    ]


def loops_in(text: str) -> bool:
    words = text.split()
    return any(ends_in_loop(" ".join(words[:i])) for i in range(len(words) + 1))


def test_greedy_decoding_guarded_writes_no_word_loop(looping_model):
    greedy = SamplingParams(temperature=0.0)
    unguarded = segments(looping_model, False, greedy)
    assert all(loops_in(text) for text in unguarded), unguarded

    guarded = segments(looping_model, True, greedy)
    assert all(len(text.split()) >= 6 for text in guarded), guarded  # it still writes words
    assert not any(loops_in(text) for text in guarded), guarded


def test_sampling_is_never_guarded(looping_model):
    sampled = SamplingParams(temperature=1.0, seed=3)
    assert segments(looping_model, True, sampled) == segments(looping_model, False, sampled)
