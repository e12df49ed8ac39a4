"""bench/counterfactual_reading.py: held-out questions asked against swapped results."""

from bench.counterfactual_reading import credited, swaps
from engine.documents.chunking import Chunk
from engine.documents.questions import Evidence, Question
from engine.rewards.offline_judge import OfflineJudge
from engine.search.index import SearchIndex
from engine.training.counterfactual import counterfactual

PAGES = {
    "assert": "A failed assert raises AssertionError. The value is checked.",
    "division": "Dividing by zero raises ZeroDivisionError. The value is a float.",
    "bracket": "The bracket is held by 4 bolts of 1,250 mm, torqued to 0.34 Nm. The value.",
    "glossary": "Unicode text raises UnicodeError. The value of KeyError, TypeError.",
}


def index() -> SearchIndex:
    return SearchIndex.build(
        [Chunk(f"{doc}-1", doc, 1, doc, text) for doc, text in PAGES.items()]
        + [Chunk(f"filler-{i}", f"f{i}", 1, "filler", "The one value raises.") for i in range(8)]
    )


def ask(qid: str, question: str, answer: str, doc: str) -> Question:
    return Question(qid, question, answer, doc, [Evidence(PAGES[doc])], [f"{doc}-1"])


ASSERT = ask("assert", "Which exception does a failed assert give?", "AssertionError", "assert")
BOLTS = ask("bracket", "How many bolts hold the bracket?", "4 bolts", "bracket")
TORQUE = ask("torque", "What torque is the bracket given?", "0.34 Nm", "bracket")
YES_NO = ask("division", "Is dividing by zero an error?", "Yes, ZeroDivisionError", "division")
QUESTIONS = [ASSERT, BOLTS, TORQUE, YES_NO]


def test_each_question_gets_one_swap_in_whatever_order_the_questions_come():
    pages = index()
    every = swaps(QUESTIONS, pages, seed=0)
    assert set(every) == {"assert", "bracket", "torque"}
    assert swaps(list(reversed(QUESTIONS)), pages, seed=0) == every
    # The tool tells questions apart by their text: a text two questions share is not asked.
    twin = ask("twin", ASSERT.question, "AssertionError", "assert")
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
