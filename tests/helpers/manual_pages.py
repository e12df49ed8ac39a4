"""A manual's small pages and questions on them, for the counterfactual swaps' tests."""

from engine.documents.chunking import Chunk
from engine.documents.questions import Evidence, Question
from engine.search.index import SearchIndex

# A manual's pages: rare terms (exception names, a tool), figures, and common words that
# every page holds ("the", "value", "raises").
PAGES = {
    "assert": "A failed assert raises AssertionError. The value is checked.",
    "division": "Dividing by zero raises ZeroDivisionError. The value is a float.",
    "names": "An unbound name raises NameError. The value is looked up.",
    "bracket": "The bracket is held by 4 bolts of 1,250 mm, torqued to 0.34 Nm. The value.",
    "mapping": "One mapping type: the dictionary. Its keys are hashed. The value.",
    "sets": "A frozen set is hashable. Frozensets nest. The value.",
    "glossary": "Unicode text raises UnicodeError. The value of KeyError, TypeError.",
    "spanner": "The spanner raises nothing. The value is kept in the bracket box.",
}


def index() -> SearchIndex:
    return SearchIndex.build(
        [Chunk(f"{doc}-1", doc, 1, doc, text) for doc, text in PAGES.items()]
        + [
            Chunk(f"filler-{i}", f"filler{i}", 1, "filler", "The one value raises.")
            for i in range(8)
        ]
    )


def ask(qid: str, question: str, answer: str, doc: str | None = None) -> Question:
    doc = doc or qid
    return Question(qid, question, answer, doc, [Evidence(PAGES[doc])], [f"{doc}-1"])


ASSERT = ask("assert", "Which exception does a failed assert give?", "AssertionError")
BOLTS = ask("bracket", "How many bolts hold the bracket?", "4 bolts")
MAPPING = ask("mapping", "How many mapping types are there?", "One, the dictionary")
YES_NO = ask("division", "Is dividing by zero an error?", "Yes, ZeroDivisionError")
COMMON = ask("names", "What is looked up?", "The value")
TORQUE = ask("torque", "What torque is the bracket given?", "0.34 Nm", doc="bracket")
QUESTIONS = [ASSERT, BOLTS, MAPPING, YES_NO, COMMON, TORQUE]
