"""`_Case`: one question, truth and answer, with their figures read once (units shared by a
range, compound measures merged, ages in years, periods told), and the checks on those figures
that `OfflineJudge` runs (`agrees`, `stated`, `other_scope`, `words_swapped`, …).
"""

import dataclasses
import functools
import re

from engine.rewards import quantities, text
from engine.rewards.offline_judge.days import _DATE_WORDS, _periods
from engine.rewards.offline_judge.figures import (
    _ASKS_AGE,
    _BOUNDS,
    _CURRENCY_NAMED,
    _HOW_OFTEN,
    _ONCE,
    _PERCENT_NAMED,
    _PRICE_TURN,
    _PRICE_TURNS,
    _RATE_NEAR,
    _RESULT_TERMS,
    _SCOPE,
    _TIME_STEMS,
    FIGURE_WORDS,
    _any_agree,
    _as_times,
    _clause_around,
    _clause_words,
    _compounds,
    _converts_wrongly,
    _counted,
    _direction_near,
    _in_years,
    _label_after,
    _millimetres,
    _nautical,
    _over_told_period,
    _qualified,
    _rates,
    _restated,
    _restates,
    _result_near,
    _scope_words,
    _share_range_units,
    _sterling,
    _unfigured,
    _words_of,
)
from engine.rewards.offline_judge.polarity import _FAIL, _NEGATED_BOUND, _NOT_COUNTING, _NOT_FAILED
from engine.rewards.offline_judge.words import _unlike

# A row quoted from a table: figures with nothing but separators between them.
_ROW_GAP = re.compile(r"[\s,;|/$€£¥]*")
# A clause that gives the figure after it as the value of what it names: "the minimum is".
_GIVEN_AS = re.compile(r"\b(?:is|are|was|were|be|being|equals?)\s*[:=]?\s*(?:about\s+)?$", re.I)


# Two figures joined by "and" with no word of their own: "$8.7 billion and $8.9 billion".
_PAIR_GAP = re.compile(r"[\s,]*(?:and|&)[\s$€£¥]*", re.I)


_APPROXIMATE = re.compile(
    r"\b(?:approximately|approx\.?|roughly|about|around|nearly|almost|circa|some)\b|~", re.I
)
_ROUNDING = re.compile(r"\bround(?:ed|ing)?\b|\bnearest\b", re.I)
_COUNTS = re.compile(r"\bhow\s+many\b", re.I)  # "three quarters" counts quarters there
_ONCE_COUNTS = {"once": 1.0, "twice": 2.0, "thrice": 3.0}
_ONCE_WORDS = re.compile(r"\b(?:once|twice|thrice)\b", re.I)


class _Case:
    """One question, truth and answer, with their figures read once."""

    def __init__(self, question: str, truth: str, answer: str) -> None:
        self.question, self.truth, self.answer = question, truth, answer
        # "How much did the temperature fall?": its figures are changes, but for the levels
        # a change is told between ("from 37 °C to 39 °C").
        self.asks_change = bool(_ASKS_CHANGE.search(question) and _ASKS_AMOUNT.search(question))
        hint = quantities.scale_hint(question)
        fractions = not _COUNTS.search(question)
        self.question_text = quantities.words_to_digits(_as_times(question))
        # Fractions with a slash are read ("2/3 of members"), but as written where the other
        # side writes them alike ("2/3" and "2/3 of the members present").
        self.truth_text = quantities.words_to_digits(
            _as_times(truth), fractions=fractions, slashed_but=quantities.slashes(answer)
        )
        self.answer_text = quantities.words_to_digits(
            _as_times(answer), fractions=fractions, slashed_but=quantities.slashes(truth)
        )
        self.question_numbers = quantities.extract_quantities(self.question_text, hint)
        truth_found = quantities.extract_quantities(self.truth_text, hint)
        answer_found = quantities.extract_quantities(self.answer_text, hint)
        # "Three out of every four" for "75%", and "20%" for "one in five": a share said as
        # a count, read as a percentage where the other side gives one; not for a change
        # asked ("one in five patients" is no 20% reduction of a risk).
        truth_shares, answer_shares = (
            any(f.kind == "percent" for f in found) for found in (truth_found, answer_found)
        )
        if not (_ASKS_AMOUNT.search(question) and _CHANGE_OR_CUT.search(question)):
            if truth_shares and not answer_shares:
                self.answer_text = quantities.proportions_as_percent(self.answer_text)
                answer_found = quantities.extract_quantities(self.answer_text, hint)
            elif answer_shares and not truth_shares:
                self.truth_text = quantities.proportions_as_percent(self.truth_text)
                truth_found = quantities.extract_quantities(self.truth_text, hint)
        self.truth_numbers = _restated(truth_found, self.truth_text)
        self.answer_numbers = _restated(answer_found, self.answer_text)
        self.question_terms = text.content_terms(question)
        self.question_direction = text.direction(question)
        asked = text.words(question)
        self._question_negations = frozenset(asked) & text.NEGATIONS
        # "as a percentage", "in seconds", "in kilograms": the question names the unit, so
        # an answer (or a truth) may leave it out.
        self.percent_named = bool(_PERCENT_NAMED.search(question)) or any(
            q.kind == "percent" for q in self.question_numbers
        )
        self.units_named = {quantities.unit_named(w) for w in asked} - {None}
        self.units_named |= {q.unit[0] for q in self.question_numbers if q.unit}
        self.currency_named = bool(_CURRENCY_NAMED.search(question))
        for numbers in (self.question_numbers, self.truth_numbers, self.answer_numbers):
            numbers[:] = [_millimetres(n) for n in numbers]
        _share_range_units(self.truth_numbers, self.truth_text)
        _share_range_units(self.answer_numbers, self.answer_text)
        if any(t.currency == "£" for t in self.truth_numbers):
            # "Three hundred and fifty pounds" for "£350": pounds sterling, not weight.
            self.answer_numbers = [_sterling(a, self.answer_text) for a in self.answer_numbers]
        self.truth_numbers = _compounds(
            _qualified(self.truth_numbers, self.truth_text), self.truth_text
        )
        self.answer_numbers = _compounds(
            _qualified(self.answer_numbers, self.answer_text), self.answer_text
        )
        units = {t.unit for t in self.truth_numbers}
        if quantities.unit_of("nautical miles") in units and quantities.unit_of("nm") not in units:
            # "300 nm" for a truth in nautical miles is nautical miles, not nanometres.
            self.answer_numbers = [_nautical(n) for n in self.answer_numbers]
        if _ASKS_AGE.search(question):
            # An age with no unit is in years: "16" and "16 years old" are one age,
            # "16 months" another.
            for numbers in (self.question_numbers, self.truth_numbers, self.answer_numbers):
                numbers[:] = [_in_years(n) for n in numbers]
        if _COUNTS.search(question) and not self.answer_numbers:
            # "Resit a failed module once" to "How many resit attempts…?": a count of times.
            self.answer_numbers = [
                quantities.Quantity(_ONCE_COUNTS[w.group(0).lower()], 0, None, "plain", w.group(0),
                                    start=w.start(), end=w.end())
                for w in _ONCE_WORDS.finditer(self.answer_text)
            ]  # fmt: skip
        if (
            _APPROXIMATE.search(question)
            or _APPROXIMATE.search(truth)
            or _ROUNDING.search(question)
        ):
            # "Approximately $5.00", "to the nearest percent": its zeros pad, bind nothing.
            self.truth_numbers = [quantities.padding_dropped(t) for t in self.truth_numbers]
        # "4,000 mg per day" for the "4 g" of a daily dose: a period that the question or
        # the other side already counts per is said, not a unit of its own; a question's
        # period of a figure it states ("2 tablets per day") counts that figure, not the answer.
        asked_rates = set() if self.question_numbers else _rates(question)
        self.answer_numbers = _over_told_period(
            self.answer_numbers,
            self.answer_text,
            self.truth_numbers,
            _rates(truth) | asked_rates,
        )
        self.truth_numbers = _over_told_period(
            self.truth_numbers,
            self.truth_text,
            self.answer_numbers,
            _rates(answer) | asked_rates,
        )

    def negated(self, said: str) -> bool:
        """Whether `said` negates, leaving out the question's own negation words, the
        "not" of a bound ("must not exceed 25 pages", "no more than 8") and of what a count
        leaves out ("eight passengers, not counting the driver")."""
        said = _NOT_COUNTING.sub(" ", _NEGATED_BOUND.sub(" ", said or ""))
        if not _FAIL.search(self.question):  # "Did it fail to back up?": a denial then
            said = _NOT_FAILED.sub(" ", said)
        return text.negated(said, self._question_negations)

    def given_numbers(self) -> list[quantities.Quantity]:
        """The answer's figures, less those the question itself states (context, not an
        answer) unless the truth states them too."""
        return [
            a
            for a in self.answer_numbers
            if self.matches_truth(a) or not _any_agree([a], self.question_numbers)
        ]

    def matches_truth(self, figure: quantities.Quantity) -> bool:
        return any(self.agrees(figure, t) for t in self.truth_numbers)

    def magnitude_matches(self, figure: quantities.Quantity) -> bool:
        return any(quantities.agree(figure, t) for t in self.truth_numbers)

    def agrees(self, figure: quantities.Quantity, truth: quantities.Quantity) -> bool:
        """The same figure with the same sign: "-$75 million", "(75)", "a fall of $75
        million" and "lost $75 million" are one figure; "75 million" is another. Units go
        with it: one that only one side has ("30" for "30 seconds", "7 million shares" for
        "$7 million") must be the one the question names."""
        if not self.same_value(figure, truth):
            return False
        for mine, theirs in ((figure, truth), (truth, figure)):
            if mine.unit and not theirs.unit and mine.unit[0] not in self.units_named:
                return False
        if truth.kind == "money" and figure.kind == "plain" and not figure.unit:
            counted = _counted(self.answer_text, figure.end)
            if counted and counted not in self.question_terms | text.content_terms(self.truth):
                return False
        if (
            truth.kind == "percent"
            and figure.kind == "plain"
            and _counted(self.answer_text, figure.end)
        ):
            return False  # "12 patients" counts them; 12% is a share
        if truth.sign and not figure.sign:
            # "+50%" for the fee of urgent jobs: "a 50% discount" turns it round.
            turned = _PRICE_TURN.match(self.answer_text, figure.end)
            if turned and _PRICE_TURNS[turned.group(1).lower()] != truth.sign:
                return False
        # "Earned $1.26 billion" is no "net loss of $1.26 billion": a result's sign in words,
        # where both sides say one (a truth that says none takes the question's direction).
        said = figure.sign or _result_near(self.answer_text, figure.start, figure.end)
        told = truth.sign or _result_near(self.truth_text, truth.start, truth.end)
        if said and told and said != told:
            return False
        return self.sign(figure, self.answer_text) == self.sign(truth, self.truth_text)

    def same_value(self, figure: quantities.Quantity, truth: quantities.Quantity) -> bool:
        """The same value, scales read as written when the question names none: an answer
        without a scale means what it says ("$37,987" is not "$37,987 million", "12
        thousand" is "12,000"). A truth's money without a scale ("$1577.00") is read as
        written or in the answer's scale, as truths often leave the scale to the reader."""
        difference = (
            self.asks_change
            and not _LEVEL_BEFORE.search(self.answer_text, 0, figure.start)
            and not _LEVEL_BEFORE.search(self.truth_text, 0, truth.start)
        )
        agree = functools.partial(
            quantities.agree, bare_percent=self.percent_named, difference=difference
        )
        if figure.factor is None or truth.factor is None:
            literal_figure = dataclasses.replace(figure, factor=figure.factor or 1.0)
            literal_truth = dataclasses.replace(truth, factor=truth.factor or 1.0)
            if agree(literal_figure, literal_truth):
                return True
            if truth.factor is None and figure.factor is not None and truth.kind == "money":
                return agree(figure, dataclasses.replace(truth, factor=figure.factor))
            return False
        return agree(figure, truth)

    def sign(self, figure: quantities.Quantity, written: str) -> int:
        """+1 or -1: the figure's own sign, else the direction written beside it in
        `written`, else the direction the question asks about."""
        if figure.sign:
            return figure.sign
        said = _direction_near(written, figure.start, figure.end)
        if said:
            return said
        # Unsigned: the direction the question asks about ("By how much did it increase"),
        # else positive.
        return self.question_direction or 1

    def truth_change(self) -> tuple[quantities.Quantity, quantities.Quantity] | None:
        """The two figures of a truth that says a change "from" one "to" the other, when
        the question asks how much something changed; else None."""
        if not _ASKS_CHANGE.search(self.question) or not _ASKS_AMOUNT.search(self.question):
            return None
        numbers, written = self.truth_numbers, self.truth_text
        for start, end in zip(numbers, numbers[1:], strict=False):
            if _FROM.search(written[: start.start]) and _TO.fullmatch(
                written[start.end : end.start]
            ):
                return start, end
        return None

    def level_after_change(self, figure: quantities.Quantity) -> bool:
        """Whether `figure` is the level a truth's change came "to" ("declined 120 basis
        points to 38.5%"), said with the truth's direction, to a question that asks what
        happened rather than by how much: "It declined to 38.5%" answers it."""
        if _ASKS_AMOUNT.search(self.question):
            return False
        turn = text.direction(self.truth)
        if not turn or text.direction(self.answer) != turn:
            return False
        return any(
            _LEVEL_AFTER.search(self.truth_text[: t.start]) and self.agrees(figure, t)
            for t in self.truth_numbers[1:]
        )

    def stated(self) -> list[quantities.Quantity]:
        """The truth's figures in its first statement (up to a sentence's end, a semicolon
        or a bracket), less those the question itself gives and the level a change came to
        ("grew 8% to $12.4 billion": the change is the answer, where it ended a detail)."""
        end = _STATEMENT_END.search(self.truth_text)
        cut = end.start() if end else len(self.truth_text)
        changed = bool(text.direction(self.truth))
        return [
            t
            for t in self.truth_numbers
            if t.start < cut
            and not _any_agree([t], self.question_numbers)
            and not (changed and _LEVEL_AFTER.search(self.truth_text[: t.start]))
        ]

    def named_otherwise(self, given: list[quantities.Quantity]) -> str:
        """A figure of the answer, not the truth's, that its own clause gives for a word the
        question asks about: "2 GB" in "4 GB is recommended; the minimum is 2 GB" to "How
        much RAM is required at minimum?"."""
        asked = self.question_terms
        previous = 0
        for figure in given:
            clause = re.split(r"[,;.:()]\s", self.answer_text[previous : figure.start])[-1]
            previous = figure.end
            if self.matches_truth(figure):
                continue
            if _GIVEN_AS.search(clause) and text.content_terms(clause) & asked:
                return figure.text
        return ""

    def foreign_rate(self) -> list[str]:
        """What the answer counts its figure per ("per year", "a night", "each game") where the
        truth or the question counts it per something else ("per semester", "hourly"). A
        rate where neither names one is the answer's own reading ("25 MB per file")."""
        told = _rates(self.truth_text) | _rates(self.question_text)
        # "Each team has six players" to "How many does each volleyball team have": a thing
        # the question names is no rate of the answer's own.
        # What an aside counts per explains the figure ("$2.97 (twelve monthly payments)").
        said = _rates(text.without_asides(self.answer_text)) - (self.question_terms - _TIME_STEMS)
        if _rates(self.truth_text):
            # A truth that counts per something ("$55 per day") is not answered per another
            # thing the question names, written right after the figure ("$55 per meal" for
            # the per diem for meals).
            for figure in self.answer_numbers:
                if self.matches_truth(figure):
                    after = re.split(r"[.;:,\n]", self.answer_text[figure.end :], maxsplit=1)[0]
                    near = _rates(after, within=_RATE_NEAR)
                    # "$250 per reefer container" counts per the truth's container; "500 mg
                    # per dose, twice a day" says the truth's "twice daily" too, a dose's
                    # frequency ("10 mg per dose, three a day" is no "10 mg per day").
                    own = _rates(self.truth_text)
                    often = own <= said and _HOW_OFTEN.search(self.truth_text)
                    if not own & text.content_terms(after[: _RATE_NEAR + 20]) and not often:
                        said |= near
        return sorted(said - told) if told and said - told else []

    def relabelled(self, given: list[quantities.Quantity]) -> list[str]:
        """The words that name a figure of the truth's statement ("6.5 overall", "30% to
        second") written after another figure in the answer ("6.0 overall", "20% to
        second"): the truth's figures, each given to another thing."""
        stated = self.stated()
        if len(stated) < 2:
            return []
        moved = []
        for truth in stated:
            label = _label_after(self.truth_text, truth, self.truth_numbers)
            mine = [f for f in given if self.agrees(f, truth)]
            if not label or any(
                label & _label_after(self.answer_text, f, self.answer_numbers) for f in mine
            ):
                continue  # the truth's figure keeps its words ("1 tablet … 14 tablets")
            for figure in given:
                if label & _label_after(self.answer_text, figure, self.answer_numbers) and not (
                    self.agrees(figure, truth)
                ):
                    moved.append(sorted(label)[0])
        return moved

    def unstated(self, given: list[quantities.Quantity]) -> list[str]:
        """The figures of the truth's first statement (`stated`) that `given` leaves out."""

        def said(truth: quantities.Quantity) -> bool:
            same = [truth] + [
                t
                for t in self.truth_numbers
                if _restates(t, truth, self.truth_text) or _restates(truth, t, self.truth_text)
            ]
            return any(self.agrees(a, t) for a in given for t in same)

        return [t.text for t in self.stated() if not said(t)]

    def converted_wrongly(self, given: list[quantities.Quantity]) -> list[str]:
        """The figures of `given` that restate a truth's temperature wrongly in another scale."""
        return [
            a.text
            for a in given
            if _converts_wrongly(
                a,
                self.truth_numbers,
                self.asks_change and not _LEVEL_BEFORE.search(self.answer_text, 0, a.start),
            )
        ]

    def other_scope(self) -> str:
        """A phrase of the answer naming the case its figure holds for ("for single-AZ
        deployments", "in patients with severe renal impairment", "in year 3") where the
        question names the same kind of case otherwise ("for multi-AZ deployments": a word
        shared, a word each of its own), and the truth does not say the answer's; "" when
        none. Periods are the period checks' ("in FY2021"), and a clause giving another
        figure is context ("compared with 1,150 in 2022")."""
        asked: dict[str, list[set[str]]] = {}
        for found in _SCOPE.finditer(self.question_text):
            asked.setdefault(found.group(1).lower(), []).append(_scope_words(found.group(2)))
        truth_terms = text.content_terms(self.truth_text)
        unfigured = _unfigured(self.answer_text, self.answer_numbers)
        for found in _SCOPE.finditer(self.answer_text):
            clause = _clause_around(unfigured, found.start())
            figures = [
                f
                for f in self.answer_numbers
                if clause[0] <= f.start < clause[1] and not found.start() <= f.start < found.end()
            ]
            if any(not self.matches_truth(f) for f in figures):
                continue
            mine = _scope_words(found.group(2))
            if not mine or mine <= truth_terms or _periods(found.group(2)):
                continue
            for other in asked.get(found.group(1).lower(), []):
                if mine & other and mine - other and other - mine:
                    return found.group(0).strip()
        return ""

    def other_case_figure(self) -> str:
        """A figure of the answer that names its case the way the question names it, with
        another value ("£4.50 for up to two hours" to "… for up to 4 hours?"): the same words
        before it, the same measure; "" when none."""
        for figure in self.answer_numbers:
            before = self.answer_text[: figure.start]
            if (
                not figure.unit
                or self.matches_truth(figure)
                or before.count("(") > before.count(")")
            ):
                continue  # an aside's case is context: "£4.50 (£2.50 for up to 2 hours)"
            mine = text.words(self.answer_text[max(0, figure.start - 30) : figure.start])[-2:]
            for asked in self.question_numbers:
                theirs = text.words(self.question_text[max(0, asked.start - 30) : asked.start])
                if (
                    asked.unit
                    and asked.unit[0] == figure.unit[0]
                    and mine
                    and mine == theirs[-2:]
                    and not quantities.agree(figure, asked)
                ):
                    return " ".join([*mine, figure.text])
        return ""

    def rate_said(self) -> set[str]:
        """The words of the truth's rate ("once", "day" of "daily") when the answer counts per
        the same periods in its own words ("per day")."""
        rates = _rates(self.truth_text)
        if not rates or not rates <= _rates(self.answer_text):
            return set()
        told = text.content_terms(" ".join(["once", *rates]))
        # "Twice a day" is not "per day": the count stays the truth's own words.
        return told if text.content_terms(self.truth_text) & _ONCE else set()

    def results_said(self) -> set[str]:
        """The words that say a result's sign ("deficit", "shortfall") where the truth says
        one: the sign is judged with the figure, and one such word is another's synonym."""
        return _RESULT_TERMS if text.content_terms(self.truth_text) & _RESULT_TERMS else set()

    def words_told(self) -> list[str]:
        """The truth's words about its figures when the answer says none of them and they
        are two or more: "twice daily" of "10 mg twice daily"."""
        skip = self.question_terms | FIGURE_WORDS | _DATE_WORDS | text.UP | text.DOWN
        truth = _clause_words(self.truth_text, self.truth_numbers) - self.rate_said()
        truth -= self.results_said()
        said = _words_of(_unfigured(self.answer_text, self.answer_numbers))
        truth -= skip
        return sorted(truth) if len(truth) >= 2 and not truth & said else []

    def words_swapped(self) -> list[str]:
        """The answer's own words where the truth's words about its figures are missing: "per
        year" for "1.5% per month", "AA batteries" for "AAA batteries", "beats per second".
        Words only one side says (a label, a reason) are not a swap."""
        # A figure's own unit is judged with it ("8849 meters" for "8,849 metres"), and its
        # direction with its sign ("dropped" for "decreased").
        skip = self.question_terms | FIGURE_WORDS | _DATE_WORDS | text.UP | text.DOWN | _BOUNDS
        skip |= self.results_said()
        truth = _clause_words(self.truth_text, self.truth_numbers)
        unfigured = _unfigured(self.answer_text, self.answer_numbers)
        missing = truth - skip - _words_of(unfigured) - self.rate_said()
        own = _unlike(_clause_words(self.answer_text, self.answer_numbers) - skip - truth, missing)
        return sorted(own) if missing and own else []

    def quotes_row(self) -> bool:
        """Whether the answer quotes two or more different figures side by side, with
        nothing but separators between them ("Total assets 36,500 37,987 34,000")."""
        numbers = self.answer_numbers
        for left, right in zip(numbers, numbers[1:], strict=False):
            gap = self.answer_text[left.end : right.start]
            if (_ROW_GAP.fullmatch(gap) or _PAIR_GAP.fullmatch(gap)) and not quantities.agree(
                left, right
            ):
                return True
        return False


# A level, not a change, where a change is asked: "from 37 °C", "to 0 °C", "below 5 °C".
_LEVEL_BEFORE = re.compile(
    r"\b(?:from|to|below|above|under|over|at|reach(?:ed|es)?|exceed(?:s|ed)?)\s+[-+]?$", re.I
)


# A question asking how much something changed, and a truth saying it went from one figure
# to another ("from 24.6% in FY 2021 to 21.6% in FY 2022").
_ASKS_CHANGE = re.compile(
    r"\b(?:chang|differ|increas|decreas|grow|grew|declin|drop|rise|rose|fell|fall|shift)\w*",
    re.I,
)
_CHANGE_OR_CUT = re.compile(rf"{_ASKS_CHANGE.pattern}|\b(?:reduc|lower|cut|improv|rais)\w*", re.I)
# A question that asks for an amount of change, not what happened ("By how much did…").
_ASKS_AMOUNT = re.compile(
    r"\bhow\s+(?:much|many|far)\b|\bby\s+what\b"
    r"|\bwhat\s+(?:is|was|were|are)\s+the\s+(?:change|increase|decrease|difference|growth|decline)",
    re.I,
)
_FROM = re.compile(r"\bfrom\s+(?:about\s+|approximately\s+)?$", re.I)
_TO = re.compile(
    r"(?:\s+(?:in|at|for|during|on|as\s+of)\s+[^,;:.]*?)?,?\s+to\s+(?:about\s+|approximately\s+)?",
    re.I,
)

_LEVEL_AFTER = re.compile(r"(?<!\bup\s)\bto\s*$", re.I)  # "up to" bounds, it reaches nothing


# Where a truth's first statement ends: what follows explains it ("$1,577 million. Up 5%").
_STATEMENT_END = re.compile(r"\.(?:\s|$)|;|\s\(")


# A question that asks what was added: "How many jobs did the economy add?", "new cases".
_ASKS_ADDED = re.compile(r"\b(?:add|added|adds|new|net|gain|gained|more)\b", re.I)
# A figure said as a change: "an increase of 48,200 units", "sales rose by 12%".
_AS_CHANGE = re.compile(
    r"(?:\b(?:increase|decrease|rise|fall|decline|jump|reduction)\s+of"
    # a verb only with "by": "it rose 300 metres", "gained 4 points" say levels as often
    r"|\b(?:up|down|rose|fell|increased|decreased|grew|declined|dropped|gained|jumped)\s+by)"
    r"\s+$",
    re.I,
)


def _change_for_level(case: _Case, figure: quantities.Quantity) -> bool:
    """Whether the answer gives its figure as a change where the question asks a level and
    the truth is one (no rise or fall in either); a percentage is often a rate of change
    itself ("prices rose 2.9%" is the inflation rate)."""
    if (
        figure.kind == "percent"
        or _ASKS_ADDED.search(case.question)
        or _ASKS_CHANGE.search(case.question)
        or text.direction(case.truth)
        or text.direction(case.question)
    ):
        return False
    return bool(_AS_CHANGE.search(case.answer_text[max(0, figure.start - 30) : figure.start]))
