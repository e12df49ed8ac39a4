"""Which part of an answer is judged: where its statements and clauses break, the clause
that gives the figure or the words for what is asked, a short first statement it commits to,
and a truth it says was replaced or set aside.
"""

import re

from engine.rewards import quantities, text
from engine.rewards.offline_judge.codes import _shape
from engine.rewards.offline_judge.figures import FIGURE_WORDS, _any_agree, _bound_asked
from engine.rewards.offline_judge.words import _ORDINAL, _proper_names

# A full stop that ends a sentence, not an abbreviation ("part no. 7", "approx. 3", "J. Smith").
_FULL_STOP = (
    r"(?<!\bno)(?<!\bvs)(?<!\bst)(?<!\bdr)(?<!\bmr)(?<!\bms)(?<!\bfig)(?<!\bsec)(?<!\bapprox)"
    r"(?<!\betc)(?<!\bart)(?<!\bpp)(?<!\beq)(?<!\best)(?<!\bmt)(?<!\bca)(?<!\bgen)(?<!\bvol)"
    r"(?<!\bch)(?<!\bjan)(?<!\bfeb)(?<!\bmar)(?<!\bapr)(?<!\bjun)(?<!\bjul)(?<!\baug)(?<!\bsep)"
    r"(?<!\bsept)(?<!\boct)(?<!\bnov)(?<!\bdec)(?<!\b\w)\.(?:\s+|$)"
)
# Where an answer's statements part: a semicolon, a sentence's end, "while", "whereas",
# "but", and "and" between two figures' clauses ("412 pedestrians and 97 cyclists").
_CLAUSE_BREAK = re.compile(
    rf";|{_FULL_STOP}|,?\s+(?:while|whilst|whereas|but|and|or|except(?:\s+for)?)\s+|,\s+", re.I
)
_BETWEEN = re.compile(r"\bbetween\s+\S+\s*$", re.I)  # "between 2 and 8 °C" is one figure
# A word of a clause that the question does not say weighs more than one it does: "the third
# skill tree" answers another question than "the second skill tree", whatever it shares.
_FOREIGN_WEIGHT = 2
# How far the clause chosen must stand above the next: ahead of every other (a margin of 2
# for every clause lost more true answers than it caught wrong ones on the labelled sets).
_MARGIN = 1


def _asked_clause(case) -> str | None:
    """The clause of an answer that gives the figure for what the question asks, where the
    answer gives figures for several things in clauses of their own ("72 hours for
    discharging; loading is allowed 48 hours"): the one whose own words (those not shared by
    every figure's clause) are the question's, with fewest others. None when the answer is
    one statement, its clauses agree, or none stands out."""
    # The truth's asides are no clauses of its own: "14% of eligible rent (25% for two or more)".
    own_clauses = [c for c in _clauses(text.without_asides(case.truth)) if c.strip()]
    if len(own_clauses) > 1 or text.polarity(case.truth):
        return None
    if not case.truth_numbers or any(re.search(r"[a-z]", c) for c in text.codes(case.truth)):
        # A code's digits ("RC-212") are no figure of a clause: its statement is judged.
        return _asked_statement(case)
    clauses = [c for c in _clauses(case.answer_text) if c.strip()]
    if len(clauses) < 2 or _figures_offered(case):
        return None
    # A clause without a figure of its own says where the next one holds ("In 2022, the
    # rate fell to 3.8%"); one after the last figure says something of them all.
    figured, waiting = [], []
    for clause in clauses:
        figures = [
            f
            for f in quantities.extract_quantities(clause, quantities.scale_hint(case.question))
            if not _any_agree([f], case.question_numbers)
        ]
        waiting.append(clause)
        if figures:
            figured.append((", ".join(waiting), figures))
            waiting = []
    if len(figured) < 2 or all(
        any(case.matches_truth(f) for f in figures) for _, figures in figured
    ):
        return None
    chosen = _best_answering(case, [clause for clause, _ in figured])
    if chosen is None:
        return None
    return ", ".join([chosen, *waiting]).strip()


_OR_BETWEEN = re.compile(r"\s*(?:[^\W\d]{1,3}\.?\s*)?\s+or\s+", re.I)
_CASE_AFTER = re.compile(r"\s*(?:for|in|on|during|if|when|with|after|before|at|from)\b", re.I)


def _figures_offered(case) -> bool:
    """Whether the answer offers two figures as alternatives, side by side ("£1.48 or £1.62
    per cubic metre", "25 m or 45 m lengths"): a hedge, whatever the words around them say."""
    said, figures = case.answer_text, case.answer_numbers
    return any(
        _OR_BETWEEN.fullmatch(said[low.end : high.start]) and not _CASE_AFTER.match(said, high.end)
        for low, high in zip(figures, figures[1:], strict=False)
    )


# Where a statement ends: what follows a semicolon or a full stop is another statement.
_STATEMENT_BREAK = re.compile(rf";|{_FULL_STOP}|,?\s+(?:while|whilst|whereas)\s+", re.I)


# What an answer says right after the truth's words or figure when the truth no longer holds:
# "MultiTerm was replaced by Termbase Pro", "due to expire on 31 August 2027 but has been
# extended to 31 August 2028", "the Svalbard vault was considered but rejected".
# Also a truth no longer so: "£90 in 2022; it has since been increased", "orders over £75
# until last year" (a year after "until" is as often when a term ends).
_SUPERSEDED = re.compile(
    r"(?:\s+in\s+\d{4})?[\s,;]*(?:which\s+|that\s+|but\s+|and\s+|it\s+)?"
    r"(?:(?:was|were|has\s+been|have\s+been|had\s+been)\s+"
    r"(?:later\s+|since\s+|now\s+)?(?:replaced|superseded|phased\s+out|withdrawn|discontinued"
    r"|abolished|rejected|dropped|scrapped|retired|abandoned|revoked|repealed"
    r"|considered\s+but\s+(?:rejected|dropped)|extended\s+to|changed\s+to|moved\s+to"
    r"|postponed\s+to|brought\s+forward\s+to)"
    r"|(?:has|have)\s+since\s+been\s+(?:increased|raised|reduced|cut|lowered|changed|revised"
    r"|replaced|withdrawn|abolished)|until\s+(?:last\s+year|recently))\b",
    re.I,
)


_SUPERSEDING_TERMS = text.content_terms(
    "replaced superseded phased withdrawn discontinued abolished rejected dropped scrapped "
    "retired abandoned revoked repealed considered extended changed moved postponed increased "
    "raised reduced cut lowered revised"
)
_ASKS_EARLIER = re.compile(
    r"\b(?:original(?:ly)?|before|previous(?:ly)?|former(?:ly)?|prior|earlier|initial(?:ly)?"
    r"|used\s+to|pre-\w+|until|old)\b",
    re.I,
)


def _superseded(case, by_words: bool = True) -> bool:
    """Whether the answer says, right after the truth's figure, day or (`by_words`) words,
    that it was replaced, set aside or moved (and the truth does not say so itself)."""
    if _SUPERSEDED.search(case.truth_text) or _ASKS_EARLIER.search(case.question_text):
        return False
    if case.question_terms & _SUPERSEDING_TERMS:
        return False  # "Which law was repealed in 1999?": the change is what is asked
    said = case.answer_text
    ends = [f.end for f in case.answer_numbers if case.matches_truth(f)]
    ends += text.date_ends(said) if text.dates(case.truth) & text.dates(said) else []
    own = text.content_terms(case.truth) - case.question_terms if by_words else set()
    ends += [w.end() for w in re.finditer(r"\w+", said) if text.content_terms(w.group(0)) & own]
    return any(_SUPERSEDED.match(said, end) for end in ends)


# At most this many words make a first statement an answer of its own ("Glass jars",
# "A red card", "1 October"), not a sentence that sets the scene.
LEADING_ANSWER_WORDS = 4


_PREAMBLE = re.compile(
    r"\W*(?:good|great|fair)\s+question|\W*(?:sure|okay|ok|certainly|right|well|so|answer"
    r"|short\s+answer|in\s+short|in\s+brief|briefly|tl;?\s*dr|note|summary)\b"
    r"|\W*(?:based\s+on|according\s+to|from|per)\s+the\s+(?:text|document|passage|results?|manual"
    r"|guide|policy|source)",
    re.I,
)


def _leading_answer(case) -> str | None:
    """An answer's first statement, where it is short and names something of its own (a
    figure, a code, a word neither the question nor the truth writes) and other statements
    follow; None otherwise. A yes or no leads into its reason, judged by its own rules."""
    if text.polarity(case.truth) or text.polarity(case.answer):
        return None
    first, *rest = [s for s in _STATEMENT_BREAK.split(case.answer_text) if s.strip()] or [""]
    if not rest or len(text.words(first)) > LEADING_ANSWER_WORDS or ":" in first:
        return None  # "FY2021: 24.6%; FY2022: 21.6%" labels each case: a list, judged as one
    if _PREAMBLE.match(first):
        return None  # "Good question. The deadline is 1 April."
    figures = quantities.extract_quantities(first)
    if any(case.matches_truth(f) for f in figures):
        return None  # "€60; settling within two weeks brings it to €30": the truth, then more
    said = figures or text.codes(first) or text.dates(first)
    if case.truth_numbers or text.codes(case.truth) or text.dates(case.truth):
        return first if said else None  # "Refrigerated. Keep it at 2-8 °C" names no figure
    own = text.content_terms(first) - case.question_terms - text.content_terms(case.truth)
    return first if own else None


def _asked_statement(case) -> str | None:
    """The statement of an answer in words that answers what is asked, where it makes
    several ("Circle is held to sprint; the dodge roll is on Cross"); None when it makes one
    or none stands out. A truth that opens with yes or no is judged by its own rules."""
    if text.polarity(case.truth):
        return None
    # Codes of one shape in one sentence are told apart by their clauses: "The wheelchair
    # race starts at T0910 and the mass start at T0930".
    codes = text.codes(case.truth)
    shapes = {_shape(code) for code in codes}
    several = len({c for c in text.codes(case.answer) if _shape(c) in shapes}) > 1
    if codes and several and re.search(r"\bor\b", case.answer):
        return None  # "EC-1118 or RC-212": candidates offered, a hedge
    parts = _clauses(case.answer) if codes and several else _STATEMENT_BREAK.split(case.answer)
    statements = [s for s in parts if s.strip()]
    if len(statements) < 2:
        return None
    return _best_answering(case, statements, candidates=True)


def _figure_terms(clause: str, case) -> set[str]:
    """The figures of a clause that measure what a figure of the question measures, as
    terms: the question's own ("#4" for "4 hours"), or another of the same unit ("#2")."""
    asked = {q.unit[0] for q in case.question_numbers if q.unit}
    counted = any(q.kind == "plain" and not q.unit for q in case.question_numbers)
    found = set()
    for figure in quantities.extract_quantities(quantities.words_to_digits(clause)):
        same = [q for q in case.question_numbers if quantities.agree(figure, q)]
        if same:
            found.add(f"#{same[0].text}")
        elif figure.unit and figure.unit[0] in asked:
            found.add(f"#{figure.text}")
        elif counted and figure.kind == "plain" and not figure.unit:
            found.add(f"#{figure.text}")  # "within one standard deviation" to "within 2"
    return found


def _best_answering(case, clauses: list[str], *, candidates: bool = False) -> str | None:
    """The clause whose own words (those not shared by every clause) are the question's,
    with fewest others, by a clear margin; None when none stands out, when the one that does
    says nothing of what is asked, or when another clause is a bare alternative to it ("48
    hours, or 72 hours"). With `candidates`, the clause must also name an answer of the
    truth's kind (a code of its shape, a name), not only restate the question."""
    # Years label a clause as words do ("5.1% in 2021 and 7.4% in 2020"); the words of a
    # figure ("million", "days") label none. Codes too ("the SX-3000 … while the SX-5000"),
    # and the question's own figures: "£6.50 for up to 4 hours" is the clause of "How much
    # for up to 4 hours?", "£3.50 for up to 2 hours" another's.
    terms = [
        (text.content_terms(clause) - FIGURE_WORDS)
        | text.years(clause)
        | text.codes(clause)
        | _figure_terms(clause, case)
        for clause in clauses
    ]
    shared = set.intersection(*terms)
    own = [mine - shared for mine in terms]
    asked = (
        case.question_terms
        | text.years(case.question)
        | text.codes(case.question)
        | {f"#{q.text}" for q in case.question_numbers}
    )
    known = asked | text.content_terms(case.truth) | text.years(case.truth) | text.codes(case.truth)
    # A bound answers a question that asks for one: "at least 12 characters" the minimum.
    bound = _bound_asked(case)
    bounds = [bound * text.bound(clause) for clause in clauses]
    # A code of the truth's shape is a clause's answer ("T2230" to "What time…?"), not a word
    # of another question; one of the question's shape names another case ("the SX-3000").
    shapes = {_shape(c) for c in text.codes(case.truth)} - {
        _shape(c) for c in text.codes(case.question)
    }
    answers = [{c for c in text.codes(clause) if _shape(c) in shapes} for clause in clauses]
    if _proper_names(case.truth) and not case.truth_numbers:
        # A name is what a clause answers "Who…?" with ("the 2019 season was led by Dr Tomas
        # Berg"), not a word of another question.
        answers = [
            mine | (text.names(clause) - asked)
            for mine, clause in zip(answers, clauses, strict=True)
        ]
    # "£650 for the first interment; a second one costs £450" to "… a second interment?":
    # another ordinal than the question's names another case.
    ordinal = {o.lower() for o in _ORDINAL.findall(case.question)}
    contrasts = [
        bool(ordinal) and bool({o.lower() for o in _ORDINAL.findall(clause)} - ordinal)
        for clause in clauses
    ]
    scores = [
        len(mine & asked) - _FOREIGN_WEIGHT * len(mine - known - answer) + 2 * b - 4 * other
        for mine, answer, b, other in zip(own, answers, bounds, contrasts, strict=True)
    ]
    ranked = sorted(range(len(clauses)), key=lambda i: -scores[i])
    chosen = ranked[0]
    if _bare(clauses[0], case.truth) and not all(score < 0 for score in scores[1:]):
        # "330 metres; the tower was originally 312 m", "Leonardo da Vinci. He painted the
        # Mona Lisa in Florence": it leads with its answer, the rest tells about it.
        return None
    # A statement in words that names no answer of its own needs a clearer lead: its words
    # are more often the answer's than another case's ("London. The 2012 Olympics were held
    # there"); one that names another ("… was led by Dr Tomas Berg") does not.
    margin = _MARGIN + 1 if candidates and not answers[chosen] else _MARGIN
    if scores[chosen] - scores[ranked[1]] < margin:
        return None
    others_elsewhere = all(scores[i] < 0 for i in ranked[1:])
    if not (own[chosen] & asked or bounds[chosen] > 0 or answers[chosen] and others_elsewhere):
        return None
    if any(not own[i] - answers[i] for i in ranked[1:]):
        return None  # "…, or 72 hours": an alternative, no case of its own
    if candidates and not (own[chosen] - asked) | answers[chosen]:
        return None  # "…; he painted the Mona Lisa" restates the question, says no answer
    return clauses[chosen]


_NAME_PARTICLES = text.content_terms("da de di del der van von le la bin al")


def _bare(clause: str, truth: str) -> bool:
    """Whether a clause is only an answer: figures with their units, codes, the truth's own
    words ("330 metres", "Leonardo da Vinci", "At T1000"); "Men 13.5-17.5 g/dL" names a case."""
    said = quantities.words_to_digits(clause)
    for figure in sorted(quantities.extract_quantities(said), key=lambda f: -f.start):
        said = said[: figure.start] + " " + said[figure.end :]
    left = text.content_terms(text.without_codes(said)) - text.content_terms(truth)
    return not left - _NAME_PARTICLES


def _clauses(said: str) -> list[str]:
    clauses, start = [], 0
    for found in _CLAUSE_BREAK.finditer(said or ""):
        near = max(start, found.start() - 40)  # a window: linear in a long answer
        if found.group(0).strip().lower() == "and" and _BETWEEN.search(said, near, found.start()):
            continue
        clauses.append(said[start : found.start()])
        start = found.end()
    return [*clauses, (said or "")[start:]]
