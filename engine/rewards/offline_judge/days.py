"""Rules on days, years and periods: times of day written as one code ("T1500"), days by
month and day, days listed side by side or set against each other, the year a figure is
labelled with and the period a question asks.
"""

import re

from engine.rewards import quantities, text

# A time of day, in the twelve-hour clock ("5:45 p.m.", "11 am") or the twenty-four-hour
# one ("05:45", "5:45"), and the two named hours.
_TWELVE_HOUR = re.compile(r"(?<![\d.,:])\b(\d{1,2})(?:[:.](\d{2}))?\s*([ap])\.?\s?m\b\.?", re.I)
# Seconds are dropped ("14:30:00"); a scale or a count after it is no time ("1:25,000").
_TWENTY_FOUR_HOUR = re.compile(r"(?<![\d:.])(\d{1,2}):(\d{2})(?::\d{2})?(?![\d:]|,\d)")
_ASKS_TIME = re.compile(
    r"\b(?:when|what\s+time|hours?|open\w*|clos\w*|depart\w*|arriv\w*|start\w*|begin\w*|end"
    r"|leave\w*|schedul\w*|deadline|time)\b",
    re.I,
)
# "12:00 noon" and "12 midnight" are one time each, not 12:00 and another.
_NAMED_HOURS = re.compile(r"\b(?:12(?:[:.]00)?\s*)?(noon|midday|midnight)\b", re.I)


def _clock_times(said: str, timed: bool = True) -> str:
    """Times of day written one way, as one code of the twenty-four-hour clock: "3 pm",
    "15:00" and "3:00 p.m." are all "T1500", "noon" "T1200", so that a time is said whole
    (as codes are) and "5:45 p.m." is another time than "05:45"."""

    def twelve(found: re.Match) -> str:
        hour, minutes = int(found.group(1)), found.group(2) or "00"
        if not 1 <= hour <= 12 or int(minutes) > 59:
            return found.group(0)
        hour = hour % 12 + (12 if found.group(3).lower() == "p" else 0)
        return f"T{hour:02d}{minutes}"

    def twenty_four(found: re.Match) -> str:
        hour, minutes = int(found.group(1)), int(found.group(2))
        if len(found.group(1)) == 1 and not timed:
            return found.group(0)  # "1:20", "John 3:16": a ratio, a verse
        return f"T{hour:02d}{minutes:02d}" if hour <= 24 and minutes <= 59 else found.group(0)

    said = _NAMED_HOURS.sub(
        lambda m: "T0000" if m.group(1).lower() == "midnight" else "T1200", said
    )
    said = _TWENTY_FOUR_HOUR.sub(twenty_four, _TWELVE_HOUR.sub(twelve, said))
    return _TIME_RANGE.sub(r"\1 to \2", said)  # "T1600-T2000" is a span, not one code


_TIME_RANGE = re.compile(r"(T\d{4})\s*[-–—]\s*(T\d{4})")
_TIME_CODE = re.compile(r"\bT\d{4}\b")


# A truth's condition on its day: "From 1 March 2021, for new hires only".
_CONDITION_WORD = re.compile(r"\b(?:only|unless|except|provided|if|when)\b", re.I)
# Words that place a day rather than name it: "in the week before 1 March", "until".
_PLACED_BY = text.content_terms("before after until till since prior following week month")


# Nothing but separators between two days: "15 June 2021, 1 July 2021".
_DAY_GAP = re.compile(r"[\s,;/|]*")


# "Enacted on 1 January 2020 but in force on 1 July 2020": a day set against another ("and"
# joins days of one story: "announced on … and completed on …", whose subject is the first's).
_CONTRAST = re.compile(r"(?<![\s,]),?\s+(?:but|whereas|while|although|however)\s+", re.I)


_DAY_WRITTEN = re.compile(
    r"\b(?:\d{1,2}\s+)?(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
    r"(?:\s+\d{1,2}(?:st|nd|rd|th)?)?(?:,?\s*\d{4})?",
    re.I,
)


def _same_day_as_written(answer: tuple, truth: tuple) -> bool:
    """The same month and day, and the same year where both write one."""
    return answer[:2] == truth[:2] and (None in (answer[2], truth[2]) or answer[2] == truth[2])


def _days_listed(answer: str) -> bool:
    """Whether the answer writes two or more different days with nothing but separators
    between them."""
    spans = text.date_spans(answer)
    return any(
        left[1] <= right[0]
        and _DAY_GAP.fullmatch(answer[left[1] : right[0]])
        and text.dates(answer[slice(*left)]) != text.dates(answer[slice(*right)])
        for left, right in zip(spans, spans[1:], strict=False)
    )


# A year written right after a figure labels it: "18.5% in 2021", "$3.2 billion for FY2022",
# "21% in 2022 and 2023 alike" (all its years).
_YEAR_AFTER = re.compile(
    r"\s*(?:,\s*)?(?:in|for|during|as\s+of|at\s+the\s+end\s+of)\s+(?:the\s+)?"
    r"(?:fiscal\s+(?:year\s+)?|FY\s?|CY\s?)?((?:19|20)\d{2}(?:\s?[/–-]\s?\d{2})?"
    r"(?:\s*(?:,|and|or|to)\s*(?:FY\s?)?(?:19|20)\d{2})*)\b",
    re.I,
)
# A year the question asks as a period ("in 2022", "for FY2022", "fiscal 2022"), not one that
# names an event or a law ("the Tokyo 2020 Olympics", "the 2017 Tax Cuts and Jobs Act").
_ASKED_PERIOD = re.compile(
    r"(?:\b(?:in|for|during|of|as\s+of|fiscal|year|since|by)\s+(?:the\s+)?(?:year\s+)?"
    r"|\b(?:FY|CY)\s?)((?:19|20)\d{2}(?:\s?[/–-]\s?\d{2})?)\b",
    re.I,
)


def _year_labelled(case, figure: quantities.Quantity) -> str:
    """The year the answer labels its figure with, where the question asks of other years
    as periods and the truth names it not; else ""."""
    asked = (
        set().union(*(_periods(y) for y in _ASKED_PERIOD.findall(case.question)))
        if (_ASKED_PERIOD.search(case.question))
        else set()
    )
    labelled = _YEAR_AFTER.match(case.answer_text, figure.end)
    if not asked or not labelled:
        return ""
    years = _periods(labelled.group(1))
    return "" if years & (asked | _periods(case.truth)) else labelled.group(1)


def _dated(said: str) -> bool:
    """Whether a text names a day or a year ("2019 or later" bounds it)."""
    return bool(text.dates(said) or text.years(said))


def _span_reversed(case) -> bool:
    """Whether the truth spans two times of day and the answer names them the other way
    round: "from T0600 to T2200" is the day, "between T2200 and T0600" the night."""
    truth = list(dict.fromkeys(_TIME_CODE.findall(case.truth_text)))
    said = list(dict.fromkeys(_TIME_CODE.findall(case.answer_text)))
    return len(truth) == 2 and said == truth[::-1]


_DATE_WORDS = text.content_terms(
    "january february march april may june july august september october november december"
    " jan feb mar apr jun jul aug sep sept oct nov dec"
)


_DAY_SPAN = re.compile(r"\b\d{1,2}(?:st|nd|rd|th)?\s*(?:[-–]|to)\s*\d{1,2}\b", re.I)


# A period an answer labels a figure with: "2019", "FY2022", "FY 2022", "FY22".
_PERIOD = re.compile(r"\b(?:FY\s?|CY\s?)?((?:19|20)\d{2})\b|\bFY\s?'?(\d{2})\b", re.I)
# A year split across two ("2022/23", "2011-12", "FY2023-24"): both.
_SPLIT_YEAR = re.compile(r"\b((?:19|20)\d{2})\s?[/–-]\s?(\d{2})\b")


def _periods(written: str) -> set[str]:
    """The years a text names, fiscal or calendar, as four digits; a split year's both."""
    years = {long or f"20{short}" for long, short in _PERIOD.findall(written or "")}
    return years | {f"{first[:2]}{second}" for first, second in _SPLIT_YEAR.findall(written or "")}


def _figure_of_period(
    written: str, given: list[quantities.Quantity], asked: set[str]
) -> quantities.Quantity:
    """The figure an answer commits to: its first, unless the question asks one period and
    the answer labels each figure with one ("24.6% in FY2021 and 21.6% in FY2022", "FY2021:
    24.6%; FY2022: 21.6%"): then the one labelled with the period asked."""
    if len(asked) != 1 or len(given) < 2:
        return given[0]
    labels = []
    for i, figure in enumerate(given):
        # Its period is written after it, up to the next figure or clause, else before it,
        # back to the previous figure or a semicolon.
        following = given[i + 1].start if i + 1 < len(given) else len(written)
        after = re.split(r"[,;]", written[figure.end : following], maxsplit=1)[0]
        previous = given[i - 1].end if i else 0
        before = written[previous : figure.start].rsplit(";", 1)[-1]
        found = _periods(after) or _periods(before)
        if len(found) != 1:
            return given[0]
        labels.append(found.pop())
    mine = [figure for figure, label in zip(given, labels, strict=True) if label in asked]
    return mine[0] if len(mine) == 1 else given[0]


def _same_day(answer: tuple, truth: tuple) -> bool:
    month, day, year = truth
    return answer[0] == month and answer[1] == day and (year is None or answer[2] == year)
