"""bench/counterfactual_reading.py: held-out questions asked against swapped results."""

import math
from types import SimpleNamespace

from bench.counterfactual_reading import (
    credited,
    keep_answers,
    pool_runs,
    swapped_answers,
    swaps,
)
from engine.documents.questions import Question
from engine.rewards.offline_judge import OfflineJudge
from engine.training.counterfactual import counterfactual
from tests.helpers.manual_pages import ASSERT, QUESTIONS, ask, index


def test_each_question_gets_one_swap_in_whatever_order_the_questions_come():
    pages = index()
    every = swaps(QUESTIONS, pages, seed=0)
    assert set(every) == {"assert", "bracket", "torque"}
    assert swaps(list(reversed(QUESTIONS)), pages, seed=0) == every
    # The tool tells questions apart by their text: a text two questions share is not asked.
    twin = ask("twin", ASSERT.question, "AssertionError", doc="assert")
    assert set(swaps([*QUESTIONS, twin], pages, seed=0)) == {"bracket", "torque"}


def test_an_answer_is_read_when_it_says_the_stand_in_and_brought_along_when_the_real_word():
    judge = OfflineJudge()
    swapped = counterfactual(ASSERT, [("AssertionError", "UnicodeError")])
    assert credited(judge, ASSERT, swapped, "UnicodeError") == (1.0, 0.0)
    assert credited(judge, ASSERT, swapped, "AssertionError") == (0.0, 1.0)
    assert credited(judge, ASSERT, swapped, "NameError") == (0.0, 0.0)
    # The answer judged against each truth, not a truth against the answer: a bare "Yes"
    # commits to neither (the other way round, a truth read as an answer says "yes").
    shown = Question(
        "m",
        "How is a built-in module like sys shown when printed?",
        "<module 'sys' (built-in)>",
        None,
        [],
    )
    assert credited(judge, shown, counterfactual(shown, [("sys", "gc")]), "Yes") == (0.0, 0.0)


def test_a_question_asked_by_several_seeds_counts_once_with_their_mean():
    pooled = pool_runs({"q": [(1.0, 0.0, 1.0), (0.0, 0.0, 1.0)], "r": [(0.0, 1.0, float("nan"))]})
    assert pooled["q"] == (0.5, 0.0, 1.0)
    assert pooled["r"][:2] == (0.0, 1.0) and math.isnan(pooled["r"][2])


def test_a_runs_answers_are_kept_and_read_back_only_for_the_same_swaps_and_weights(tmp_path):
    run = SimpleNamespace(folder=tmp_path, config={"steps": 0})
    asked = [ASSERT]
    swap = {ASSERT.id: [("AssertionError", "UnicodeError")]}
    assert swapped_answers(run, asked, swap, cold_start=False) is None
    keep_answers(run, {ASSERT.id: "UnicodeError"}, swap, cold_start=False)
    keep_answers(run, {ASSERT.id: "AssertionError"}, swap, cold_start=True)
    assert swapped_answers(run, asked, swap, cold_start=False) == {ASSERT.id: "UnicodeError"}
    assert swapped_answers(run, asked, swap, cold_start=True) == {ASSERT.id: "AssertionError"}
    # Another draw of the stand-ins is another question: asked again, not read.
    other = {ASSERT.id: [("AssertionError", "KeyError")]}
    assert swapped_answers(run, asked, other, cold_start=False) is None
    # The same run trained on since: its final agent is another.
    resumed = SimpleNamespace(folder=tmp_path, config={"steps": 24})
    assert swapped_answers(resumed, asked, swap, cold_start=False) is None
