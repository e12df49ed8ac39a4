"""Counterfactual questions: RL asks a question against results whose answer words are
swapped for others of the same shape, so that only reading the results is rewarded."""

import collections
import random
from dataclasses import dataclass

from engine.agent.trajectory import TOOL, Trajectory
from engine.documents.questions import Question
from engine.search.index import SearchHit
from engine.training import rl
from engine.training.counterfactual import (
    Counterfactuals,
    SwappedResults,
    counterfactual,
    swap_text,
)
from tests.helpers.manual_pages import (
    ASSERT,
    BOLTS,
    COMMON,
    MAPPING,
    QUESTIONS,
    TORQUE,
    YES_NO,
    ask,
    index,
)
from tests.helpers.toy import FACTS, config, run_training, tiny_tokenizer


def swaps() -> Counterfactuals:
    return Counterfactuals(QUESTIONS, index())


def test_the_words_read_are_figures_and_rare_terms_its_chunk_holds_and_the_question_does_not():
    cf = swaps()
    read = {q.id: cf.words_read(q, cf.text_of(q)[0]) for q in QUESTIONS}
    assert read["assert"] == ["AssertionError"]
    assert read["bracket"] == ["4"]  # "bolts" is in the question: nothing to read
    assert read["torque"] == ["0.34"]  # "Nm" is a term, but two letters
    assert read["division"] == []  # decided by its yes, which no result spells
    assert read["names"] == []  # "value" is on every page: swapping it rewrites them all


def test_a_stand_in_has_the_words_shape_and_is_on_none_of_the_question_s_pages():
    cf = swaps()
    for seed in range(10):
        ((word, stand_in),) = cf.pairs(ASSERT, random.Random(seed))
        assert word == "AssertionError" and stand_in.endswith("Error")
        assert stand_in in {"ZeroDivisionError", "UnicodeError"}  # not NameError: 5 shorter
    for seed in range(10):
        ((_, figure),) = cf.pairs(BOLTS, random.Random(seed))
        assert figure != "4" and len(figure) == 1 and figure != "0"
        ((_, small),) = cf.pairs(TORQUE, random.Random(seed))
        assert small.startswith("0.") and len(small) == 4 and small != "0.34"


def test_no_swap_where_the_judge_would_credit_the_answer_by_heart_or_the_answer_stays_readable():
    cf = swaps()
    # "One" decides the truth and, a common word, is not swapped: "One, the dictionary" would
    # still be right against "One, the hashed".
    assert cf.words_read(MAPPING, cf.text_of(MAPPING)[0]) == ["dictionary"]
    assert cf.pairs(MAPPING, random.Random(0)) == []
    # Another form of the answer is left on its page ("Frozensets").
    frozen = ask("sets", "Which kind of set is hashable?", "frozen")
    assert cf.words_read(frozen, cf.text_of(frozen)[0]) == ["frozen"]
    assert cf.pairs(frozen, random.Random(0)) == []
    # A document named for the answer shows it in every hit's header.
    named = Question("n", "Which tool is kept in the box?", "spanner", None, [], ["spanner-1"])
    assert cf.words_read(named, cf.text_of(named)[0]) == ["spanner"]
    assert cf.pairs(named, random.Random(0)) == []


def test_a_swap_replaces_whole_words_in_any_case_and_whole_figures():
    pairs = [("ValueError", "TypeError"), ("4", "7"), ("False", "None")]
    text = "ValueError (not ValueErrors) or VALUEERROR; 4 of 14, 4.5, 3, 4 and false, False."
    assert (
        swap_text(text, pairs)
        == "TypeError (not ValueErrors) or TYPEERROR; 7 of 14, 4.5, 3, 7 and none, None."
    )
    assert swap_text("y.__contains__(x)", [("__contains__", "__len__")]) == "y.__len__(x)"


def test_the_counterfactual_question_says_the_stand_in_in_its_truth_and_evidence():
    posed = counterfactual(BOLTS, [("4", "9")])
    assert posed.answer == "9 bolts" and posed.question == BOLTS.question
    assert posed.evidence[0].text.startswith("The bracket is held by 9 bolts of 1,250 mm")
    assert posed.meta["swapped"] == [["4", "9"]] and BOLTS.answer == "4 bolts"


def test_the_share_chooses_the_questions_asked_counterfactually():
    cf = swaps()
    assert cf.choose(QUESTIONS, 0.0, seed=1) == {}
    every = cf.choose(QUESTIONS, 1.0, seed=1)
    assert set(every) == {"assert", "bracket", "torque"}
    assert cf.choose(QUESTIONS, 1.0, seed=1) == every  # seeded: every rank draws the same
    # The tool tells questions apart by their text: two of one text are asked as they are.
    twin = ask("twin", ASSERT.question, "AssertionError", doc="assert")
    assert set(cf.choose([ASSERT, twin, BOLTS], 1.0, seed=1)) == {"bracket"}


@dataclass
class Hits:
    hits: list
    names_company = staticmethod(lambda word: word == "acme")

    def search(self, query, k=5, question="", filters=None):
        return [h for h in self.hits if filters is None or h.doc in filters][:k]


@dataclass
class Filtered(Hits):
    def reading_filters(self, readings):
        return Hits([h for h in self.hits if h.doc in readings])


def test_the_tool_swaps_the_results_of_the_questions_named_only():
    hit = SearchHit("c1", 1.0, "manual", 1, None, "raises AssertionError here")
    tool = SwappedResults(Hits([hit]), {"Q1?": [("AssertionError", "NameError")]})
    assert [h.text for h in tool.search("assert", 3, question="Q1?")] == ["raises NameError here"]
    assert tool.search("assert", 3, question="Q2?") == [hit]
    assert tool.search("assert", 3, question="Q1?", filters={"other"}) == []  # passed on
    assert hit.text == "raises AssertionError here"  # the index's own hit is untouched
    assert tool.names_company("acme")  # what else the tool has is the wrapped tool's
    assert not hasattr(tool, "reading_filters")
    # A pack's reading of page filters goes through the wrapped tool, and is still swapped.
    read = SwappedResults(Filtered([hit]), {"Q1?": [("AssertionError", "NameError")]})
    assert [h.text for h in read.reading_filters({"manual"}).search("a", question="Q1?")] == [
        "raises NameError here"
    ]


def test_rl_asks_every_group_against_swapped_results_and_rewards_the_stand_in(
    tmp_path, monkeypatch
):
    scored = []
    real_score, real_rollouts = rl.score, rl.rollout_share

    def rollout_share(engine, questions, sampling, ranks):
        # What the engine's own search path shows, while the step samples.
        for text in set(questions):
            trajectory = Trajectory(question=text)
            engine.run_search(trajectory, text, 8)
            tool = [
                t
                for t, p in zip(trajectory.token_ids, trajectory.producers, strict=True)
                if p == TOOL
            ]
            shown[text] = engine.tokenizer.decode(tool).split()
        return real_rollouts(engine, questions, sampling, ranks)

    def score(trajectories, questions, cfg, judge):  # the round just sampled, and its truths
        scored.extend((q, shown[q.question]) for q in questions)
        return real_score(trajectories, questions, cfg, judge)

    shown = {}
    monkeypatch.setattr(rl, "score", score)
    monkeypatch.setattr(rl, "rollout_share", rollout_share)
    cfg = config(steps=3, questions_per_step=2, group_size=2, counterfactual_share=1.0)
    _, metrics = run_training(tmp_path, cfg)

    assert [m["counterfactual_groups"] for m in metrics] == [2, 2, 2]
    assert all("counterfactual_accuracy" in m for m in metrics)
    assert len(scored) == 12
    for question, results in scored:
        real_value = FACTS[question.id][2]
        ((old, new),) = question.meta["swapped"]
        assert old == real_value and question.answer == new != real_value
        assert new in results and real_value not in results


def test_counterfactual_groups_leave_the_curriculum_and_dgpo_to_the_real_questions(
    tmp_path, monkeypatch
):
    def every_answer_wrong(trajectories, questions, cfg, judge):
        return [
            {"total": float(row % 2), "correct": 0.0, "golden_recall": 0.0, "judge_failed": 0.0}
            for row in range(len(questions))
        ]

    monkeypatch.setattr(rl, "score", every_answer_wrong)
    plain = config(steps=2, questions_per_step=2, group_size=2, hold_back_after=1)
    _, as_they_are = run_training(tmp_path, plain, name="plain")
    # Failed twice over, the real questions are held back and pulled toward the teacher ...
    assert as_they_are[-1]["held_back"] > 0
    assert any(m["dgpo_groups"] > 0 for m in as_they_are)
    assert {m["counterfactual_groups"] for m in as_they_are} == {0}
    # ... their counterfactual twins, failed as often, are neither.
    swapped = config(
        steps=2, questions_per_step=2, group_size=2, hold_back_after=1, counterfactual_share=1.0
    )
    _, counterfactual_run = run_training(tmp_path, swapped, name="swapped")
    assert [m["counterfactual_groups"] for m in counterfactual_run] == [2, 2]
    assert counterfactual_run[-1]["held_back"] == 0
    assert all(m["dgpo_groups"] == 0 for m in counterfactual_run)


def imitated(tmp_path, monkeypatch, name: str = "run", **settings) -> list[Trajectory]:
    """The trajectories a toy run's cold start imitates (its SFT recorded, not run), with
    `settings` and no scope drills."""
    from engine.training import cold_start as cold_start_module

    taught = []

    def record_sft(model, trajectories, *, on_step, **kwargs):
        taught.extend(trajectories)
        on_step({"epoch": 0, "loss": 1.0, "lr": 1e-4, "trajectories": len(trajectories)})
        return [1.0]

    monkeypatch.setattr(cold_start_module, "sft", record_sft)
    cfg = config(steps=1, sft_epochs=1, scope_drills=0, customer_scope_drills=0, **settings)
    run_training(tmp_path, cfg, name=name)
    return taught


def test_the_cold_start_teaches_a_share_of_its_questions_again_against_swapped_results(
    tmp_path, monkeypatch
):
    from engine.training.teacher import results_text

    def imitated_with(share: float, name: str) -> list[Trajectory]:
        return imitated(tmp_path, monkeypatch, name, cold_start_counterfactuals=share)

    tokenizer = tiny_tokenizer()
    plain = imitated_with(0.0, "plain")
    assert len(plain) == 4 and {t.answer for t in plain} == {v for _, _, v in FACTS.values()}
    every = imitated_with(1.0, "every")
    copies = every[len(plain) :]
    assert [t.answer for t in every[: len(plain)]] == [t.answer for t in plain]
    # Each question again, its results and its answer saying a stand-in the real ones do not.
    assert sorted(t.question for t in copies) == sorted(t.question for t in plain)
    for copy in copies:
        (real,) = [t for t in plain if t.question == copy.question]
        assert copy.answer != real.answer and copy.answer.isalpha()
        shown = results_text(tokenizer, copy).split()
        assert copy.answer in shown and real.answer not in shown
        assert copy.searches == real.searches  # the same searches: only what they read differs
    half = imitated_with(0.5, "half")
    assert 4 < len(half) < 8


def test_the_questions_whose_answer_no_result_spells_are_the_verdicts_and_common_words():
    from engine.training.cold_start import answers_not_read

    # "Yes" decides one truth and "The value" is on every page: neither is read in results.
    assert answers_not_read(index(), QUESTIONS) == [YES_NO, COMMON]


def test_repeats_are_drawn_each_once_before_any_twice_and_by_the_seed():
    from engine.training.cold_start import drawn

    five = drawn(QUESTIONS[:2], 5, seed=3)
    assert sorted(collections.Counter(q.id for q in five).values()) == [2, 3]
    assert len({q.id for q in drawn(QUESTIONS, 6, seed=0)}) == 6
    assert drawn(QUESTIONS, 4, seed=1) == drawn(QUESTIONS, 4, seed=1)
    assert drawn([], 3, seed=0) == []


def test_beside_each_copy_the_cold_start_teaches_a_question_whose_answer_is_not_read_again(
    tmp_path, monkeypatch
):
    from engine.training import cold_start as cold_start_module

    # Every toy answer is a word of its results: two of them stand for the answers not read.
    unread_ids = []

    def two_unread(index, questions):
        unread = sorted(questions, key=lambda q: q.id)[:2]
        unread_ids.extend(q.id for q in unread)
        return unread

    monkeypatch.setattr(cold_start_module, "answers_not_read", two_unread)
    taught = imitated(
        tmp_path,
        monkeypatch,
        cold_start_counterfactuals=1.0,
        cold_start_counterfactual_repeats=True,
    )
    plain, copies, repeats = taught[:4], taught[4:8], taught[8:]
    by_question = {t.question: t for t in plain}
    assert all(t.answer != by_question[t.question].answer for t in copies)
    # As many repeats as copies, each one of the unread questions' own trajectories.
    assert len(repeats) == 4
    assert all(by_question[t.question] == t for t in repeats)
    assert sorted(collections.Counter(t.question for t in repeats).values()) == [2, 2]
    assert len(set(unread_ids)) == 2
