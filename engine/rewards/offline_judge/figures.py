"""Rules on figures: the words that say what a figure counts, its unit, scale and sign
(read once per question in `case`), how often it counts ("twice daily", "per month"), the
change from one figure to another, the precision a question asks for, and bounds: the side a
figure is bounded from and the bound a question asks for.
"""

import dataclasses
import math
import re

from engine.rewards import quantities, text
from engine.rewards.offline_judge.words import _ORDINAL

# The words that say what a figure counts ("million", "USD", "percent"), not what it is.
FIGURE_WORDS = text.content_terms(
    " ".join([*quantities.SCALES, "millions thousands billions trillions"])
    + " usd dollar dollars percent percentage per cent share shares"
)


# "Round your answer to two decimal places", "to one decimal", "to the nearest hundredth".
_ASKS_DECIMALS = re.compile(
    r"\bround(?:ed|ing)?\b[^.?;]{0,30}?\bto\s+(?:the\s+nearest\s+)?(?:(one|two|three|four|\d)\s+"
    r"(?:decimals?|decimal\s+places?|places?|dp)\b|(tenth|hundredth|thousandth)s?\b)",
    re.I,
)
_DECIMALS_NAMED = {"one": 1, "two": 2, "three": 3, "four": 4, "tenth": 1, "hundredth": 2}
_DECIMALS_NAMED["thousandth"] = 3


def _coarser_than_asked(
    question: str, figure: quantities.Quantity, truths: list[quantities.Quantity]
) -> bool:
    """Whether the question asks its figure to N decimals and the answer's figure, written
    with fewer, differs from the truth's (written alike) by more than N decimals allow."""
    asked = _ASKS_DECIMALS.search(question or "")
    if not asked:
        return False
    named = (asked.group(1) or asked.group(2)).lower()
    places = int(named) if named.isdigit() else _DECIMALS_NAMED[named]
    if figure.decimals >= places:
        return False
    alike = [
        t
        for t in truths
        if t.kind == figure.kind
        and (t.factor or 1.0) == (figure.factor or 1.0)
        and t.unit == figure.unit
    ]
    return bool(alike) and all(
        abs(figure.mantissa - t.mantissa) > 0.5 * 10.0**-places + 1e-12 for t in alike
    )


_ASKS_AGE = re.compile(
    r"^(?!.*\bhow\s+(?:many|much)\b).*(?:\b(?:what|which|minimum|maximum|youngest|oldest|lowest"
    r"|upper|lower)\b.*\bage\b|\bhow\s+old\b|\bage\s+(?:limit|range|requirement)s?\b)",
    re.I | re.S,
)
_YEARS = quantities.unit_of("years")


def _nautical(figure: quantities.Quantity) -> quantities.Quantity:
    if figure.unit not in (quantities.unit_of("nm"), ("torque", 1.0)):  # "nm", "NM"
        return figure
    return dataclasses.replace(figure, factor=None, unit=quantities.unit_of("nautical miles"))


def _over_told_period(
    numbers: list[quantities.Quantity],
    written: str,
    others: list[quantities.Quantity],
    told: set[str],
) -> list[quantities.Quantity]:
    """`numbers` with each measure per a period in `told` read as the measure alone, where
    the other side's figures are measures of it with no period ("1.2 g/day" for "1200 mg",
    asked daily); a rate the other side writes as a rate too stays one."""
    if any(o.unit and "/" in o.unit[0] for o in others):
        return numbers
    measures = {o.unit[0] for o in others if o.unit}
    out = []
    for figure in numbers:
        alone = quantities.over_period(figure, written)
        fits = alone and alone[0].unit[0] in measures and text.stem(alone[1]) in told
        out.append(alone[0] if fits else figure)
    return out


def _in_years(figure: quantities.Quantity) -> quantities.Quantity:
    if figure.unit or figure.kind != "plain" or figure.factor:
        return figure
    return dataclasses.replace(figure, unit=_YEARS)


def _restates(figure: quantities.Quantity, headline: quantities.Quantity, written: str) -> bool:
    """Whether a figure of the truth, in brackets right after its headline, is the headline
    in another unit of the same measure: "120 m (400 ft)" is answered by "400 feet"."""
    between = written[headline.end : figure.start]
    return bool(
        figure is not headline
        and figure.unit
        and headline.unit
        and figure.unit[0] == headline.unit[0]
        and figure.unit[1] != headline.unit[1]
        and re.fullmatch(r"\s*\(\s*(?:about\s+|approx\.?\s+|~\s*)?", between, re.I)
        and _about_equal(figure, headline)
    )


def _about_equal(a: quantities.Quantity, b: quantities.Quantity) -> bool:
    """Whether two measures in units of one dimension are one quantity, within 5 % (a
    conversion is rounded: 400 ft is 121.9 m, said beside 120 m)."""
    first, second = a.mantissa * a.unit[1], b.mantissa * b.unit[1]
    return abs(first - second) <= 0.05 * max(abs(first), abs(second))


# A ratio the truth names by its sides: "3.2 (requested/available)".
_RATIO_SIDES = re.compile(r"\b([a-z]{3,})\s*/\s*([a-z]{3,})\b", re.I)


def _ratio_turned(case) -> bool:
    """Whether the truth names a ratio's sides ("requested/available") and the answer,
    giving its figure, names them the other way round ("available time was 3.2 times the
    requested")."""
    said = text.content_terms(case.answer_text)
    for top, bottom in _RATIO_SIDES.findall(case.truth_text):
        top, bottom = text.stem(top.lower()), text.stem(bottom.lower())
        if top == bottom or not {top, bottom} <= said:
            continue
        order = [text.stem(w) for w in text.words(case.answer_text)]
        if order.index(bottom) < order.index(top) and any(
            case.matches_truth(a) for a in case.answer_numbers
        ):
            return True
    return False


# Words that bound a figure ("at least", "no later than", "within", "up to"): the bound
# itself is judged by its opposite ("at most" for "at least"), not as a word of the truth.
_BOUNDS = text.content_terms("least most later earlier sooner more less fewer within up")


# A truth that is a span of values ("Between 2 °C and 8 °C", "0 °C to 40 °C"): an answer
# giving it as a range ("2–8 °C") commits to it; its ends are judged as its figures.
_SPAN = re.compile(
    r"(?<!from )(?<![\w.,])(?:between\s+)?[$€£]?\d[\d,.]*\s*(?:%|°\s?[CF]|[A-Za-z]+)?\s*"
    r"(?:to|and|through|–|-)\s*[+-]?[$€£]?\d",
    re.I,
)
_POINTS = re.compile(r"\s*(?:percentage\s+)?\b(?:points?|pts?|pp)\b", re.I)


# Where the words about a figure end: "One, the dictionary", "Three: integers, …" say what
# the figure counts after it, which an answer may leave out.
_CLAUSE_END = re.compile(r"[,:;]|\.(?:\s|$)|\s\(|\s[-–—]\s")


def _clause_words(said: str, figures: list[quantities.Quantity]) -> set[str]:
    """The words of `said`'s first clause, its figures and their units left out."""
    unfigured = _unfigured(said, figures)
    end = _CLAUSE_END.search(unfigured)
    return _words_of(unfigured[: end.start()] if end else unfigured)


_TIMES = {"one": "once", "1": "once", "two": "twice", "2": "twice"}
_ONCE = text.content_terms("once")
# How often a figure counts, said by one word: "daily" is per day.
_RATE_WORDS = {
    "hourly": "hour", "daily": "day", "nightly": "night", "weekly": "week", "monthly": "month",
    "quarterly": "quarter", "yearly": "year", "annual": "year", "annually": "year",
    "annum": "year",
}  # fmt: skip
_FREQUENCY = re.compile(
    # not the end of a compound ("semi-annually", "half-yearly": periods of their own)
    r"\b(?:(?<![\d.,])(one|two|1|2)\s+times|(?<!-)(?:per\s+)?(" + "|".join(_RATE_WORDS) + r"))\b",
    re.I,
)


_DIGIT = re.compile(r"\d")
# "Every 12 months" is once a year, "every 7 days" once a week, "every 24 hours" once a day,
# "every 3 months" once a quarter.
_SPANS = {
    "12 months": "year", "7 days": "week", "24 hours": "day", "seven days": "week",
    "3 months": "quarter", "three months": "quarter",
}  # fmt: skip
_SPANS |= {"twelve months": "year", "twenty-four hours": "day"}
_EVERY_SPAN = re.compile(r"\b(?:once\s+)?every\s+(" + "|".join(_SPANS) + r")\b", re.I)
# A multiple written with an "x" glued to its figure, nothing after ("2.8x"); not "2 x AAA",
# nor a dimension ("2x4", "73 × 92 cm").
_MULTIPLE = re.compile(r"(?<=\d)x\b(?!\s*[\w×])", re.I)


def _every_span(said: str) -> str:
    """ "Every 12 months" as "once a year": for the other side, which says how often in words
    and no figure ("Annually")."""
    return _EVERY_SPAN.sub(lambda m: f"once a {_SPANS[m.group(1).lower()]}", said)


_EVERY = re.compile(r"\b(?:every|each)\s+(day|night|week|month|quarter|year)\b", re.I)
_COUNTED_BEFORE = re.compile(r"\b(?:once|twice|thrice|times)\s+$", re.I)


def _as_times(said: str) -> str:
    """ "two times daily" as "twice a day", "annually" as "once a year": one way of writing
    how often, so that "twice daily" and "two times a day", "annually" and "once a year" are
    judged as the same words (and "twice a year" as another)."""
    said = said or ""

    def frequency(found: re.Match) -> str:
        if found.group(1):
            return _TIMES[found.group(1).lower()]
        per = _RATE_WORDS[found.group(2).lower()]
        counted = _COUNTED_BEFORE.search(said, max(0, found.start() - 12), found.start())
        return f"a {per}" if counted else f"once a {per}"

    said = _EVERY.sub(lambda m: f"once a {m.group(1).lower()}", said)  # "every month"
    said = _MULTIPLE.sub(" times", said)  # "2.8x" is "2.8 times"
    return _FREQUENCY.sub(frequency, said)


_MM = re.compile(r"\d\s?mm$", re.I)


def _millimetres(figure: quantities.Quantity) -> quantities.Quantity:
    """ "1.1 mm" as millimetres, not millions, where no currency makes it money: a manual's
    "mm" is a length ("$5mm" stays five million dollars)."""
    if figure.kind == "money" or figure.currency or not _MM.search(figure.text):
        return figure
    return dataclasses.replace(figure, factor=None, unit=("length", 1e-3))


_RANGE_JOIN = re.compile(r"\s*(?:to|and|–|-|—)\s*$", re.I)


def _share_range_units(numbers: list[quantities.Quantity], written: str) -> None:
    """A range or a set of dimensions writes its unit once, at its end ("2–8 °C", "between 0
    and 40 degrees Celsius", "55 × 40 × 20 cm"): the figures before take the last one's."""
    for i in range(len(numbers) - 2, -1, -1):
        low, high = numbers[i], numbers[i + 1]
        gap = written[low.end : high.start]
        if low.unit is None and high.unit and (_RANGE_JOIN.fullmatch(gap) or _BY.fullmatch(gap)):
            numbers[i] = dataclasses.replace(low, unit=high.unit)


# Words that qualify a unit without changing what it counts ("working days" are fewer).
_QUALIFIER = re.compile(r"\s+(?:consecutive|calendar|full|whole|clear)(?=\s)", re.I)


def _counted_otherwise(case) -> bool:
    """Whether an answer gives a number in a form no figure is read from: an ordinal ("the
    fourth week" for "week 4") other than those the question or truth write ("in their first
    season" says no count of sessions), a code or a version ("v18.17.0")."""
    said = case.answer
    written = {o.lower() for o in _ORDINAL.findall(f"{case.question} {case.truth}")}
    ordinals = {o.lower() for o in _ORDINAL.findall(said)} - written
    return bool(ordinals or text.codes(said) or text.dotted_numbers(said))


def _sterling(figure: quantities.Quantity, written: str) -> quantities.Quantity:
    """A figure in "pounds" as money in pounds sterling."""
    if (
        not figure.unit
        or figure.unit[0] != "mass"
        or "pound" not in written[figure.start : figure.end].lower()
    ):
        return figure
    return dataclasses.replace(figure, unit=None, kind="money", currency="£")


def _label_after(
    written: str, figure: quantities.Quantity, figures: list[quantities.Quantity]
) -> set[str]:
    """The first word that names what a figure counts, written right after it and before the
    next figure or clause: "overall" of "6.5 overall", "second" of "30% to second"."""
    following = [f.start for f in figures if f.start > figure.start]
    end = min([*following, len(written)])
    after = re.split(r"[,;:()]|\.\s|\b(?:and|or)\b", written[figure.end : end], maxsplit=1)[0]
    for word in text.words(after)[:3]:
        terms = text.content_terms(word) - FIGURE_WORDS - _BOUNDS
        if terms:
            return terms
    return set()


def _qualified(numbers: list[quantities.Quantity], written: str) -> list[quantities.Quantity]:
    """A unit written after a word that qualifies it ("60 consecutive days", "10 working
    days") is the figure's unit."""
    kept = []
    for figure in numbers:
        if figure.unit is None:
            qualifier = _QUALIFIER.match(written, figure.end)
            unit = qualifier and quantities.unit_after(written, qualifier.end() + 1)
            if unit:
                figure = dataclasses.replace(figure, unit=unit)
        kept.append(figure)
    return kept


_BY = re.compile(r"\s*(?:×|x|by)\s*", re.I)
_COMPOUND_JOIN = re.compile(r"\s*(?:,\s*|and\s+)?")


def _compounds(numbers: list[quantities.Quantity], written: str) -> list[quantities.Quantity]:
    """A measure written in two units, the larger first ("3 hours 45 minutes", "6 feet 8
    inches"), as one figure in the smaller: 225 minutes, 80 inches."""
    merged: list[quantities.Quantity] = []
    for figure in numbers:
        last = merged[-1] if merged else None
        if (
            last is not None
            and last.unit
            and figure.unit
            and last.unit[0] == figure.unit[0]
            and last.unit[1] > figure.unit[1]
            and not figure.sign
            and _COMPOUND_JOIN.fullmatch(written[last.end : figure.start])
        ):
            size = figure.unit[1]
            value = last.mantissa * last.unit[1] / size + figure.mantissa
            merged[-1] = dataclasses.replace(
                figure,
                mantissa=value,
                text=f"{value:g}",
                sign=last.sign,
                start=last.start,
            )
            continue
        merged.append(figure)
    return merged


def _celsius(figure: quantities.Quantity, difference: bool = False) -> float | None:
    """A temperature in degrees Celsius, or a `difference` of temperatures; None for any
    other figure."""
    value = figure.mantissa * (figure.sign or 1)
    scale = figure.unit[0] if figure.unit else None
    if difference:
        return {"celsius": value, "fahrenheit": value * 5 / 9, "kelvin": value}.get(scale)
    return {
        "celsius": value,
        "fahrenheit": (value - 32) * 5 / 9,
        "kelvin": value - 273.15,
    }.get(scale)


def _converts_wrongly(
    figure: quantities.Quantity, truths: list[quantities.Quantity], difference: bool = False
) -> bool:
    """Whether `figure` restates a truth's temperature in another scale, and wrongly ("100
    °C, which is 200 °F"): within the figure's last digit, or it is another figure."""
    mine = _celsius(figure, difference)
    if mine is None:
        return False
    step = 10.0 ** (-max(figure.decimals, 0)) * (5 / 9 if figure.unit[0] == "fahrenheit" else 1.0)
    others = [
        _celsius(truth, difference)
        for truth in truths
        if _celsius(truth) is not None and truth.unit[0] != figure.unit[0]
    ]
    return bool(others) and all(abs(mine - theirs) > step / 2 + 1e-9 for theirs in others)


# The case a figure holds for: "for multi-AZ deployments", "in year 2", "during probation".
_SCOPE = re.compile(
    r"\b(for|in|during|as|with|on|under)\s+(?!at\b)((?:an?\s+|the\s+)?[\w-]+(?:\s+[\w-]+){0,3}?)"
    r"(?=\s*(?:[,.;:?()]|$|\b(?:is|are|was|were|and|or|than|to|of)\b))",
    re.I,
)


def _clause_around(said: str, at: int) -> tuple[int, int]:
    """Where the clause of `said` holding position `at` starts and ends."""
    ends = [m.start() for m in _CLAUSE_END.finditer(said)]
    start = max([e + 1 for e in ends if e < at], default=0)
    end = min([e for e in ends if e >= at], default=len(said))
    return start, end


def _scope_words(phrase: str) -> set[str]:
    """The content terms of a case's phrase, figures kept ("year 2")."""
    return text.content_terms(phrase, keep_numbers=True) - FIGURE_WORDS


_TIME_NOUNS = "second minute hour day night week month quarter semester term season year game half"
# Periods stay rates whatever the question names ("in the first year": "per year" is no
# rent per month).
_TIME_STEMS = text.content_terms(_TIME_NOUNS)
_RATE = re.compile(
    rf"\b(?:per|each|every)\s+(?:[a-z]+\s+(?=(?:{_TIME_NOUNS.replace(' ', '|')})s?\b))?([a-z]+)"
    rf"|\b(?:a|an)\s+({_TIME_NOUNS.replace(' ', '|')})\b"
    r"|\b(hourly|daily|nightly|weekly|monthly|quarterly|yearly|annual|annually|annum)\b",
    re.I,
)


def _rates(said: str, within: int | None = None) -> set[str]:
    """The stems a text counts per: "per month" and "monthly" are "month"; with `within`,
    only those said in its first that many characters."""
    found = set()
    for rate in _RATE.finditer(said or ""):
        if within is not None and rate.start() > within:
            break
        word = next(g for g in rate.groups() if g).lower()
        found.add(text.stem(_RATE_WORDS.get(word, word)))
    return found


_HOW_OFTEN = re.compile(r"\b(?:once|twice|thrice|times)\b", re.I)
# How near after a figure its rate is said: "$55 per meal", "two inspections a season".
_RATE_NEAR = 25


def _unfigured(said: str, figures: list[quantities.Quantity]) -> str:
    """`said` with its figures, and the units written with them, blanked out: by a mark, not
    spaces, so that "28–44" stays one span and "£85,000" no clause."""
    for figure in sorted(figures, key=lambda f: -f.start):
        said = said[: figure.start] + "#" * (figure.end - figure.start) + said[figure.end :]
    return said


def _words_of(said: str) -> set[str]:
    """Content terms of `said` less its figures' digits."""
    return {t for t in text.content_terms(said) if not any(ch.isdigit() for ch in t)}


# A bound that leaves its figure out ("more than 21 years" is no minimum age of 21).
_STRICT_BOUND = re.compile(
    r"\b(?:more|less|fewer|greater|higher|lower)\s+than\b"
    r"|\b(?:over|under|above|below)\s+(?=[$€£]?\d)",
    re.I,
)


# A question that asks for a bound: "the minimum age", "at least how many", "the maximum
# dose", "how long can it stay".
_ASKS_LOWER = re.compile(
    r"\b(?:minimum|min|lowest|earliest|at\s+least|no\s+(?:less|fewer|closer|sooner)\s+than)\b"
    # "How much notice must it give?", "How far in advance must it be booked?": a requirement
    r"|\bhow\s+(?:much|many|long|far)\b.*\b(?:must|required|need|needs)\b",
    re.I,
)
_ASKS_UPPER = re.compile(
    r"\b(?:maximum|max|highest|latest|limit|up\s+to|at\s+most|no\s+more\s+than|exceed)\b"
    r"|\bhow\s+(?:long|many|much|far|often)\b.*\b(?:can|may)\b",
    re.I,
)


# A bound said plainly of the figure right after it: "may not exceed 120 days" is a maximum,
# "at least 16" a minimum ("under 250 mm" often names the case excluded instead).
_PLAIN_BOUND_BEFORE = {
    -1: re.compile(
        r"(?:not\s+(?:to\s+)?exceed|at\s+most|no\s+more\s+than|a\s+maximum\s+of)\s*$", re.I
    ),
    1: re.compile(r"(?:at\s+least|no\s+(?:less|fewer)\s+than|a\s+minimum\s+of)\s*$", re.I),
}


def _bounded_otherwise(case) -> bool:
    """Whether the answer bounds the truth's figure plainly from the other side than the
    question asks (a maximum for "What is the minimum…?"), where the truth bounds it not."""
    asked = _bound_asked(case)
    if not asked or text.bound(case.truth_text):
        return False
    other = _PLAIN_BOUND_BEFORE[-asked]
    return any(
        other.search(case.answer_text, 0, figure.start)
        for figure in case.answer_numbers
        if case.matches_truth(figure)
    )


def _bound_asked(case) -> int:
    """+1 when the truth or question asks for a lower bound, -1 an upper one, 0 neither."""
    said = text.bound(case.truth_text)
    if said:
        return said
    return bool(_ASKS_LOWER.search(case.question)) - bool(_ASKS_UPPER.search(case.question))


def _changes(start: quantities.Quantity, end: quantities.Quantity) -> list[quantities.Quantity]:
    """The change from `start` to `end` as figures an answer may give, signed: the
    difference in the start's scale (in percentage points between percentages), at the
    coarser end's precision, and the change relative to the start, in percent to one decimal."""
    # Both in the finer end's scale ("$1.2 billion" to "$900 million": a change in millions).
    start_factor = start.factor or end.factor or 1.0
    end_factor = end.factor or start_factor
    factor = min(start_factor, end_factor)
    before, after = start.mantissa * start_factor, end.mantissa * end_factor
    difference = (after - before) / factor
    decimals = min(
        start.decimals - round(math.log10(start_factor / factor)),
        end.decimals - round(math.log10(end_factor / factor)),
    )
    shown = max(decimals, 0)
    changes = [
        dataclasses.replace(
            start,
            mantissa=round(abs(difference), shown),
            decimals=decimals,
            factor=factor if start.factor or end.factor else None,
            text=f"{abs(difference):,.{shown}f}",
            sign=1 if difference > 0 else -1,
        )
    ]
    if before:
        relative = 100 * (after - before) / before
        changes.append(
            quantities.Quantity(
                round(abs(relative), 1),
                1,
                1.0,
                "percent",
                f"{abs(relative):.1f}%",
                sign=1 if relative > 0 else -1,
            )
        )
    return [change for change in changes if change.mantissa]


# Scale, currency and percent words: what a figure is measured in, not what it counts.
_MEASURE_WORDS = text.content_terms(
    " ".join([*quantities.SCALES, "millions thousands billions trillions"])
    + " usd dollar dollars euro euros yen sterling percent percentage cent"
)
_PERCENT_NAMED = re.compile(r"%|\bper\s?cent|\bpercentage", re.I)
_CURRENCY_NAMED = re.compile(r"[$€£¥]|\b(?:usd|eur|gbp|dollars?|euros?)\b", re.I)
_COUNTED = re.compile(r"\s*([a-z]+)", re.I)


def _counted(written: str, end: int) -> str | None:
    """The thing a figure counts, from the word right after it ("7 million shares"), stemmed;
    None for a stop word, a figure word or a rise or fall ("75 million in", "75 million
    loss")."""
    found = _COUNTED.match(written, end)
    if not found:
        return None
    terms = text.content_terms(found.group(1)) - _MEASURE_WORDS - text.UP - text.DOWN
    return min(terms) if terms else None


def _restated(figures: list[quantities.Quantity], written: str) -> list[quantities.Quantity]:
    """A figure restated in brackets with its unit ("thirty (30) days", "two (2) AA
    batteries") is one figure: the first takes the unit of the second."""
    figures = list(figures)
    for i, (left, right) in enumerate(zip(figures, figures[1:], strict=False)):
        if left.unit or left.mantissa != right.mantissa:
            continue
        if (
            written[left.end : right.start].strip() != "("
            or written[right.end : right.end + 1] != ")"
        ):
            continue
        unit = right.unit or quantities.unit_after(written, right.end + 1)
        if unit:
            figures[i] = dataclasses.replace(left, unit=unit)
            figures[i + 1] = dataclasses.replace(right, unit=unit)
    return figures


def _direction_near(written: str, start: int, end: int) -> int:
    """The rise or fall said right around a figure, in its own clause: "fell by $75
    million", "$400,000,000 increase", "a loss of $2.1 billion". A figure after "from" or
    "to" is a level, not a change."""
    before = _words_before(written, start)
    if before and before[-1] in {"from", "to"}:
        return 0
    after_text = re.split(r"[.;:,\n]", written[end:], maxsplit=1)[0]
    after = text.words(after_text)[:2]
    if after and after[0] in _MORE_OR_LESS:
        return _MORE_OR_LESS[after[0]]  # "35% less water", "12 more staff"
    return text.direction(" ".join(before + after))


def _result_near(written: str, start: int, end: int) -> int:
    """+1 or -1 for a result said as a gain or a shortfall right around a figure ("earned
    $1.26 billion", "a deficit of $2.1 billion", "a net loss of …"), else 0."""
    before = _words_before(written, start)
    after = text.words(_COMPARISON_BREAK.split(written[end:], maxsplit=1)[0])[:2]
    # The nearest: "from a $4 million deficit to a $1 million surplus" has one of each.
    return next((_RESULTS[w] for w in [*after, *before[::-1]] if w in _RESULTS), 0)


def _words_before(written: str, start: int) -> list[str]:
    """The last four words before `start`, in its own clause."""
    clause_start = max(written.rfind(mark, 0, start) for mark in ".;:\n") + 1
    return text.words(written[clause_start:start])[-4:]


_MORE_OR_LESS = {"more": 1, "greater": 1, "less": -1, "fewer": -1}
# What is said after a figure, up to what it is compared with ("… versus profit of $3 million").
_COMPARISON_BREAK = re.compile(r"[.;:,(\n]|\b(?:versus|vs|against|compared|from|than)\b", re.I)
# A result said as a gain or a shortfall, by words that name no change.
_RESULTS = {"earned": 1, "profit": 1, "surplus": 1, "deficit": -1, "shortfall": -1}
_RESULTS |= {"loss": -1, "losses": -1, "lost": -1}
_RESULT_TERMS = text.content_terms("earned profit surplus deficit shortfall")  # the sign's
# A price turned up or down by the word right after its figure: "a 50% discount", "10% off",
# "a 10% surcharge"; read only against a truth signed as written ("+50%").
_PRICE_TURNS = {"surcharge": 1, "premium": 1, "markup": 1, "discount": -1, "rebate": -1, "off": -1}
_PRICE_TURN = re.compile(r"\s*(" + "|".join(_PRICE_TURNS) + r")\b", re.I)


def _any_agree(answer: list[quantities.Quantity], truth: list[quantities.Quantity]) -> bool:
    return any(quantities.agree(a, t) for a in answer for t in truth)
