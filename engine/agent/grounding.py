"""Grounded figures: an answer may write only figures the question or the results showed.

A small student answers with figures it never read ("$1,000", "1,111 million"): it has
learnt that an answer is a figure, not which one. With `Limits.grounded_figures`, decoding
inside `<answer>` masks every token that would start or continue a figure the agent was not
shown, so each figure in an answer is one of the results' (or the question's) own, written
as they write it or without its thousands separators. Words are left free: the scale
("million"), a currency sign, yes/no and text answers are the model's. A figure an answer
has to work out (a ratio, a margin) cannot be written under it, so it suits a model that
copies rather than computes.

It is a decoding rule, applied where the agent is used (evaluation, serving), not in the
trainer's rollouts: their log-probs must be the model's own distribution's, which the
trainer recomputes without any mask.

Row figures (`Limits.row_figures`, a table row's first figure as "the" figure) are the filings
pack's (`engine.packs.filings.rows`): they read a row of a filing's tables.

Figures are runs of digits, commas and points starting with a digit; a comma or point that
ends one ("59,268." at a sentence's end) is punctuation. SmolLM2's tokenizer, like most,
writes digits one token each, so only a handful of tokens ever need checking.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import torch

FIGURE = re.compile(r"\d[\d,.]*")
_OPEN_FIGURE = re.compile(r"\d[\d,.]*$")
SEPARATORS = ",."


def figures_in(text: str) -> set[str]:
    """The figures `text` shows, each as written and without thousands separators."""
    figures = set()
    for match in FIGURE.finditer(text or ""):
        figure = match.group().rstrip(SEPARATORS)
        figures.update((figure, figure.replace(",", "")))
    return figures


@dataclass(frozen=True)
class ShownFigures:
    """What one trajectory has been shown: its figures and every start of one."""

    figures: frozenset[str]
    starts: frozenset[str]

    @classmethod
    def of(cls, text: str) -> ShownFigures:
        figures = frozenset(figures_in(text))
        starts = frozenset(f[:i] for f in figures for i in range(1, len(f) + 1))
        return cls(figures, starts)

    def complete(self, figure: str) -> bool:
        return figure.rstrip(SEPARATORS) in self.figures

    def may_continue(self, figure: str) -> bool:
        """Whether an unfinished `figure` is, or starts, a shown one."""
        return figure in self.starts or self.complete(figure)


class FigureGrounding:
    """Masks, for one tokenizer, the tokens that would write a figure not shown."""

    def __init__(self, token_texts: list[str]) -> None:
        self.texts = token_texts
        self.digit_ids = [i for i, t in enumerate(token_texts) if any(c.isdigit() for c in t)]
        digits = set(self.digit_ids)
        # Tokens that may go on with an open figure ("," or "." first) without a digit.
        self.separator_ids = [
            i
            for i, t in enumerate(token_texts)
            if t.startswith(tuple(SEPARATORS)) and i not in digits
        ]
        # Everything else closes an open figure: words, spaces, tags, end-of-sequence.
        closes = torch.ones(len(token_texts), dtype=torch.bool)
        closes[self.digit_ids + self.separator_ids] = False
        self.closes = closes

    @classmethod
    def for_tokenizer(cls, tokenizer, vocab_size: int) -> FigureGrounding:
        """For a model whose logits have `vocab_size` entries (often more than the tokenizer
        has: ids past it are padding, and write nothing)."""
        texts = [tokenizer.decode([i]) for i in range(min(len(tokenizer), vocab_size))]
        return cls(texts + [""] * (vocab_size - len(texts)))

    def banned(self, answer: str, shown: ShownFigures) -> torch.Tensor | None:
        """A bool mask over the vocabulary of the tokens that may not follow `answer` (the
        answer's text so far), or None when every token may."""
        open_figure = _OPEN_FIGURE.search(answer)
        current = open_figure.group() if open_figure else ""
        candidates = self.digit_ids + (self.separator_ids if current else [])
        banned_ids = [i for i in candidates if not self._fits(current, self.texts[i], shown)]
        closing_banned = bool(current) and not shown.complete(current)
        if not banned_ids and not closing_banned:
            return None
        banned = self.closes.clone() if closing_banned else torch.zeros_like(self.closes)
        banned[banned_ids] = True
        if bool(banned.all()):
            return None  # nothing could follow: leave the model be rather than stall
        return banned

    @staticmethod
    def _fits(current: str, token: str, shown: ShownFigures) -> bool:
        """Whether `token` after an answer whose open figure is `current` writes only shown
        figures (the one it leaves open only the start of one)."""
        for char in token:
            if char.isdigit() or (current and char in SEPARATORS):
                current += char
            elif current:
                if not shown.complete(current):
                    return False
                current = ""
        return not current or shown.may_continue(current)
