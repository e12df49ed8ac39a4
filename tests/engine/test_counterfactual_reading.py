"""bench/counterfactual_reading.py: held-out questions asked against swapped results."""

import math

from bench.counterfactual_reading import credited, pool_runs, swaps
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
