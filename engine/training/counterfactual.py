"""Questions asked against results that say something else: RL that rewards reading.

RL samples the questions the cold start imitated, three epochs over. The policy has their
answers by heart, so its groups tie (nothing to learn) and what RL strengthens is recall of
those answers, which no held-out question shares (docs/results.md, RL's learning curve: the
training samples judged right climb, held-out accuracy stays flat). A counterfactual
question is a training question whose answer words are swapped, in every result the tool
shows for it and in its truth, for other words of the same shape ("TypeError" for
"ValueError", "7" for "3"). The answer learnt by heart is now wrong; only a sample that
copies what the results say is rewarded, which is the skill a new question needs. The cold
start can be shown the same swaps (`TrainConfig.cold_start_counterfactuals`): a question taught
twice, against its real results and against swapped ones, has two answers that only the results
tell apart.

Nothing here knows a domain. The words swapped are those of a short truth that its golden
chunks hold and the question does not (what had to be read): figures, and terms rare in the
index (a common word swapped would rewrite every result into nonsense). Their stand-ins are
terms of the same shape from the training questions' golden chunks, absent from this
question's. A swap is kept only where the judge tells the two truths apart and nothing of
the real answer is left to read (another case or form of the word, a document's name).
What is not swapped: the index searches the real text, so a query naming the stand-in finds
nothing special; this changes what is read, not what is found.
"""

from __future__ import annotations

import copy
import dataclasses
import random
import re
from collections.abc import Iterable, Sequence
from contextlib import contextmanager

from engine.documents.questions import Question
from engine.rewards.offline_judge import OfflineJudge

# A figure ("3", "1,577", "0.25"), commas only between groups of three: "3, 5" is two.
_FIGURE = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?")
# A term: a name or identifier ("ValueError", "__exit__", "ISOFIX"), or a plain word.
_TOKEN = re.compile(rf"{_FIGURE.pattern}|[A-Za-z_][A-Za-z0-9_]*")
# A truth of more words is a sentence, not a span to copy; one of more words to read, a
# list or a phrase that swapping would make nonsense of.
MAX_WORDS, MAX_SWAPS = 6, 2
# A truth that opens with yes or no is decided by that word, which no result spells.
_YES_NO = re.compile(r"\s*(yes|no)\b", re.IGNORECASE)
# A term in more than this share of the index's chunks (and more than a few chunks of a
# small one) is a common word, not one to read.
RARE_SHARE, RARE_CHUNKS = 0.05, 2


def _whole(word: str) -> str:
    """`word` as a whole token, in any case: a figure not inside a longer figure ("3" is
    not in "3.5" nor "13"), a word not inside a longer word ("y.__contains__" holds one)."""
    if _FIGURE.fullmatch(word):
        return rf"(?<![\d.,]){re.escape(word)}(?!\d|[.,]\d)"
    return rf"(?<![A-Za-z0-9_]){re.escape(word)}(?![A-Za-z0-9_])"


def _in_case_of(stand_in: str, found: str) -> str:
    """The stand-in written as the occurrence it replaces is: "False" → "Name", "false" →
    "name", "FALSE" → "NAME"; an occurrence of mixed case takes the stand-in as it is."""
    if found.isupper() and len(found) > 1:
        return stand_in.upper()
    if found.islower():
        return stand_in.lower()
    if found[:1].isupper() and found[1:].islower():
        return stand_in[:1].upper() + stand_in[1:]
    return stand_in


def swap_text(text: str, pairs: Sequence[tuple[str, str]]) -> str:
    """`text` with every whole occurrence of each word, in any case, replaced by its
    stand-in in that case, all at once (a stand-in is never swapped again)."""
    if not pairs:
        return text
    lookup = {word.lower(): stand_in for word, stand_in in pairs}
    pattern = re.compile("|".join(_whole(word) for word, _ in pairs), re.IGNORECASE)
    return pattern.sub(lambda m: _in_case_of(lookup[m.group(0).lower()], m.group(0)), text)


def _shape(word: str) -> tuple:
    """What a stand-in shares with a word: its case pattern, underscores, and where the
    terms allow, its last three letters ("Error", "tion")."""
    inner_capital = any(c.isupper() for c in word[1:])
    return (word[:1].isupper(), word.isupper(), inner_capital, "_" in word, word[-3:].lower())


def _other_figure(figure: str, rng: random.Random, taken: set[str]) -> str | None:
    """Another figure written the same way and not in `taken`: each digit drawn again but a
    leading zero ("0.34" stays below one), the leading digit not made a zero, separators
    kept."""
    for _ in range(20):
        other = "".join(
            (c if c == "0" else rng.choice("123456789"))
            if i == 0
            else (rng.choice("0123456789") if c.isdigit() else c)
            for i, c in enumerate(figure)
        )
        if other != figure and other not in taken:
            return other
    return None


def _leaves_readable(pairs: Sequence[tuple[str, str]], shown: str) -> bool:
    """Whether the real answer can still be read in what is `shown` after the swap: a
    figure whole, a word in another form ("dictionaries" for "dictionary"), or a header
    (a document named "yield")."""
    for word, _ in pairs:
        if _FIGURE.fullmatch(word):
            found = re.search(_whole(word), shown)
        else:
            stem = word[: max(4, len(word) - 2)]
            found = re.search(rf"(?<![A-Za-z0-9_]){re.escape(stem)}", shown, re.IGNORECASE)
        if found:
            return True
    return False


class Counterfactuals:
    """The swaps of RL's questions: which words of a truth were read, their stand-ins, and
    the checks that keep a swap answerable one way only. `index` is the search index RL's
    tool reads (its chunks' text and how many chunks hold a word)."""

    def __init__(self, questions: Iterable[Question], index):
        self._index = index
        # A stop word has no stem in the index: it is in every chunk, as far as reading goes.
        self._chunks_holding = lambda word: max(
            (index.document_frequency(stem) for stem in index.tokenize(word)), default=len(index)
        )
        self._rare_below = max(RARE_CHUNKS, RARE_SHARE * len(index))
        self._judge = OfflineJudge()
        terms = {
            w
            for q in questions
            for w in _TOKEN.findall(self.text_of(q)[0])
            if len(w) >= 3 and not _FIGURE.fullmatch(w)
        }
        self.pool = sorted(w for w in terms if self._rare(w))  # sorted: the draw is seeded

    def text_of(self, question: Question) -> tuple[str, str]:
        """What the tool shows of the question's golden chunks: their text (with the
        evidence passages: a synthesized question's is a chunk's sentence), which a swap
        rewrites, and their headers (ids, documents' names), which it does not."""
        bodies = [e.text for e in question.evidence]
        headers = []
        for chunk_id in question.golden_chunk_ids:
            chunk = self._index.chunk(chunk_id)
            bodies.append(chunk.text)
            headers += [chunk.id, chunk.doc]
        return "\n".join(bodies), "\n".join(headers)

    def _rare(self, word: str) -> bool:
        return self._chunks_holding(word) <= self._rare_below

    def words_read(self, question: Question, shown: str) -> list[str]:
        """The truth's words that had to be read: in its golden chunks, not in the question,
        a figure or a rare term; [] for a truth decided by yes or no, a sentence, or one with
        more words to read than a swap keeps sensible."""
        if _YES_NO.match(question.answer) or len(question.answer.split()) > MAX_WORDS:
            return []
        asked = {w.lower() for w in _TOKEN.findall(question.question)}
        words: list[str] = []
        for word in _TOKEN.findall(question.answer):
            figure = _FIGURE.fullmatch(word)
            if word.lower() in asked or word in words or not re.search(_whole(word), shown):
                continue
            if not figure and (len(word) < 3 or not self._rare(word)):
                continue
            words.append(word)
        return words if len(words) <= MAX_SWAPS else []

    def pairs(self, question: Question, rng: random.Random) -> list[tuple[str, str]]:
        """(word, stand-in) for each word read, or [] where no swap is sound: a word with no
        stand-in of its shape, the real answer still readable after the swap, or truths the
        judge does not tell apart."""
        shown, headers = self.text_of(question)
        words = self.words_read(question, shown)
        if not words:
            return []
        taken = {w.lower() for w in _TOKEN.findall(f"{question.question}\n{shown}\n{headers}")}
        pairs: list[tuple[str, str]] = []
        for word in words:
            if _FIGURE.fullmatch(word):
                other = _other_figure(word, rng, taken)
            else:
                free = [w for w in self.pool if w.lower() not in taken]
                free = [w for w in free if abs(len(w) - len(word)) <= 3]
                alike = [w for w in free if _shape(w) == _shape(word)] or [
                    w for w in free if _shape(w)[:4] == _shape(word)[:4]
                ]
                other = rng.choice(alike) if alike else None
            if other is None:
                return []
            taken.add(other.lower())
            pairs.append((word, other))
        if _leaves_readable(pairs, f"{swap_text(shown, pairs)}\n{headers}"):
            return []
        truth = question.answer
        new_truth = swap_text(truth, pairs)
        ask = question.question
        if self._judge.judge(ask, new_truth, truth).correct:  # the answer by heart: wrong
            return []
        if not self._judge.judge(ask, new_truth, new_truth).correct:  # the new one: right
            return []
        return pairs

    def choose(
        self, questions: Sequence[Question], share: float, seed: int
    ) -> dict[str, list[tuple[str, str]]]:
        """For a step's questions: which are asked counterfactually (each with chance
        `share`, seeded, among those with a sound swap) and their pairs, by question id. A
        question whose text another of them shares is asked as it is: the tool tells
        questions apart by their text."""
        rng = random.Random(seed)
        texts = [q.question for q in questions]
        chosen: dict[str, list[tuple[str, str]]] = {}
        for question in questions:
            if rng.random() >= share or texts.count(question.question) > 1:
                continue
            pairs = self.pairs(question, rng)
            if pairs:
                chosen[question.id] = pairs
        return chosen


def counterfactual(question: Question, pairs: Sequence[tuple[str, str]]) -> Question:
    """The question asked against results with `pairs` swapped: its truth and evidence say
    the stand-ins; `meta["swapped"]` names them (the loop keeps such groups out of the
    curriculum's counts and DGPO's teacher targets, which say the real answer)."""
    meta = {**question.meta, "swapped": [list(p) for p in pairs]}
    if isinstance(meta.get("quoted"), str):  # the row a synthesized lookup's teacher quotes
        meta["quoted"] = swap_text(meta["quoted"], pairs)
    return dataclasses.replace(
        question,
        answer=swap_text(question.answer, pairs),
        evidence=[dataclasses.replace(e, text=swap_text(e.text, pairs)) for e in question.evidence],
        meta=meta,
    )


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

    def search(self, query: str, k: int = 5, question: str = "", **kwargs):
        hits = self.tool.search(query, k=k, question=question, **kwargs)
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
