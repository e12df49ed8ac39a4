"""Rules on yes and no, negation and hedges: the yes or no an answer says (also as "That
is correct"), the negations and denials it makes, the exceptions and conditions after its yes
or no, refusals, and what of an answer can hedge it.
"""

import re

from engine.rewards import quantities, text
from engine.rewards.offline_judge.clauses import _STATEMENT_BREAK
from engine.rewards.offline_judge.figures import _RANGE_JOIN, FIGURE_WORDS, _any_agree
from engine.rewards.offline_judge.words import TEXT_RECALL_NEEDED, _recall

# The longest answer without a yes or no read as one: a short claim on the question's words.
IMPLIED_YES_NO_WORDS = 8


_NEGATION_TERMS = text.content_terms(" ".join(text.NEGATIONS))
_NEGATED_BOUND = re.compile(
    rf"\b(?:no|not)\s+{text.BOUNDED_VERB}"
    r"(?:more|greater|higher|less|fewer|lower|closer|sooner|later|earlier|longer)"
    r"\s+than\b|\b(?:must|may|shall|should|does|do|will)?\s*not\s+(?:to\s+)?exceed\w*",
    re.I,
)
# The word a negation denies: "not harmful", "not be used", "cannot be taken".
_DENIED = re.compile(
    r"\b(?:not|never|cannot|can't|isn't|aren't|doesn't|don't|won't|shouldn't)\s+"
    r"(?:(?:be|been|being|have|get|got)\s+)?([a-z]+)",
    re.I,
)


# An exception or condition after a yes or no ("No, except after 6 pm", "Yes, but only inside
# a carrier", "Not in the hold, but it may go in the cabin"), and a truth's own condition.
_ALLOWED_AFTER_ALL = re.compile(r"\bbut\b[^.;]*?\b(?:may|can)\s+(?:still\s+|also\s+)?(\w+)", re.I)
_MOTION = text.content_terms("go goes travel stay remain come enter")
# Advice after a no is no exception ("No, but you can buy food inside"); a permission is.
_EXCEPTION_TO_NO = re.compile(
    r"\b(?:except|unless)\b|\bbut\b[^.;]*?\b(?:is|are)\s+(?:allowed|permitted)\b", re.I
)
_EXCEPTION_TO_YES = re.compile(
    r"\b(?:except|unless)\b|\bonly\s+(?:if|when|inside|in|on|with|after|before|during)\b"
    r"|\bbut\s+(?:not|only)\b",
    re.I,
)
# A truth's reason that is a condition: "Yes, if kept on a lead", "Yes, once, with the
# vendor's consent".
# ("Yes, with a receipt" is met by "as long as you have proof of purchase": a bare "with"
# names a requirement more often in other words than a condition.)
_WITH = re.compile(r"\W*with\b", re.I)  # "Yes, with a valid boarding pass": a requirement
_CONDITIONED = re.compile(
    r"\W*(?:(?:once|only|just)\W+with|if|when|provided|subject\s+to|as\s+long\s+as|unless"
    r"|except|only)\b",
    re.I,
)


_IF_WORDS = text.content_terms(
    "if when once only just provided with subject as long unless except apart"
)
_CONDITION = re.compile(r"\b(?:if|when|provided|as\s+long\s+as|unless|except|only)\b", re.I)


# Words that deny what a yes/no question asks about, whatever its verb: "excluded", "banned",
# "not supported"; and a first statement that is a bare denial ("It is not", "They aren't").
_REFUSAL = re.compile(
    r"\b(?:exclud(?:ed|es)|banned|prohibited|forbidden|disallowed|ineligible"
    r"|(?:not|never)\s+(?:be\s+)?(?:permitted|allowed|supported|covered|eligible|accepted))\b"
    r"|\b(?:isn't|aren't|is\s+not|are\s+not)\s+(?:permitted|allowed|supported|covered|eligible)\b",
    re.I,
)
_BARE_DENIAL = re.compile(
    r"\W*(?:it|they|he|she|this|that)\s+(?:is|are|does|do|can|may|was|did|has|have)\s*(?:not|n't)\W*$"
    r"|\W*(?:it|they|he|she|this|that)\s+(?:isn't|aren't|doesn't|don't|can't|cannot|wasn't|didn't)\W*$",
    re.I,
)


_RESTRICTED = re.compile(r"\b(?:only|except|but|unless)\b", re.I)


def _refuses(case) -> bool:
    """Whether an answer without yes or no denies what the question asks: its first
    statement a bare denial, or a word of refusal the question does not use, about a thing
    the question names."""
    first = _STATEMENT_BREAK.split(case.answer, maxsplit=1)[0]
    if _BARE_DENIAL.fullmatch(first):
        return True
    found = _REFUSAL.search(first)
    if not found or _REFUSAL.search(case.question):
        return False
    if _RESTRICTED.search(case.answer, found.end()):
        return False  # "not allowed inside, only on the balcony": a place, not a no
    return bool(text.content_terms(first) & case.question_terms)


# "It didn't fail to meet it", "never failed to pay": a failure denied is no denial.
_NOT_FAILED = re.compile(
    r"\b(?:(?:did|does|do|has|have|had|will|would)\s*(?:not|n't)|never)\s+fail(?:s|ed)?\s+to\b",
    re.I,
)
_FAIL = re.compile(r"\bfail", re.I)
_NOT_COUNTING = re.compile(r"\bnot\s+(?:counting|including)\b", re.I)
_NOT_ALTERNATIVES = re.compile(r"\b(?:with\s+or\s+without|whether\s+or\s+not)\b", re.I)
_BOUND_BEFORE = re.compile(
    r"\b(?:at\s+(?:least|most)|(?:more|less|fewer)\s+than|up\s+to|over|under|above|below)\s+"
    r"(?=[$€£]?\d)",
    re.I,
)


def _hedgeable(case) -> str:
    """What of an answer can hedge it: not its reason after a yes or no ("No, thaw it in the
    fridge or in cold water"), not "with or without", not a bound on a figure the question
    itself states ("Yes, decks more than 60 cm high need one")."""
    if text.polarity(case.truth) and _polarity(case.answer):
        return case.answer_text if text.hedge_words(case.answer_text) else ""
    said = _NOT_ALTERNATIVES.sub(" ", case.answer_text)
    asked = case.question_numbers
    for low, high in reversed(
        list(zip(case.answer_numbers, case.answer_numbers[1:], strict=False))
    ):
        if (
            _RANGE_JOIN.fullmatch(said[low.end : high.start])
            and _any_agree([low], asked)
            and (_any_agree([high], asked))
        ):
            said = said[: low.start] + said[high.end :]  # "aged 18 to 64", as the question
    for found in reversed(list(_BOUND_BEFORE.finditer(said))):
        figures = quantities.extract_quantities(said[found.end() :])
        if figures and figures[0].start == 0 and _any_agree(figures[:1], case.question_numbers):
            said = said[: found.start()] + said[found.end() :]
    return said


_WITHOUT = re.compile(r"\b(?:without|not|no|non-?)\s*(?:an?\s+|the\s+|adult\s+)?([a-z]{4,})", re.I)


def _denied_by_question(question: str) -> set[str]:
    """The stems a question itself denies: "without adult supervision", "not required to
    wear uniform", "non-uniform"."""
    return {text.stem(word) for word in _WITHOUT.findall(question or "")} | (
        text.denied_by_prefix(question)
    )


# Words of an answer unsure of itself ("may be" is a document's modal as often).
_UNSURE = re.compile(
    r"\b(?:maybe|perhaps|possibly|probably|likely|either|not\s+sure|i\s+think|i\s+believe|i\s+guess"
    r"|or\s+so)\b",
    re.I,
)


def _states_claim(answer: str, question: str, truth: str) -> bool:
    """Whether a short answer to a yes/no question states its claim ("It returns None if
    the key is missing" to "Does it return None when the key is missing?"): a yes or no
    said in the question's words, not the question said back."""
    if "?" in answer:
        return False
    ranked = text.compared(answer)
    if ranked and text.content_terms(truth) & ranked[0]:
        # "Oslo lies farther north than Stockholm" to "Which is farther north, Oslo or
        # Stockholm?": the question's words, put in order.
        return True
    if not text.polarity(truth):
        return False
    if _polarity(answer):
        return True  # "Yes, 750 hours … are included": its yes is the claim, the rest a reason
    if text.bound(answer) * text.bound(question) < 0:
        return True  # "up to two days a week" to "more than two days?"
    said, asked = text.words(answer), text.words(question)
    return len(said) <= IMPLIED_YES_NO_WORDS and said[:1] != asked[:1]


_NO_DETERMINER = re.compile(
    r"\W*no\s+(?!(?:it|its|they|their|he|his|she|her|we|our|this|that|these|those|there"
    r"|the|a|an|but|as|because|since)\b)[a-z]",
    re.I,
)
# A yes or no said as an answer, not "no" as a determiner ("Yes, no amounts were due").
_BARE_YES_NO = re.compile(r"\b(yes|no)\b(?!\s+(?!and\b|or\b|but\b)[a-z0-9$])")


def _without_figures(said: str) -> str:
    """`said` with its figures and their units blanked out."""
    written = quantities.words_to_digits(said)
    for figure in reversed(quantities.extract_quantities(written)):
        written = written[: figure.start] + " " + written[figure.end :]
    return written


_CLAUSE = re.compile(r"[,;:]|\.(?!\d)|\bbut\b|\bonly\b", re.I)


def _reasons_clash(said: str, truth: str) -> bool:
    """Whether a clause of the answer's reason denies what a clause of the truth's affirms on
    the same words, or the other way round ("$250 million was outstanding" against "no
    amounts were outstanding"); "not waterproof, only splash resistant" does not clash with
    "only splash resistant"."""
    truth_clauses = [
        (text.content_terms(c) - _NEGATION_TERMS, _denies(c)) for c in _CLAUSE.split(truth)
    ]
    for clause in _CLAUSE.split(said):
        terms = text.content_terms(clause) - _NEGATION_TERMS
        for truth_terms, truth_denies in truth_clauses:
            if terms & truth_terms and _denies(clause) != truth_denies:
                return True
    return False


def _denies(said: str) -> bool:
    """Whether a reason denies: an odd count of negations, "without" among them, so that
    "not without written consent" affirms as "requires written consent" does."""
    said_words = text.words((said or "").replace("’", "'"))
    return sum(w in text.NEGATIONS or w == "without" for w in said_words) % 2 == 1


def _negation_words(said: str) -> set[str]:
    return set(text.words((said or "").replace("’", "'"))) & text.NEGATIONS


_SAYS_ANSWER_IS = re.compile(r"^\W*(?:the\s+)?answer\s*(?:is\s*)?:?\s*(yes|no)\b", re.I)


# "That is correct, it did", "Incorrect": the claim asked about affirmed or denied.
_AFFIRMED = re.compile(
    r"^\W*(?:(?:that|this|it)(?:'s|\s+is|\s+was)\s+(?:(not)\s+)?(?:(in)?correct|(un)?true"
    r"|right)|(in)?correct)\b(?!\s+(?:that|to|in|for|setting|answer)\b)(?=\s*(?:[,.;:!—–-]|$))",
    re.I,
)


def _polarity(answer: str, question: str = "") -> str | None:
    """The yes or no an answer opens with, also after "The answer is", or said as "That is
    correct" (yes) or "That is not true" (no)."""
    found = _SAYS_ANSWER_IS.match(answer)
    if found:
        return found.group(1).lower()
    affirmed = _AFFIRMED.match(answer)
    # "Correct – the policy does not cover it" affirms a claim the question did not make.
    # … unless the question asks it negated too ("Is there no fee?", "Did it fail to …?").
    asked = frozenset(text.words(question)) & text.NEGATIONS
    if affirmed and (not text.negated(answer[affirmed.end() :], asked) or _FAIL.search(question)):
        return "no" if sum(bool(g) for g in affirmed.groups()) % 2 else "yes"
    return text.polarity(answer)


# A "no" that opens a noun's clause, not a bound ("No later than 5 pm"), a yes-or-no before
# its reason ("No it is closed"), nor "no need".
_NO_BEFORE_A_WORD = re.compile(
    r"\W*no\s+(?!(?:later|earlier|sooner|more|less|fewer|greater|longer|shorter|need|it|they"
    r"|he|she|we|you|i|but|only|one|way|because|as|not)\b)([a-z][^;.,]*)",
    re.I,
)


def _says_denied_clause(case) -> bool:
    """Whether the truth opens with a "no" that denies its first clause ("No material
    uncertainty … was identified") and the answer says that clause's own words."""
    opened = _NO_BEFORE_A_WORD.match(case.truth)
    if not opened:
        return False
    terms = text.content_terms(opened.group(1)) - case.question_terms - FIGURE_WORDS
    return bool(terms) and _recall(terms, text.content_terms(case.answer)) >= TEXT_RECALL_NEEDED


def _after_polarity(said: str) -> str:
    """The text after its opening yes or no."""
    return re.sub(r"^\W*(?:yes|no)\b\W*", "", said or "", flags=re.I)
