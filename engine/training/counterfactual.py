"""Questions asked against results that say something else: RL that rewards reading.

RL samples the questions the cold start imitated, three epochs over. The policy has their
answers by heart, so its groups tie (nothing to learn) and what RL strengthens is recall of
those answers, which no held-out question shares (docs/results.md, RL's learning curve: the
training samples judged right climb, held-out accuracy stays flat). A counterfactual
question is a training question whose answer words are swapped, in every result the tool
shows for it and in its truth, for other words of the same shape ("TypeError" for
"ValueError", "7" for "3"). The answer learnt by heart is now wrong; only a sample that
copies what the results say is rewarded, which is the skill a new question needs.

Nothing here knows a domain: the words swapped are those of the truth that its evidence
passage holds and the question does not (what had to be read), and their stand-ins are words
of the same shape from the training questions' own evidence, or digits for digits.
"""

from __future__ import annotations

import copy
import dataclasses
import random
import re
from collections.abc import Iterable, Sequence
from contextlib import contextmanager

from engine.documents.questions import Question

# A word of an answer: a name or identifier ("ValueError", "__exit__", "ISOFIX") or a figure
# ("3", "1,577", "0.25").
_TOKEN = re.compile(r"\d[\d,]*(?:\.\d+)?|[A-Za-z_][A-Za-z0-9_]*")
_FIGURE = re.compile(r"\d[\d,]*(?:\.\d+)?")
# Words that say nothing to read: a bare yes or no stays what it was, and short function
# words are not swapped (a truth "No, it is not" has nothing to copy).
_KEEP = frozenset(
    "yes no not the and for with from that this its are was were has have had but can may "
    "will would should must only also each any all none one two".split()
)
# A truth of more words is a sentence, not a span to copy: swapping its words makes nonsense.
MAX_SWAPS, MAX_WORDS = 3, 8
# A truth that opens with yes or no is decided by that word, which no result spells.
_YES_NO = re.compile(r"\s*(yes|no)\b", re.IGNORECASE)


def _shape(word: str) -> tuple:
    """What a stand-in must share with the word: its case pattern, underscores, its last
    three letters' kind ("Error", "tion"), its length within a few letters."""
    inner_capital = any(c.isupper() for c in word[1:])
    return (word[:1].isupper(), word.isupper(), inner_capital, "_" in word, word[-3:].lower())


def _loose_shape(word: str) -> tuple:
    return _shape(word)[:4]


def swappable_words(question: Question) -> list[str]:
    """The truth's words that were read: in its evidence passage, not in the question, not a
    function word; [] when there are none or too many, or the truth is a yes or no or a
    sentence."""
    if _YES_NO.match(question.answer) or len(question.answer.split()) > MAX_WORDS:
        return []
    evidence = " ".join(e.text for e in question.evidence)
    asked = {w.lower() for w in _TOKEN.findall(question.question)}
    words: list[str] = []
    for word in _TOKEN.findall(question.answer):
        if len(word) < 3 and not _FIGURE.fullmatch(word):
            continue
        if word.lower() in _KEEP or word.lower() in asked or word in words:
            continue
        if not re.search(_whole(word), evidence):
            continue
        words.append(word)
    return words if len(words) <= MAX_SWAPS else []


def _whole(word: str) -> str:
    """`word` as a whole token: not inside a longer word or figure."""
    return rf"(?<![\w.,]){re.escape(word)}(?![\w]|[.,]\d)"


def _other_figure(figure: str, rng: random.Random) -> str:
    """Another figure written the same way: each digit drawn again, the first not a zero
    where it leads, separators kept."""
    while True:
        digits = [
            (rng.choice("123456789") if i == 0 and len(figure) > 1 else rng.choice("0123456789"))
            if c.isdigit()
            else c
            for i, c in enumerate(figure)
        ]
        other = "".join(digits)
        if other != figure:
            return other


def vocabulary(questions: Iterable[Question]) -> list[str]:
    """The words stand-ins are drawn from: those of the questions' evidence, sorted (the
    draw is seeded, the set's order is not)."""
    words = {
        w for q in questions for e in q.evidence for w in _TOKEN.findall(e.text) if len(w) >= 3
    }
    return sorted(w for w in words if not _FIGURE.fullmatch(w) and w.lower() not in _KEEP)


def stand_ins(
    question: Question, words: Sequence[str], pool: Sequence[str], rng: random.Random
) -> list[tuple[str, str]]:
    """(word, stand-in) for each of `words`: a figure for a figure, else a word of the pool
    of the same shape (else of the same case pattern) that neither the question, the truth
    nor the evidence holds. [] when a word has no stand-in: half a swap would leave the
    answer readable both ways."""
    taken = {w.lower() for w in _TOKEN.findall(question.question + " " + question.answer)}
    taken |= {w.lower() for e in question.evidence for w in _TOKEN.findall(e.text)}
    pairs: list[tuple[str, str]] = []
    for word in words:
        if _FIGURE.fullmatch(word):
            pairs.append((word, _other_figure(word, rng)))
            continue
        free = [w for w in pool if w.lower() not in taken and abs(len(w) - len(word)) <= 3]
        alike = [w for w in free if _shape(w) == _shape(word)] or [
            w for w in free if _loose_shape(w) == _loose_shape(word)
        ]
        if not alike:
            return []
        other = rng.choice(alike)
        taken.add(other.lower())
        pairs.append((word, other))
    return pairs


def swap_text(text: str, pairs: Sequence[tuple[str, str]]) -> str:
    """`text` with every whole occurrence of each word replaced by its stand-in, at once (a
    stand-in is never swapped again)."""
    if not pairs:
        return text
    lookup = dict(pairs)
    pattern = re.compile("|".join(_whole(word) for word, _ in pairs))
    return pattern.sub(lambda m: lookup[m.group(0)], text)


def counterfactual(question: Question, pairs: Sequence[tuple[str, str]]) -> Question:
    """The question asked against results with `pairs` swapped: its truth and evidence say
    the stand-ins; `meta["swapped"]` names them (the loop keeps such groups out of the
    curriculum's counts and DGPO's teacher targets, which say the real answer)."""
    return dataclasses.replace(
        question,
        answer=swap_text(question.answer, pairs),
        evidence=[dataclasses.replace(e, text=swap_text(e.text, pairs)) for e in question.evidence],
        meta={**question.meta, "swapped": [list(p) for p in pairs]},
    )


def choose_swaps(
    questions: Sequence[Question], share: float, pool: Sequence[str], seed: int
) -> dict[str, list[tuple[str, str]]]:
    """For a step's questions: which are asked counterfactually (each with chance `share`,
    seeded, among those with words to swap) and their pairs, by question id."""
    rng = random.Random(seed)
    chosen: dict[str, list[tuple[str, str]]] = {}
    for question in questions:
        if rng.random() >= share:
            continue
        pairs = stand_ins(question, swappable_words(question), pool, rng)
        if pairs:
            chosen[question.id] = pairs
    return chosen


class SwappedResults:
    """A search tool whose hits read with words swapped, for the questions in `swaps` (by
    the question's text, which every search carries); other questions' hits as they are.
    Everything else the tool has (`names_company`, ...) is the wrapped tool's."""

    def __init__(self, tool, swaps: dict[str, Sequence[tuple[str, str]]]):
        self.tool = tool
        self.swaps = swaps
        if hasattr(tool, "reading_filters"):  # the filings pack's statement names, still swapped
            self.reading_filters = lambda readings: SwappedResults(
                tool.reading_filters(readings), swaps
            )

    def search(self, query: str, k: int = 5, question: str = ""):
        hits = self.tool.search(query, k=k, question=question)
        pairs = self.swaps.get(question)
        return [_with_text(hit, swap_text(hit.text, pairs)) for hit in hits] if pairs else hits

    def __getattr__(self, name: str):
        return getattr(self.tool, name)


def _with_text(hit, text: str):
    if dataclasses.is_dataclass(hit):
        return dataclasses.replace(hit, text=text)
    other = copy.copy(hit)
    other.text = text
    return other


@contextmanager
def results_swapped(engine, swaps: dict[str, Sequence[tuple[str, str]]]):
    """The rollout `engine` searching through `SwappedResults` for the duration."""
    if not swaps:
        yield engine
        return
    tool = engine.tool
    engine.tool = SwappedResults(tool, swaps)
    try:
        yield engine
    finally:
        engine.tool = tool
