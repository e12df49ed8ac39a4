"""The batched hf rollout engine, driven by a tiny model that memorized a few scripts.

The model (2 layers, hidden 64, a word-level tokenizer built here) is trained for a few
seconds on the exact token sequences the engine builds for each scripted question, so
greedy decoding replays the script: search, read results, answer, or break a rule.
"""

import os
from dataclasses import dataclass

import pytest
import torch
from tokenizers import Regex, Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

from engine.agent.greedy_rules import unruled
from engine.agent.hf_engine import HFRolloutEngine
from engine.agent.protocol import SEARCH_CLOSE
from engine.agent.trajectory import (
    MODEL,
    PROMPT,
    TOOL,
    Limits,
    SamplingParams,
    SearchCall,
    Trajectory,
)
from engine.documents.chunking import Chunk
from engine.search.index import SearchIndex
from tests.helpers.decoding import Hit
from tests.helpers.models import tiny_llama

# question -> model segments, in order ([EOS] ends a segment at end-of-sequence)
SCRIPTS = {
    "what is alpha": ["<search> alpha beta </search>", "<answer> forty two </answer>"],
    "bad call": ["alpha </search>", "<answer> one </answer>"],
    "keep looking": [
        "<search> alpha </search>",
        "<search> beta </search>",
        "<search> gamma </search>",
        "<answer> two </answer>",
    ],
    "just talk": ["forty two is it [EOS]"],
    "ramble": ["alpha beta gamma delta " * 6 + "<answer> three </answer>"],
}
# The echo script has its own question: under one prompt, two scripts would be a coin toss.
ECHO_QUESTION, ECHO_ANSWER = "what is gamma", "forty two </answer>"
GREEDY = SamplingParams(temperature=0.0)
SYSTEM = "search then answer"  # short: the tiny model learns faster


class FakeIndex:
    """Returns chunks whose ids name the query, so tests can see what was searched."""

    def search(self, query: str, k: int = 5, question: str = "") -> list[Hit]:
        word = query.split()[0]
        return [Hit(f"{word}-{i}", f"{word} beta gamma delta") for i in range(k)]


def build_tokenizer() -> PreTrainedTokenizerFast:
    words = " ".join(list(SCRIPTS) + [s for v in SCRIPTS.values() for s in v])
    words += f" {SYSTEM} [ ] | page 1 doc error : . write query <results> </results> no results try"
    words += " other the documents may name it differently alpha-0 alpha-1 beta-0 beta-1"
    words += " gamma-0 gamma-1 what-0 what-1 question"
    pieces = ["[PAD]", "[UNK]", "[EOS]"] + sorted(set(words.replace("[EOS]", "").split()))
    backend = Tokenizer(models.WordLevel({w: i for i, w in enumerate(pieces)}, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.WhitespaceSplit(),
            pre_tokenizers.Split(Regex(r"</?\w+>|\[EOS\]|[\w-]+|[^\w\s]"), behavior="isolated"),
        ]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=backend, pad_token="[PAD]", unk_token="[UNK]", eos_token="[EOS]"
    )


def scripted_trajectory(engine: HFRolloutEngine, question: str, echo: bool) -> Trajectory:
    """The token sequence the engine builds when the model follows the script."""
    trajectory = Trajectory(question=question)
    trajectory.append(engine.prompt_ids(question), PROMPT)
    if echo:
        engine._echo_search(trajectory, 2)
        segments = [ECHO_ANSWER]
    else:
        segments = SCRIPTS[question]
    for text in segments:
        eos = text.endswith("[EOS]")
        ids = engine._encode(text.replace("[EOS]", "")) + ([engine.pad_id + 2] if eos else [])
        engine._after_segment(trajectory, ids, [0.0] * len(ids), ended_by_eos=eos)
    return trajectory


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Tiny tensors: thread start-up costs more than it saves, worst on a busy machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def engine(one_thread) -> HFRolloutEngine:
    torch.manual_seed(0)
    tokenizer = build_tokenizer()
    model = tiny_llama(tokenizer, max_positions=512)
    engine = HFRolloutEngine(
        model,
        tokenizer,
        FakeIndex(),
        system_prompt=SYSTEM,
        limits=Limits(max_turns=4, max_new_tokens=64, results_per_search=2),
    )
    sequences = [scripted_trajectory(engine, q, echo=False).token_ids for q in SCRIPTS]
    sequences.append(scripted_trajectory(engine, ECHO_QUESTION, echo=True).token_ids)
    width = max(map(len, sequences))
    ids = torch.full((len(sequences), width), tokenizer.pad_token_id)
    labels = torch.full((len(sequences), width), -100)
    for row, seq in enumerate(sequences):
        ids[row, : len(seq)] = labels[row, : len(seq)] = torch.tensor(seq)
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-2)
    for _ in range(400):
        loss = model(input_ids=ids, attention_mask=(labels != -100).long(), labels=labels).loss
        if loss.item() < 0.01:
            break
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert loss.item() < 0.05, "the tiny model failed to memorize its scripts"
    return engine


def run(engine, question, **kwargs):
    return engine.rollout([question], GREEDY, **kwargs)[0]


def test_generation_stops_at_search_and_the_results_follow_as_tool_tokens(engine):
    trajectory = run(engine, "what is alpha")
    first_model = [i for i, p in enumerate(trajectory.producers) if p == MODEL]
    segment_end = next(
        i
        for i in first_model
        if i + 1 < len(trajectory.producers) and trajectory.producers[i + 1] == TOOL
    )
    written = engine.tokenizer.decode(trajectory.token_ids[first_model[0] : segment_end + 1])
    assert written.endswith(SEARCH_CLOSE)
    assert trajectory.searches[0].query == "alpha beta"
    assert trajectory.searches[0].chunk_ids == ["alpha-0", "alpha-1"]


def test_a_trajectory_that_searched_then_answered_finishes_with_the_answer(engine):
    trajectory = run(engine, "what is alpha")
    assert (trajectory.finish_reason, trajectory.answer) == ("answer", "forty two")


def test_only_model_tokens_are_in_the_loss_mask(engine):
    trajectory = run(engine, "what is alpha")
    assert trajectory.loss_mask == [int(p == MODEL) for p in trajectory.producers]
    assert {PROMPT, MODEL, TOOL} <= set(trajectory.producers)


def test_model_tokens_carry_the_log_probs_they_were_sampled_with(engine):
    trajectory = engine.rollout(["what is alpha"], SamplingParams(temperature=1.0, seed=3))[0]
    ids = torch.tensor([trajectory.token_ids])
    with torch.no_grad():
        logprobs = torch.log_softmax(engine.model(input_ids=ids).logits[0, :-1].float(), -1)
    recomputed = logprobs.gather(1, ids[0, 1:, None])[:, 0]
    for i, producer in enumerate(trajectory.producers):
        if producer == MODEL:
            assert trajectory.logprobs[i] == pytest.approx(recomputed[i - 1].item(), abs=1e-3)
        else:
            assert trajectory.logprobs[i] == 0.0


def test_tool_output_is_appended_as_tokens_not_retokenized(engine):
    trajectory = run(engine, "what is alpha")
    expected = scripted_trajectory(engine, "what is alpha", echo=False)
    assert trajectory.token_ids == expected.token_ids


def test_batched_rollouts_equal_rollouts_run_alone(engine):
    questions = list(SCRIPTS)
    together = engine.rollout(questions, GREEDY)
    alone = [run(engine, q) for q in questions]
    assert [t.token_ids for t in together] == [t.token_ids for t in alone]


def test_the_same_seed_gives_the_same_trajectories(engine):
    sampling = SamplingParams(temperature=1.5, top_p=0.9, seed=7)
    first = engine.rollout(list(SCRIPTS), sampling)
    second = engine.rollout(list(SCRIPTS), sampling)
    assert [t.token_ids for t in first] == [t.token_ids for t in second]


def test_too_many_searches_end_the_trajectory_with_max_turns(engine):
    limited = HFRolloutEngine(
        engine.model,
        engine.tokenizer,
        FakeIndex(),
        system_prompt=SYSTEM,
        limits=Limits(max_turns=2, results_per_search=2),
    )
    trajectory = run(limited, "keep looking")
    assert trajectory.finish_reason == "max_turns"
    assert [s.query for s in trajectory.searches] == ["alpha", "beta"]


def test_running_out_of_new_tokens_ends_with_max_tokens(engine):
    limited = HFRolloutEngine(
        engine.model,
        engine.tokenizer,
        FakeIndex(),
        system_prompt=SYSTEM,
        limits=Limits(max_new_tokens=10, results_per_search=2),
    )
    trajectory = run(limited, "ramble")
    assert trajectory.finish_reason == "max_tokens"
    assert trajectory.model_tokens == 10


def _turns_cut_at(engine, max_turn_tokens, **limits):
    return HFRolloutEngine(
        engine.model,
        engine.tokenizer,
        FakeIndex(),
        system_prompt=SYSTEM,
        limits=Limits(max_turn_tokens=max_turn_tokens, results_per_search=2, **limits),
    )


def test_a_query_cut_at_the_turn_limit_is_closed_by_the_engine_and_run(engine):
    whole = run(engine, "what is alpha")
    # "<search> alpha beta" is three tokens: the engine writes "</search>" for the model.
    cut = run(_turns_cut_at(engine, 3), "what is alpha")
    assert [s.query for s in cut.searches] == ["alpha beta"]
    assert cut.token_ids == whole.token_ids  # what the model saw is the same...
    closed = cut.token_ids.index(engine.tokenizer.convert_tokens_to_ids(SEARCH_CLOSE))
    assert whole.producers[closed] == MODEL and cut.producers[closed] == TOOL  # ...not who wrote it
    assert cut.loss_mask[closed] == 0
    # and the answer, "<answer> forty two" cut the same way, is taken as written
    assert (cut.finish_reason, cut.answer) == ("answer", "forty two")
    assert cut.model_tokens == 6


def test_the_turn_limit_closes_an_answer_the_echo_harness_opened(engine):
    trajectory = run(_turns_cut_at(engine, 2), ECHO_QUESTION, echo_k=2)
    assert (trajectory.finish_reason, trajectory.answer) == ("answer", "forty two")


def test_a_turn_cut_with_no_tag_open_still_ends_with_max_tokens(engine):
    trajectory = run(_turns_cut_at(engine, 10, max_new_tokens=40), "ramble")
    assert trajectory.finish_reason == "max_tokens"
    assert trajectory.model_tokens == 10


def _limited(engine, max_result_tokens):
    return HFRolloutEngine(
        engine.model,
        engine.tokenizer,
        FakeIndex(),
        system_prompt=SYSTEM,
        limits=Limits(max_result_tokens=max_result_tokens, results_per_search=2),
    )


def _first_tool_run(trajectory) -> int:
    count = 0
    for producer in trajectory.producers[trajectory.prompt_length :]:
        if producer != TOOL and count:
            break
        count += producer == TOOL
    return count


def test_results_longer_than_the_limit_are_cut_with_an_equal_share_per_hit(engine):
    # <results> and </results> take a token each: 12 left, 6 per hit, enough for each
    # hit's header "[ alpha-i ] doc" but not for all of its text.
    trajectory = run(_limited(engine, 14), "what is alpha")
    assert _first_tool_run(trajectory) == 14
    assert trajectory.searches[0].truncated
    assert trajectory.searches[0].chunk_ids == ["alpha-0", "alpha-1"]
    results = trajectory.text.split("<results>")[1].split("</results>")[0]
    assert "alpha-1" in results and "delta" not in results


def test_a_hit_whose_header_was_cut_does_not_count_as_shown(engine):
    # 3 tokens of room between the tags: one per hit, the odd one left unused.
    trajectory = run(_limited(engine, 5), "what is alpha")
    assert _first_tool_run(trajectory) == 4
    assert trajectory.searches[0].truncated
    assert trajectory.searches[0].chunk_ids == []


def test_a_search_shows_only_hits_the_trajectory_has_not_shown_yet(engine):
    trajectory = Trajectory(question="what is alpha")
    for _ in range(3):
        engine.run_search(trajectory, "alpha again", 2)
    # The same query again shows the next results, not the same ones (protocol 4).
    assert [s.chunk_ids for s in trajectory.searches] == [
        ["alpha-0", "alpha-1"],
        ["alpha-2", "alpha-3"],
        ["alpha-4", "alpha-5"],
    ]
    told = []
    engine.on_results = lambda query, hits: told.append((query, [h.chunk_id for h in hits]))
    try:
        engine.run_search(trajectory, "beta", 2)
    finally:
        engine.on_results = None
    assert trajectory.searches[-1].chunk_ids == ["beta-0", "beta-1"]
    assert told == [("beta", ["beta-0", "beta-1"])]  # what a live view shows: the hits shown


def test_a_malformed_call_is_reported_to_the_model_which_goes_on(engine):
    trajectory = run(engine, "bad call")
    assert trajectory.malformed_calls == 1
    assert "error" in trajectory.text
    assert (trajectory.finish_reason, trajectory.answer) == ("answer", "one")


def test_ending_without_an_answer_is_recorded_as_no_answer(engine):
    trajectory = run(engine, "just talk")
    assert (trajectory.finish_reason, trajectory.answer) == ("no_answer", None)


def test_echo_searches_the_question_and_the_model_only_answers(engine):
    trajectory = run(engine, ECHO_QUESTION, echo_k=2)
    assert trajectory.searches[0].query == ECHO_QUESTION
    assert (trajectory.finish_reason, trajectory.answer) == ("answer", "forty two")
    written = [
        t for t, p in zip(trajectory.token_ids, trajectory.producers, strict=True) if p == MODEL
    ]
    assert engine.tokenizer.decode(written) == ECHO_ANSWER


def test_a_trajectory_converts_to_the_rewards_input(engine):
    trajectory = run(engine, "what is alpha")

    @dataclass
    class Question:
        question: str = "what is alpha"
        answer: str = "42"
        golden_chunk_ids: tuple = ("alpha-1",)

    inp = trajectory.to_reward_input(Question())
    assert (inp.answer, inp.searches, inp.finish_reason) == ("forty two", 1, "answer")
    assert inp.retrieved_chunk_ids == ["alpha-0", "alpha-1"]
    assert inp.golden_chunk_ids == ["alpha-1"]


# -- the kept cache: same trajectories as re-prefilling everything every round -------------


def _reprefill(engine, **kwargs):
    """The engine before the kept cache (it lives in the bench as its baseline)."""
    from bench.rollout_throughput import ReprefillEngine

    settings = dict(system_prompt=engine.system_prompt, limits=engine.limits) | kwargs
    return ReprefillEngine(engine.model, engine.tokenizer, FakeIndex(), **settings)


def _same_trajectories(new, old):
    assert [t.token_ids for t in new] == [t.token_ids for t in old]
    assert [t.producers for t in new] == [t.producers for t in old]
    assert [t.finish_reason for t in new] == [t.finish_reason for t in old]
    for a, b in zip(new, old, strict=True):
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-4)


# Rows that finish at rounds 1, 2, 2, 2 and 4, four samples of one question among them.
MIXED = ["just talk", "what is alpha", "bad call", "ramble"] + ["keep looking"] * 4


@pytest.mark.parametrize(
    "sampling",
    [GREEDY, SamplingParams(temperature=1.0, seed=11), SamplingParams(1.3, top_p=0.9, seed=5)],
    ids=["greedy", "sampled", "top-p"],
)
def test_the_kept_cache_gives_the_trajectories_of_a_full_reprefill(engine, sampling):
    new = engine.rollout(MIXED, sampling)
    old = _reprefill(engine).rollout(MIXED, sampling)
    _same_trajectories(new, old)
    rounds = {len(t.searches) for t in new}
    assert len(rounds) >= 3, "the rows should finish at different rounds"


def test_samples_of_one_question_differ_and_match_the_reprefill_engine(engine):
    # A question the model was not trained on: on a trained one the tiny model is so sure of
    # its script that four samples can all be the script (transformers 5.25's model is).
    sampling = SamplingParams(temperature=2.0, seed=3)
    new = engine.rollout(["tell me about gamma"] * 4, sampling)
    old = _reprefill(engine).rollout(["tell me about gamma"] * 4, sampling)
    _same_trajectories(new, old)
    assert len({tuple(t.token_ids) for t in new}) > 1


def test_a_long_shared_system_prompt_is_prefilled_once_and_changes_nothing(engine):
    system = " ".join([SYSTEM] * 8)  # 24 tokens shared by every prompt
    questions = ["what is alpha", "bad call", "what is alpha", "keep looking"]
    sampling = SamplingParams(temperature=1.0, seed=2)
    new_engine = HFRolloutEngine(
        engine.model, engine.tokenizer, FakeIndex(), system_prompt=system, limits=engine.limits
    )
    prefills = []
    hook = engine.model.register_forward_pre_hook(
        lambda _m, _a, kw: prefills.append(kw["input_ids"].shape), with_kwargs=True
    )
    try:
        new = new_engine.rollout(questions, sampling)
    finally:
        hook.remove()
    _same_trajectories(new, _reprefill(engine, system_prompt=system).rollout(questions, sampling))
    prompts = list(dict.fromkeys(tuple(new_engine.prompt_ids(q)) for q in questions))
    shared = len(os.path.commonprefix(prompts))
    assert shared >= 16
    # The first forward passes: the shared prefix once, then each distinct prompt's rest.
    first = prefills[: 1 + len(prompts)]
    assert [s[1] for s in first] == [shared] + [len(p) - shared for p in prompts]
    assert all(s[0] == 1 for s in first)


def test_each_token_runs_through_the_model_once(engine):
    """Later rounds prefill only the new tokens: nothing is computed twice."""
    forwarded = []
    hook = engine.model.register_forward_pre_hook(
        lambda _m, _a, kw: forwarded.append(kw["input_ids"].numel()), with_kwargs=True
    )
    try:
        trajectory = run(engine, "keep looking")
    finally:
        hook.remove()
    assert len(trajectory.searches) == 3
    # Every token but the last sampled one is fed to the model, each exactly once.
    assert sum(forwarded) == len(trajectory.token_ids) - 1


def test_a_finished_trajectory_releases_its_cache(engine, monkeypatch):
    rounds = []
    original = engine._round

    def spy(trajectories, generators, sampling):
        original(trajectories, generators, sampling)
        rounds.append([(t.finished, id(t.token_ids) in engine.kept) for t in trajectories])

    monkeypatch.setattr(engine, "_round", spy)
    engine.rollout(["just talk", "what is alpha", "keep looking"], GREEDY)
    assert len(rounds) == 4
    # After each round: a finished trajectory holds no cache, one that goes on holds its own.
    assert all(finished != kept for row in rounds for finished, kept in row)
    assert engine.kept == {}


def test_the_first_search_shows_its_own_number_of_hits_and_later_ones_the_rest(engine):
    limits = Limits(results_per_search=3, first_results_per_search=1, max_result_tokens=400)
    shaped = HFRolloutEngine(
        engine.model, engine.tokenizer, FakeIndex(), system_prompt=SYSTEM, limits=limits
    )
    trajectory = Trajectory(question="what is alpha")
    shaped.run_search(trajectory, "alpha")
    shaped.run_search(trajectory, "beta")
    shaped.run_search(trajectory, "gamma")
    assert [s.chunk_ids for s in trajectory.searches] == [
        ["alpha-0"],
        ["beta-0", "beta-1", "beta-2"],
        ["gamma-0", "gamma-1", "gamma-2"],
    ]


def test_a_malformed_call_is_not_the_first_search():
    limits = Limits(results_per_search=3, first_results_per_search=2)
    trajectory = Trajectory(question="q")
    assert limits.hits_for(trajectory.searches_run) == 2
    trajectory.searches.append(SearchCall(query="alpha", malformed="no closing tag"))
    assert limits.hits_for(trajectory.searches_run) == 2
    trajectory.searches.append(SearchCall(query="alpha", chunk_ids=["alpha-0"]))
    assert limits.hits_for(trajectory.searches_run) == 3
    assert Limits(results_per_search=3).hits_for(0) == 3  # 0: as every search


def test_the_filings_pack_s_searches_read_a_statement_under_its_other_names(engine):
    # "the P&L" names the page a filing heads "Statements of Operations": the search tool of
    # an agent with the pack's `statement_synonyms` finds it, any other reads the filter as
    # written (no page holds "p&l": the filter is dropped, the query's words rank).
    pages = [
        Chunk("W:p1:c0", "W", 1, "Walmart", "Consolidated Balance Sheets\nRevenue deferred"),
        Chunk("W:p2:c0", "W", 2, "Walmart", "Consolidated Statements of Operations\nRevenue"),
    ]
    index = SearchIndex.build(pages)

    def shown(limits: Limits) -> list[str]:
        searcher = HFRolloutEngine(
            engine.model, engine.tokenizer, index, system_prompt=SYSTEM, limits=limits
        )
        trajectory = Trajectory(question="What was Walmart's revenue in the P&L?")
        searcher.run_search(trajectory, "[Walmart | p&l] revenue deferred", 1)
        return trajectory.searches[0].chunk_ids

    assert shown(Limits(max_result_tokens=200, statement_synonyms=True)) == ["W:p2:c0"]
    assert shown(Limits(max_result_tokens=200)) == ["W:p1:c0"]
    # An agent stored before the switch existed searched so: it still does. Rollouts keep it:
    # it is no rule of decoding.
    assert Limits.stored({}).statement_synonyms and not Limits().statement_synonyms
    assert unruled(Limits(statement_synonyms=True)).statement_synonyms
