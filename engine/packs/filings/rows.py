"""The filings pack's figure rule: a table row's first figure is "the" figure.

Row figures (`Limits.row_figures`): where an answer quotes a row of its results, an
answer whose words before its first figure begin a row's label ("Total assets" of "Total
assets $236,495 $219,295") writes that row's first figure, the latest period's in a filing's
tables, as the cold start's quoted answers do (`documents.synthesis`: a lookup asks a row's first
column, answered with its label, then its figure). A student that wrote the right label went on
with another row's or column's figure, or one it made up, in most of its wrong lookups.

A filing's tables put the latest period first; a manual's or a paper's tables need not, which
is why the rule is the pack's (`engine.packs.filings` says what it was measured to do). It masks
as the engine's grounded figures do (`engine.agent.grounding.FigureGrounding`), with the row's
figure as the one shown. The publisher writes this module beside the bundled run_agent.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.agent.grounding import FIGURE, SEPARATORS, ShownFigures
from engine.packs.filings.questions import split_row

_WORD = re.compile(r"[a-z]+")
_MIN_PREFIX_WORDS = 2  # "Total", "Net": one shared word names no row
_MAX_LABEL_CHARACTERS = 80  # as `documents.synthesis` reads a table's rows


def _label_words(text: str) -> tuple[str, ...]:
    return tuple(_WORD.findall(text.lower()))


def _same_word(a: str, b: str) -> bool:
    """Equal, or one the other's start of four letters or more ("limitation", "limitations")."""
    short, long = sorted((a, b), key=len)
    return a == b or (len(short) >= 4 and long.startswith(short))


def _shared_prefix(a: tuple[str, ...], b: tuple[str, ...]) -> int:
    n = 0
    while n < min(len(a), len(b)) and _same_word(a[n], b[n]):
        n += 1
    return n


@dataclass(frozen=True)
class ResultRows:
    """The table rows a trajectory's results show: each label's words and its first figure."""

    rows: tuple[tuple[tuple[str, ...], str], ...]

    @classmethod
    def of(cls, text: str) -> ResultRows:
        rows = []
        for line in text.splitlines():
            label, values = split_row(line)
            if any(c.isdigit() for c in label) or len(label) > _MAX_LABEL_CHARACTERS:
                continue  # a sentence that ends with a figure ("… compared with 2021")
            first = next((f for v in values for f in FIGURE.findall(v)), None)
            if first and (words := _label_words(label)):
                rows.append((words, first.rstrip(SEPARATORS)))
        return cls(tuple(rows))

    def quoted(self, answer: str) -> ShownFigures | None:
        """What an answer's first figure may be: the first figure of the rows whose label the
        answer's words before it begin, or are begun by (at least two words, or a whole label
        of one; a label equal to them before one they only begin). None when the answer
        quotes no row, or its first figure is written and closed."""
        first = FIGURE.search(answer)
        if first and first.end() < len(answer):
            return None  # the first figure is closed: later figures are the model's
        words = _label_words(answer[: first.start()] if first else answer)
        best, figures = (0, False), set()
        for label, figure in self.rows:
            shared = _shared_prefix(words, label)
            whole = shared == len(words) == len(label)
            if shared < min(len(words), len(label)) or not (shared >= _MIN_PREFIX_WORDS or whole):
                continue
            if (shared, whole) > best:
                best, figures = (shared, whole), set()
            if (shared, whole) == best:
                figures.add(figure)
        return ShownFigures.of(" ".join(figures)) if figures else None
