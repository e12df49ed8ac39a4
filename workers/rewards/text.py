"""Text checks shared by the offline judge and the reward: words, yes/no, refusals, padding."""

import re

import Stemmer

_STEMMER = Stemmer.Stemmer("english")
_STOPWORDS = frozenset(
    """a an the and or but of to in on at by for from with as is are was were be been being
    it its this that these those there their they them he she his her we our you your i
    do does did has have had not no yes than then so such which who whom what when where
    why how into over under about per also both each all any some very can could would
    should may might will shall just only more most less least own same other""".split()
)
_WORD = re.compile(r"[a-z0-9]+(?:[.'][a-z0-9]+)*")
_NUMERIC = re.compile(r"[\d.,]+")

_REFUSAL = re.compile(
    r"can ?not be (?:determined|answered|found|calculated|computed)|can't be determined"
    r"|cannot (?:determine|answer|find|say)|unable to (?:determine|find|answer|locate)"
    r"|(?:not|insufficient) enough information|insufficient (?:information|data)"
    r"|\bi (?:do not|don't) know\b|no (?:relevant )?information"
    r"|not (?:provided|available|mentioned|specified|disclosed|stated) in",
    re.I,
)
_EMOJI = re.compile(
    "[\U0001f000-\U0001faff\u2600-\u27bf\u2b00-\u2bff\ufe0f\u200d\u2190-\u21ff\u2300-\u23ff]"
)
# Kinds of decoration that pad an answer without adding content.
_DECORATIONS = {
    "emoji": _EMOJI,
    "emphasis": re.compile(r"\*\*|__|~~|(?<!\w)\*(?=\w)|`"),
    "heading": re.compile(r"(?m)^\s*#{1,6}\s"),
    "table": re.compile(r"(?m)^\s*\|.*\|\s*$"),
    "shouting": re.compile(r"[!?]{2,}|\b[A-Z]{5,}\b(?:\s+\b[A-Z]{2,}\b){2,}"),
    "rule": re.compile(r"(?m)^\s*(?:-{3,}|\*{3,}|={3,})\s*$"),
}


def words(text: str) -> list[str]:
    """Lower-cased words and numbers of `text`, in order."""
    return _WORD.findall((text or "").lower())


def content_terms(text: str, *, keep_numbers: bool = False) -> set[str]:
    """Stemmed content words of `text`: no stop words, and no numbers unless asked."""
    kept = [
        w
        for w in words(text)
        if w not in _STOPWORDS and (keep_numbers or not _NUMERIC.fullmatch(w))
    ]
    return set(_STEMMER.stemWords(kept))


def polarity(text: str) -> str | None:
    """ "yes" or "no" when the text opens with one, else None."""
    first = words(text)[:1]
    if first and first[0] in {"yes", "no"}:
        return first[0]
    return None


# "increase or decrease", "improved or declined": one word on each side of "or", outside
# brackets ("the most (or lost the least)" offers no choice of two words).
_CHOICE = re.compile(r"(?<![(\w])([a-z]+)\s+or\s+([a-z]+)\b(?![^(]*\))", re.I)


def choice(question: str) -> tuple[str, str] | None:
    """The two options (stemmed) a question offers with "A or B", where it offers two
    content words ("Did wages increase or decrease…?" -> ("increas", "decreas")), else None."""
    for first, second in _CHOICE.findall(question):
        options = [w.lower() for w in (first, second)]
        if any(w in _STOPWORDS for w in options):
            continue
        a, b = _STEMMER.stemWords(options)
        if a != b:
            return a, b
    return None


def chosen(text: str, options: tuple[str, str]) -> set[str]:
    """Which of a choice's stemmed `options` the text says."""
    return set(options) & content_terms(text)


def is_refusal(text: str) -> bool:
    """Whether the text declines to answer ("cannot be determined", "not enough information")."""
    return bool(_REFUSAL.search(text or ""))


def decorations(text: str) -> set[str]:
    """The kinds of padding in `text`: emoji, markdown emphasis, headings, tables, shouting."""
    return {name for name, pattern in _DECORATIONS.items() if pattern.search(text or "")}


def strip_decorations(text: str) -> str:
    """`text` without emoji and markdown markup, for measuring what it actually says."""
    text = _EMOJI.sub(" ", text or "")
    text = re.sub(
        r"\*\*|__|~~|`|^\s*#{1,6}\s|^\s*(?:-{3,}|\*{3,}|={3,})\s*$", " ", text, flags=re.M
    )
    return re.sub(r"\s+", " ", text).strip()


def echoes(answer: str, question: str, threshold: float = 0.8) -> bool:
    """Whether the answer is mostly the question said back (its words are the question's)."""
    answer_terms = content_terms(answer, keep_numbers=True)
    if len(answer_terms) < 4:
        return False
    question_terms = content_terms(question, keep_numbers=True)
    return len(answer_terms & question_terms) / len(answer_terms) >= threshold
