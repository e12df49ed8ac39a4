"""`OfflineJudge`: the order of the checks in `judge()`, and a `_judge_*` method for each
kind of truth (a yes or no, an option, a day or year, an entity, figures, a change, words).
"""

from engine.rewards import quantities, text
from engine.rewards.offline_judge.case import _Case, _change_for_level
from engine.rewards.offline_judge.clauses import (
    _asked_clause,
    _best_answering,
    _leading_answer,
    _superseded,
)
from engine.rewards.offline_judge.codes import (
    _identifiers,
    _labels,
    _options,
    _parts_reordered,
    _said_labels,
    _shape,
    _versions_listed,
)
from engine.rewards.offline_judge.days import (
    _ASKS_TIME,
    _CONDITION_WORD,
    _CONTRAST,
    _DATE_WORDS,
    _DAY_SPAN,
    _DAY_WRITTEN,
    _PLACED_BY,
    _clock_times,
    _dated,
    _days_listed,
    _figure_of_period,
    _periods,
    _same_day,
    _same_day_as_written,
    _span_reversed,
    _year_labelled,
)
from engine.rewards.offline_judge.figures import (
    _DIGIT,
    _POINTS,
    _SPAN,
    _STRICT_BOUND,
    FIGURE_WORDS,
    _any_agree,
    _as_times,
    _bound_asked,
    _bounded_otherwise,
    _changes,
    _coarser_than_asked,
    _counted_otherwise,
    _every_span,
    _ratio_turned,
    _restates,
)
from engine.rewards.offline_judge.polarity import (
    _ALLOWED_AFTER_ALL,
    _BARE_YES_NO,
    _CONDITION,
    _CONDITIONED,
    _DENIED,
    _EXCEPTION_TO_NO,
    _EXCEPTION_TO_YES,
    _IF_WORDS,
    _MOTION,
    _NEGATION_TERMS,
    _NO_DETERMINER,
    _UNSURE,
    _WITH,
    IMPLIED_YES_NO_WORDS,
    _after_polarity,
    _denied_by_question,
    _hedgeable,
    _negation_words,
    _polarity,
    _reasons_clash,
    _refuses,
    _says_denied_clause,
    _states_claim,
    _without_figures,
)
from engine.rewards.offline_judge.words import (
    _ABOUT,
    _ASKS_ORDER,
    _JOINS,
    _ORDER_SAID,
    _ORDER_WORDS,
    _WHICH,
    TEXT_RECALL_NEEDED,
    _acronyms_spelled,
    _aspect_changed,
    _called_first,
    _count_asked,
    _first_clause_end,
    _items,
    _items_unsaid,
    _out_of_order,
    _plain_letters,
    _ranks,
    _recall,
    _short_name,
    _unlike,
)
from engine.rewards.verdict import Verdict

# Share of a "which" truth's naming words (the entity before its figure) an answer must say.
ENTITY_RECALL_NEEDED = 0.5


# A wrong answer's score, the reward's partial-credit shaping, never reaches this.
WRONG_SCORE_CAP = 0.5


class OfflineJudge:
    """A deterministic, strict judge; no model, no network, no domain.

    An answer is correct only when it commits to the truth (DESIGN.md, "Measuring
    honestly"): the truth's figure with its sign or direction, scale and unit, within the
    truth's precision; the truth's entity for a "which" question; its yes or no, its option;
    its words otherwise. Hedges, alternatives, ranges, quoted rows of several figures,
    negations and opposites of the truth are not answers. Tested against its own labelled
    set, tests/data/judge_set.jsonl."""

    prompt_id = "offline"

    def judge(self, question: str, ground_truth: str, answer: str) -> Verdict:
        # "1:20" is a time only where a time is asked; "10:30" and "5 pm" are always.
        timed = bool(_ASKS_TIME.search(question or ""))
        # "2 × 10^5" is "200000" before any word or code of it is read.
        answer = quantities.powers_written_out(_clock_times(_plain_letters(answer), timed)).strip()
        ground_truth = quantities.powers_written_out(
            _clock_times(_plain_letters(ground_truth), timed)
        )
        question = quantities.powers_written_out(_clock_times(_plain_letters(question), timed))
        answer = _acronyms_spelled(answer, ground_truth)
        if not _DIGIT.search(quantities.words_to_digits(ground_truth)):
            answer = _every_span(answer)
        if not _DIGIT.search(quantities.words_to_digits(answer)):
            ground_truth = _every_span(ground_truth)
        if not answer:
            return self._wrong("no answer")
        if text.is_loop(answer) and not text.is_loop(ground_truth):
            return self._wrong("a degenerate loop, not an answer")
        # "Loading is allowed 48 hours; discharging 72": the clause that answers what is
        # asked is the answer; the others answer neighbouring questions. Not in an answer that
        # says it is unsure ("48 hours, or perhaps 72"): that is a hedge, judged as one.
        case = _Case(question, ground_truth, answer)
        # Before any clause is judged alone: "6 months was considered but rejected in favour
        # of 12 months" sets its first clause aside in its second (by the truth's figure or
        # day: a word of the truth may name another, "Ana Lopez, was replaced").
        if _superseded(case, by_words=False):
            return self._wrong("says the truth was replaced or set aside")
        if _versions_listed(answer, ground_truth):
            # "… for 2.1.0, 2.3.0 and 3.0.0": candidates, before any of them is judged alone.
            return self._wrong("lists versions side by side without choosing one")
        if not _UNSURE.search(answer):
            # "1 October; 1 April is the deadline for semester A": a short first statement
            # is the answer it commits to; the rest says what else holds.
            leading = _leading_answer(case)
            if leading is not None and not self.judge(question, ground_truth, leading).correct:
                return self._wrong(f"answers {leading.strip()!r} first, not the truth")
            asked = _asked_clause(case)
            if asked is not None:
                return self.judge(question, ground_truth, asked)
        if _superseded(case):
            return self._wrong("says the truth was replaced or set aside")
        # The truth's codes and options, where the question does not write them, are said
        # as written: "HF-2048" is another part than "HF-2047", "-I" another option than "-i".
        # A code in the truth's aside ("Carbon dioxide (CO2)") is not what it commits to.
        codes, answer_codes = text.codes(text.without_asides(ground_truth)), text.codes(answer)
        unsaid = codes - text.codes(question) - answer_codes - text.dotted_numbers(answer)
        unsaid |= (text.flags(ground_truth) - text.flags(question)) - text.flags(answer)
        numbered = text.roman_numbered(ground_truth) - text.roman_numbered(question)
        unsaid |= numbered - text.roman_numbered(answer)
        # "Section 9.10" is another section than "Section 9.1": a label's number as written.
        unsaid |= _labels(ground_truth) - _labels(question) - _said_labels(answer, ground_truth)
        if unsaid and not text.polarity(ground_truth):
            return self._wrong(f"does not give the truth's {sorted(unsaid)}")
        days, asked_days = text.weekdays(ground_truth), text.weekdays(question)
        said_days = text.weekdays(answer)
        dated = bool(text.dates(ground_truth))  # "Friday, March 3, 2023" names the truth's day
        if (days - asked_days - said_days) or (said_days - days - asked_days and not dated):
            # "Monday to Saturday" for "Monday to Friday"; "on Sundays" beside a weekday figure.
            return self._wrong(f"names the days {sorted(said_days)}, not the truth's")
        # Days of the truth's own statement (not its asides), by month and day: "30 June" is
        # "June 30, 2024"; a span of days ("1-15 March") is read by one end only, so left out.
        truth_dates = text.dates(text.without_asides(ground_truth)) - text.dates(question)
        answer_dates = text.dates(answer)
        spans = _DAY_SPAN.search(ground_truth) or _DAY_SPAN.search(answer)
        if (
            truth_dates
            and answer_dates
            and not spans
            and not {d[:2] for d in truth_dates} & {a[:2] for a in answer_dates}
        ):
            # "on or before December 1" for "on or before September 1", whatever else agrees.
            return self._wrong("names another day than the truth's")
        if len(truth_dates) == 1 and _days_listed(answer):
            # "Dates: 15 June 2021, 1 July 2021, 30 June 2026": a row of candidates.
            return self._wrong("lists days side by side without choosing one")
        if len(truth_dates) == 1 and len(answer_dates) > 1:
            # "Enacted on 1 January 2020 but in force on 1 July 2020" to "When did it come into
            # force?": the day of the part that answers what is asked.
            dated = [p for p in _CONTRAST.split(answer) if text.dates(p)]
            # Judged by their words: a day's month is no word of another case.
            blanked = [_DAY_WRITTEN.sub(" ", p) for p in dated]
            chosen = _best_answering(case, blanked) if len(dated) > 1 else None
            chosen = dated[blanked.index(chosen)] if chosen else None
            asks = chosen and (text.content_terms(chosen) - _DATE_WORDS) & case.question_terms
            if asks and not any(
                _same_day_as_written(a, d) for a in text.dates(chosen) for d in truth_dates
            ):
                return self._wrong(f"gives another day for what is asked: {chosen.strip()!r}")
        truth_ranks, answer_ranks = _ranks(text.without_asides(ground_truth)), _ranks(answer)
        asked_ranks = _ranks(question)
        if any(
            answer_ranks.get(thing, rank) != rank and asked_ranks.get(thing) != answer_ranks[thing]
            for thing, rank in truth_ranks.items()
        ):
            # "first priority, ahead of in-zone residents" for "second priority, after them".
            return self._wrong("names another rank than the truth's")
        unranked = _called_first(question, ground_truth, answer)
        if unranked:
            # "Walmart was the largest customer, followed by Target" to "… second-largest?".
            return self._wrong(f"calls it {unranked!r}, not the rank asked")
        shapes = {_shape(code) for code in codes}
        other_codes = {
            c for c in answer_codes - codes - text.codes(question) if _shape(c) in shapes
        }
        if other_codes and codes and _items(answer) > _items(ground_truth):
            return self._wrong(f"lists {sorted(other_codes)} beside the truth's")
        if text.same_words(answer, ground_truth):
            # Whatever the truth is (a symbol, a hedge, a name with its aside), saying it
            # word for word commits to it.
            return self._right("the truth, word for word")
        if text.abbreviates(answer, ground_truth):
            return self._right("the truth's initials, or the name they stand for")
        if text.initialled(answer, ground_truth):
            return self._right("the truth's name, its given names as initials")
        if text.is_refusal(answer) and not text.is_refusal(ground_truth):
            return self._wrong("declines to answer")
        if (
            text.echoes(answer, question)
            and not text.echoes(ground_truth, question)
            and not _states_claim(answer, question, ground_truth)
        ):
            # A row quoted with its figure says the question's words back and adds the
            # figure asked for: the figure is judged. Said back alone, it answers nothing.
            asked = case.question_numbers
            adds_figure = any(not _any_agree([a], asked) for a in case.answer_numbers)
            adds_year = text.years(ground_truth) & (text.years(answer) - text.years(question))
            # "The guideline recommends nitrofurantoin first-line": the truth's own words,
            # said in the question's, are its answer.
            own = text.content_terms(ground_truth) - case.question_terms
            adds_words = bool(own) and own <= text.content_terms(answer)
            if not (case.truth_numbers and adds_figure) and not adds_year and not adds_words:
                return self._wrong("repeats the question")
        # A hedge, alternatives or a range answer only a truth that is one ("Between 2 °C
        # and 8 °C": "2–8 °C"); a bound, a truth that hedges or bounds ("at least 60%" takes
        # "at least 60 percent", not "around 60% or 70%").
        truth_spans = _SPAN.search(case.truth_text)
        spans = text.hedges(case.truth_text) or truth_spans
        hedged = _hedgeable(case)
        alternatives = text.hedges(hedged, bounds=False)
        # "At least 18 years" answers "What is the minimum age?": the bound asked for.
        # A strict bound ("less than 7 percent") only for a truth that is strict too ("Below 7%").
        bounded_as_asked = (
            not alternatives
            and text.bound(hedged) == _bound_asked(case)
            and not (
                _STRICT_BOUND.search(text.without_turned_bounds(hedged))
                and not _STRICT_BOUND.search(text.without_turned_bounds(case.truth_text))
            )
        )
        if (alternatives and not (text.hedges(case.truth_text, bounds=False) or truth_spans)) or (
            # A bound on a figure is a hedge only of a truth that is a figure: "The Lithium
            # segment, whose sales rose more than 300%" names the segment asked for.
            text.hedges(hedged, bounds=bool(case.truth_numbers or _dated(case.truth)))
            and not spans
            and not bounded_as_asked
        ):
            return self._wrong("hedges or offers alternatives instead of one answer")
        if _out_of_order(case):
            return self._wrong("names the truth's items in another order")
        if _span_reversed(case):
            return self._wrong("gives the truth's span with its ends swapped")
        if _ratio_turned(case):
            return self._wrong("names the truth's ratio with its sides turned")
        if _parts_reordered(case):
            return self._wrong("writes the parts of the truth's form in another order")
        if text.reverses(answer, ground_truth):
            return self._wrong("makes the truth's comparison the other way round")
        if text.converse(answer, ground_truth):
            return self._right("the truth's comparison, from the other side")
        swapped = text.swaps_roles(answer, ground_truth)
        if swapped:
            return self._wrong(f"puts the truth's words on the other sides of {swapped!r}")
        if text.bound(answer) * text.bound(ground_truth) < 0:
            return self._wrong("bounds the figure from the other side than the truth")
        if _bounded_otherwise(case):
            # "Ripening may not exceed 120 days" to "What is the minimum ripening period?"
            return self._wrong("bounds the figure from the other side than the question asks")
        denied = text.denied_by_prefix(answer) - text.denied_by_prefix(ground_truth)
        denied -= _denied_by_question(question)  # "without supervision": "unsupervised"
        denied &= text.content_terms(question) | text.content_terms(ground_truth)
        # "No, it is unpaid" to "Is the leave paid?" says its no twice, as the truth's "No".
        said_no = text.polarity(ground_truth) == "no" and _polarity(answer, question) == "no"
        if denied and not (said_no and denied <= text.content_terms(question)):
            # "16 weeks, unpaid" to "How many weeks of paid leave?".
            return self._wrong(f"denies {sorted(denied)} by its prefix")
        opposite = text.opposes(answer, ground_truth)
        if opposite:
            return self._wrong(f"says {opposite!r}, the opposite of the truth")
        if (
            case.quotes_row()
            and not spans
            and not _Case(question, ground_truth, ground_truth).quotes_row()
        ):
            return self._wrong("quotes a row of figures without singling one out")
        if case.truth_numbers and len(case.answer_numbers) > 2 * len(case.truth_numbers) + 1:
            return self._wrong(
                f"lists {len(case.answer_numbers)} numbers where {len(case.truth_numbers)} "
                "are needed"
            )

        said = text.polarity(ground_truth)
        if said:
            return self._judge_polarity(case, said)
        # An aside in brackets ("Canberra (not Sydney)") is not what the answer commits to.
        committed = text.without_asides(answer) if not case.truth_numbers else answer
        # An aside's "not" is the aside's: "three touches (the block does not count)".
        if case.negated(text.without_asides(committed)) != case.negated(ground_truth) and not (
            _negation_words(committed) == _negation_words(ground_truth)
        ):
            # The same "none" on both sides is one answer, a value's name or not ("None" to
            # "What does it return?", "It returns None").
            return self._wrong("negates the truth" if case.negated(committed) else "misses its not")
        contrary = text.opposes_question(committed, question, ground_truth)
        if contrary:
            return self._wrong(f"says {contrary!r}, the opposite of what the question asks")
        for judged in (self._judge_choice, self._judge_date, self._judge_entity):
            verdict = judged(case)
            if verdict:
                return verdict
        if case.truth_numbers and case.answer_numbers:
            change = case.truth_change()
            if change:
                return self._judge_change(case, *change)
            return self._judge_numbers(case)
        return self._judge_text(case)

    def _judge_polarity(self, case: "_Case", truth_says: str) -> Verdict:
        """A truth that opens with yes or no. An answer without one says yes unless it
        negates, or says the truth's own reason."""
        answer_says = _polarity(case.answer, case.question)
        rest = _after_polarity(case.truth)
        if {"yes", "no"} <= set(_BARE_YES_NO.findall(case.answer.lower())):
            return self._wrong("says both yes and no")
        turn = text.direction(case.answer)
        short = len(text.words(case.answer)) <= IMPLIED_YES_NO_WORDS
        if answer_says is None and short and turn and case.question_direction:
            # "Decreased by 42%" to "Was there any drop…?" says yes; "It fell" to "Did it
            # increase?" says no; "It did not fall" to the first says no.
            same = (turn == case.question_direction) != case.negated(case.answer)
            answer_says = "yes" if same else "no"
        if answer_says is None:
            reason_terms = text.content_terms(rest) - case.question_terms - FIGURE_WORDS
            recall = _recall(reason_terms, text.content_terms(case.answer))
            contrary = text.opposes_question(case.answer, case.question, "")
            if reason_terms and recall >= TEXT_RECALL_NEEDED:
                # "No material uncertainty was identified": the truth's "no" denies the
                # clause it opens, where the answer says that clause.
                denied = case.negated(rest) or _says_denied_clause(case)
                if case.negated(case.answer) != denied:
                    return self._wrong("negates the truth's reason")
                answer_says = truth_says
            elif short and contrary:
                # "Everest is shorter than K2" to "Is Everest taller than K2?" says no.
                answer_says = "yes" if case.negated(case.answer) else "no"
            elif text.bound(case.answer) * text.bound(case.question) < 0:
                # "Up to two days a week" to "more than two days a week?" says no.
                answer_says = "no"
            elif short and case.negated(case.answer) and self._denies_predicate(case):
                # "It should not be used during pregnancy" to "Can it be taken during
                # pregnancy?": what the question asks about, denied.
                answer_says = "no"
            elif _refuses(case):
                # "Accidental damage is excluded" to "Does the warranty cover accidental
                # damage?"; "It is not; it must be in writing".
                answer_says = "no"
            elif short and self._claims(case):
                # "It decreased" to "Did it decrease?" says yes; "It did not" says no. A
                # longer sentence (a quoted line of the document), or one with words of its
                # own ("Python is statically typed" to "Is Python dynamically typed?"),
                # answers some other question.
                answer_says = "no" if case.negated(case.answer) else "yes"
            else:
                return self._wrong("says neither yes nor no")
        if answer_says != truth_says:
            return self._wrong(f"says {answer_says!r} where the truth says {truth_says!r}")
        determiner = _NO_DETERMINER.match(case.answer)
        # "No dividend was paid": the no belongs to the sentence that follows.
        after = case.answer if determiner else _after_polarity(case.answer)
        excepted = (_EXCEPTION_TO_NO if answer_says == "no" else _EXCEPTION_TO_YES).search(after)
        if answer_says == "no" and not excepted:
            # "…, but it may go in the cabin", "but you can bring it into the camps": the
            # question's own act allowed after all; "but you can buy food inside" is advice.
            allowed = _ALLOWED_AFTER_ALL.search(after)
            if allowed and (text.stem(allowed.group(1)) in case.question_terms | _MOTION):
                excepted = allowed
        given = case.given_numbers()
        if excepted and given and all(case.matches_truth(a) for a in given):
            excepted = None  # "Yes, but only for up to 60 days": the truth's own limit
        if excepted and not (
            _CONDITION.search(rest) or _CONDITIONED.match(rest) or _WITH.match(rest)
        ):
            # "No, except after 6 pm": partly the other answer.
            return self._wrong(f"makes an exception the truth does not: {excepted.group(0)!r}")
        condition = text.content_terms(rest) - case.question_terms - FIGURE_WORDS - _IF_WORDS
        own = text.content_terms(after) - case.question_terms - _NEGATION_TERMS - _IF_WORDS
        # Half the truth's condition in the answer's words ("only with the --delete flag" for
        # "only when --delete is passed"); the answer's own condition otherwise.
        named = _options(rest) | text.codes(rest)  # "only when --delete is passed"
        if (
            (excepted or (_CONDITIONED.match(rest) and own))
            and condition
            and _recall(condition, text.content_terms(after)) < 0.5
            and not (named and named <= _options(after) | text.codes(after))
            and not (given and all(case.matches_truth(a) for a in given))
        ):
            # "Yes, you may transfer it freely" for "Yes, once, with written consent".
            return self._wrong("names another condition than the truth's")
        after_terms = text.content_terms(after) - _NEGATION_TERMS
        if answer_says == "no" and after and not case.negated(after) and not determiner:
            # "No, but it is waterproof": the question's claim made again after the no, in
            # the question's words only ("No, Sydney is the largest city" makes another).
            claim = text.lemmas(_without_figures(after)) - FIGURE_WORDS
            if claim and claim <= text.lemmas(case.question):
                return self._wrong("says no, then makes the question's claim")
        if (
            answer_says == "yes"
            and _polarity(case.answer)
            and after
            and case.negated(after)
            and not case.negated(rest)
            and after_terms <= case.question_terms
        ):
            # "Yes, it is not": the question's claim denied after the yes.
            return self._wrong("says yes, then denies the question's claim")
        # Both give a reason: the answer's must not deny the truth's ("Yes, $250 million was
        # outstanding" for "Yes, no amounts were outstanding") …
        if _polarity(case.answer) and _reasons_clash(after, rest):
            return self._wrong("its reason denies the truth's")
        # … nor name another value or entity than the truth's ("No, it raises TypeError"
        # for "No, it raises ValueError").
        asked_years = text.years(case.question)
        truth_named = (text.names(rest) - case.question_terms) | (text.years(rest) - asked_years)
        answer_named = (
            (text.names(after) - text.content_terms(case.truth) - case.question_terms)
            | (text.years(after) - text.years(case.truth) - asked_years)
            if _polarity(case.answer)
            else set()
        )
        if truth_named and answer_named:
            return self._wrong(
                f"names {sorted(answer_named)} where the truth's reason names {sorted(truth_named)}"
            )
        return self._agreed(case, truth_says)

    def _denies_predicate(self, case: "_Case") -> bool:
        """Whether a negated answer speaks of what the question asks (a word of it beyond its
        names and figures) and adds at most one word of its own ("used" for "taken")."""
        said = text.lemmas(case.answer) - _NEGATION_TERMS
        known = text.lemmas(case.question) | text.lemmas(case.truth)
        named = text.names(case.question)
        shared = {w for w in said & known if w not in named and not any(c.isdigit() for c in w)}
        # The word the negation denies must be the question's: "not eligible" denies what
        # "Are they eligible?" asks; "not harmful", "not excluded" deny words of their own,
        # and two denials may say yes.
        denied = _DENIED.search(case.answer)
        own_denied = denied and not text.lemmas(denied.group(1)) <= known
        return bool(shared) and len(said - known) <= 1 and not own_denied

    def _claims(self, case: "_Case") -> bool:
        """Whether the answer is a claim in the question's own words (and the truth's): it
        shares one of the question's words and adds none of its own. The shared words must
        hold more than the question's names and periods: "FY21" or "Pfizer" to "Did Pfizer
        grow its PPNE in FY21?" points at the question's subject and claims nothing."""
        said = text.lemmas(case.answer)
        known = text.lemmas(case.question) | text.lemmas(case.truth)
        named = text.names(case.question)
        predicate = {w for w in said & known if w not in named and not any(c.isdigit() for c in w)}
        return bool(predicate) and said <= known

    def _judge_choice(self, case: "_Case") -> Verdict | None:
        """A question offering options ("increase or decrease", "operations, investing, and
        financing") whose truth says one: the answer must say that one and no other."""
        offered = text.options(case.question)
        if not offered:
            return None
        truth_says = text.said_options(case.truth, offered)
        if len(truth_says) != 1:
            return None
        (option,) = truth_says
        answer_says = text.said_options(case.answer, offered)
        ranked = text.compared(case.answer)
        if (
            ranked
            and option in ranked[0]
            and answer_says - ranked[0] <= ranked[2]
            and ranked[1] in text.words(case.question)
        ):
            # "Venus is closer than Mars" to "Which is closer, Venus or Mars?" says Venus:
            # the others are named as what it is compared with, as the question compares.
            answer_says = {option}
        if answer_says != truth_says:
            if not answer_says:
                return self._wrong(f"does not say which; the truth says {option!r}")
            return self._wrong(f"says {sorted(answer_says)} where the truth says {option!r}")
        return self._agreed(case, option)

    def _judge_date(self, case: "_Case") -> Verdict | None:
        """A truth that is a day or a year, with no figure: the answer must name that day
        (in any order or form) or that year."""
        if case.truth_numbers:
            return None
        truth_days = text.dates(case.truth) - text.dates(case.question)
        if truth_days:
            answer_days = text.dates(case.answer)
            missing = [d for d in truth_days if not any(_same_day(a, d) for a in answer_days)]
            if missing:
                return self._wrong("does not name the truth's day")
            return self._judge_rest(case, "the truth's day")
        truth_years = text.years(case.truth) - text.years(case.question)
        if truth_years:
            answer_years = text.years(case.answer) - text.years(case.question)
            if not truth_years <= answer_years:
                return self._wrong("does not name the truth's year")
            if answer_years - text.years(case.truth):
                return self._wrong("names another year too")
            truth_months = text.months(case.truth) - text.months(case.question)
            if truth_months and text.months(case.answer) != truth_months:
                return self._wrong("does not name the truth's month")
            return self._judge_rest(case, "the truth's year")
        return None

    def _judge_rest(self, case: "_Case", matched: str) -> Verdict:
        """After a matched day or year, the truth's words, if it has any beyond it."""
        terms = text.content_terms(case.truth) - case.question_terms - _DATE_WORDS
        if not terms:
            return self._right(matched)
        # "March 1, 2021." for "The revised procedures took effect on 1 March 2021.": the day
        # and nothing of its own, the truth's other words only how it says it.
        own = text.content_terms(case.answer) - case.question_terms - _DATE_WORDS
        placed = terms & _PLACED_BY or _CONDITION_WORD.search(case.truth_text)
        if (
            len(terms) <= 2
            and not placed
            and not own - text.content_terms(case.truth)
            and not case.negated(case.answer)
        ):
            return self._right(f"{matched}, nothing else said")
        return self._judge_text(case)

    def _judge_entity(self, case: "_Case") -> Verdict | None:
        """A "which" question whose truth names an entity, then its figure ("Corporate. Its
        net revenue was -$473 million."): the answer must name that entity; a right figure
        beside another entity is wrong."""
        if not _WHICH.search(case.question) or not case.truth_numbers:
            return None
        head = case.truth[: case.truth_numbers[0].start]
        names = text.content_terms(head) - case.question_terms - FIGURE_WORDS - text.UP - text.DOWN
        if not names:
            return None
        if _recall(names, text.content_terms(case.answer)) < ENTITY_RECALL_NEEDED:
            return self._wrong(f"does not name the truth's {sorted(names)}")
        if not case.answer_numbers:
            return self._right("names the truth's entity")
        return self._agreed(case, "entity")

    def _agreed(self, case: "_Case", said: str) -> Verdict:
        """An answer that says what the truth says (a yes or no, an option, an entity):
        correct, unless it gives figures that are not the truth's."""
        given = case.given_numbers()
        if case.truth_numbers and given:
            unmatched = [a.text for a in given if not case.matches_truth(a)]
            if unmatched:
                return self._verdict(False, 0.5, f"right {said!r}, wrong figures {unmatched}")
            rate = case.foreign_rate()
            if rate:
                # "Yes, at least two per building" for "Yes, at least two on every floor".
                return self._verdict(False, 0.5, f"right {said!r}, counted per {rate}")
        return self._right(f"same {said!r}")

    def _judge_numbers(self, case: "_Case") -> Verdict:
        given = case.given_numbers()
        if not given:
            return self._wrong("gives only the question's own figures")
        headline = case.truth_numbers[0]
        # The truth's first figure is its headline; the rest often explain it. The
        # answer's first figure is what it commits to, unless it labels each of its figures
        # with a period and the question asks one: then it is the one of that period.
        committed = _figure_of_period(case.answer_text, given, _periods(case.question))
        measured = [a for a in given if a.unit and headline.unit and a.unit[0] == headline.unit[0]]
        if measured and not (committed.unit and committed.unit[0] == headline.unit[0]):
            # "Deimos orbits at 23,460 km with a period of 30.3 hours": the figure that
            # measures what the truth measures.
            committed = measured[0]
        if not case.matches_truth(committed):
            size = case.magnitude_matches(committed)
            reason = "figures do not match"
            if size:
                signs = {case.sign(committed, case.answer_text)} | {
                    case.sign(t, case.truth_text) for t in case.truth_numbers
                }
                reason = (
                    "the right size with the wrong sign"
                    if len(signs) > 1
                    else "the right size, but not in the truth's unit or what it counts"
                )
            return self._verdict(False, 0.25 if size else 0.0, f"{reason}: {committed.text}")
        restated = [t for t in case.truth_numbers if _restates(t, headline, case.truth_text)]
        if not any(case.agrees(a, t) for a in given for t in [headline, *restated]):
            if case.level_after_change(committed):
                return self._right("the level the truth's change came to, with its direction")
            return self._verdict(False, 0.5, f"misses the truth's headline {headline.text}")
        # The right figure, and beside it what makes it another answer. The figures of the
        # truth's first statement are its answer, all of them: "60 cm wide and 40 cm tall",
        # "0 °C to 40 °C", "500 mg three times daily" are not answered by their first figure;
        # what follows the statement often explains it, and may go.
        for found, says in (
            (lambda: case.named_otherwise(given), "gives {} for what the question asks"),
            (lambda: case.unstated(given), "leaves out the truth's {}"),
            (lambda: case.relabelled(given), "gives {} another figure than the truth"),
            (case.words_swapped, "says {} for the truth's words"),
            (case.words_told, "leaves out the truth's {}"),
            (case.other_scope, "gives it {!r}, another case than asked"),
            (case.other_case_figure, "gives it for {}, another case than asked"),
            (case.foreign_rate, "counts per {}, not as the truth or question"),
            (lambda: case.converted_wrongly(given), "gives the truth in another scale wrongly: {}"),
        ):
            other = found()
            if other:
                return self._verdict(False, 0.5, says.format(other))
        if _change_for_level(case, committed):
            # "An increase of 48,200 units over Q2" to "How many units were sold in Q3?".
            return self._verdict(False, 0.5, f"gives {committed.text} as a change, not a level")
        other_year = _year_labelled(case, committed)
        if other_year:
            # "18.5% in 2021, and improved further in 2022" to "… in 2022?".
            return self._verdict(False, 0.5, f"gives the truth's figure for {other_year}")
        if _coarser_than_asked(case.question, committed, case.truth_numbers):
            # "47.1%" for "47.12%" asked to two decimals: right at its own precision, short
            # of the one the question asks.
            return self._verdict(False, 0.5, f"{committed.text} is rounded coarser than asked")
        return self._right("figures match")

    def _judge_change(
        self, case: "_Case", start: quantities.Quantity, end: quantities.Quantity
    ) -> Verdict:
        """A question asking how much something changed, whose truth says it went "from"
        one figure "to" another: the answer gives both, in that order, or the change itself
        (end - start, or relative to the start) with its direction. Either end alone is a
        level, not the change ("24.6%" for "from 24.6% to 21.6%")."""
        given = case.given_numbers()
        if not given:
            return self._wrong("gives only the question's own figures")
        starts = [i for i, a in enumerate(given) if case.same_value(a, start)]
        ends = [i for i, a in enumerate(given) if case.same_value(a, end)]
        if starts and ends:
            if min(starts) < max(ends):
                return self._right("both ends of the truth's change")
            return self._wrong("the truth's two ends, reversed")
        committed = given[0]
        sign = case.sign(committed, case.answer_text)
        changes = _changes(start, end)
        in_points = _POINTS.search(committed.text) or _POINTS.match(
            case.answer_text[committed.end :]
        )
        if in_points:
            # "40 percentage points" is a difference of levels, never the relative change.
            changes = changes[:1]
        for change in changes:
            if case.same_value(committed, change):
                if (
                    change is changes[0]
                    and committed.kind == "percent"
                    and not in_points
                    and _POINTS.search(case.truth_text)
                ):
                    # "It rose 2%" for "2 percentage points, from 10% to 12%": a tenth of that.
                    return self._wrong("the truth's change in points, said as a percent")
                ends = [
                    a
                    for a in given
                    if a is not committed and not any(case.same_value(a, c) for c in changes)
                ]
                if ends and not any(case.same_value(a, t) for a in ends for t in (start, end)):
                    # "By 12 points, from 68% to 56%" for "from 86% to 74%".
                    return self._wrong(f"the truth's change between other ends: {ends[0].text}")
                if sign == change.sign:
                    return self._right("the truth's change, with its direction")
                return self._verdict(False, 0.25, "the truth's change with the wrong direction")
        if starts or ends:
            return self._wrong(f"one end of the truth's change ({committed.text}), not the change")
        return self._wrong(f"figures do not match: {committed.text}")

    def _judge_text(self, case: "_Case") -> Verdict:
        has_numbers = bool(case.truth_numbers)
        # The unit of a truth's figure is no answer without the figure: "Net income million"
        # does not say "7,679 million".
        unit_words = FIGURE_WORDS if has_numbers else set()
        # The truth commits to its words outside brackets, as an answer does: "hiredis (pip
        # install redis[hiredis])" is answered by "hiredis".
        # How often, said one way: "two times" is "twice".
        truth = text.without_asides(_as_times(case.truth))
        # "No later than 5 pm on Friday": the bound's words are its figure's, said by "By".
        truth = text.NEGATED_COMPARISON.sub(" ", truth)
        # A code's letters are the code's ("hf" of "HF-2047"), judged whole in `judge`.
        # Month names are a date's words, not a name's ("Mars", "May Ellis").
        dated = text.dates(case.truth) or text.years(case.truth)
        full = text.content_terms(text.without_codes(truth)) - unit_words
        full -= _DATE_WORDS if dated else set()
        headline = [t for t in case.stated() if t.start < _first_clause_end(case.truth_text)]
        if headline and not case.answer_numbers and not _counted_otherwise(case):
            # "The full amount of the remaining charges" for "50% of the remaining charges".
            return self._wrong(f"leaves out the truth's {headline[0].text}")
        # Its asides' words are still the truth's, not others named beside it.
        said = text.content_terms(case.truth)
        truth_terms = full - case.question_terms
        codes = text.codes(text.without_asides(case.truth))
        if not truth_terms and codes:
            # "v18.17.0" for "Node.js 18.17.0", "B12" for "Vitamin B12": the code was judged
            # whole in `judge`, and the truth's other words are the question's.
            return self._right("the truth's code")
        # A truth in words the question already says is still its answer ("Decreased" to
        # "did it decrease?"); a figure's truth is not, with the figure missing.
        if not truth_terms and not has_numbers:
            truth_terms = full
        if not truth_terms:
            if has_numbers:
                return self._wrong("the truth is a figure and the answer has none")
            # A truth of symbols alone ("_", "@="): said as written, its asides left out;
            # an option ("-i") said in a sentence.
            if text.same_words(text.outside_brackets(case.answer), truth):
                return self._right("the truth's symbols, as written")
            if text.flags(truth) and text.flags(truth) <= text.flags(case.answer):
                return self._right("the truth's symbols, as written")
            return self._wrong("no text")
        if truth_terms <= text.NEGATIONS:
            # "There are none", "All three are None": the answer must say none too ("none",
            # "there are no such…"), and not by a bare "No", which answers a yes/no question.
            if _negation_words(case.answer) and not text.polarity(case.answer):
                return self._right("says none, as the truth")
            return self._wrong("the truth is none, and the answer does not say so")
        # What the answer commits to leaves its asides out: "Sydney (Canberra is often
        # confused)" says Sydney.
        committed = text.without_asides(_as_times(case.answer))
        answer_terms = text.content_terms(committed)
        if _ASKS_ORDER.search(case.question):
            # "First Headcorn, then Staplehurst": the order said in words.
            answer_terms -= _ORDER_WORDS - full
            committed = _ORDER_SAID.sub(" ", committed)
        recall = _recall(truth_terms, answer_terms)
        # A name written as one token ("_Ham__spam", "ALLOWED_HOSTS", "http.timeout") is
        # said whole or not at all: its parts are words of the question or of other names.
        named = _identifiers(truth)
        if named and not named & _identifiers(committed):
            return self._verdict(False, recall * 0.5, f"does not name {sorted(named)}")
        missing = (
            _items_unsaid(truth, committed, answer_terms, _count_asked(case.question))
            if not has_numbers
            else []
        )
        if missing:
            return self._verdict(False, recall * 0.5, f"leaves out {missing} of the truth's list")
        extra = answer_terms - said - case.question_terms
        # A long answer covers many words by chance; it must not win by volume.
        if len(answer_terms) > 4 * len(truth_terms) + 10:
            return self._verdict(False, recall * 0.5, "too long to credit a word overlap")
        # Half the truth's words and nothing of its own is a short form of a name when it
        # keeps the name's last word ("Austen" for "Jane Austen"); "Jane", "dioxide" for
        # "carbon dioxide", and half with words of its own ("carbon monoxide") are not.
        if recall < TEXT_RECALL_NEEDED and not (
            recall >= 0.5 and _short_name(case, truth_terms, committed, bool(extra))
        ):
            return self._verdict(False, recall * 0.5, f"{recall:.0%} of the truth's key words")
        # Others named beside the truth ("Customer deposits and long-term debt", "Jane
        # Austen, Charlotte Bronte", "Saturn is larger than Jupiter") are candidates, not
        # an answer.
        if (
            extra
            and _JOINS.search(committed)
            and (not _JOINS.search(case.truth) or _items(committed) > _items(truth))
        ):
            return self._verdict(False, recall * 0.5, f"names {sorted(extra)} beside the truth")
        # The names the truth opens its parts with are its own: "Channel" of
        # "Channel.confirm_select()", which a name's dot splits into two parts.
        heads = {t for name, _ in text.named_heads(truth) for t in text.content_terms(name)}
        known = said | heads | case.question_terms | FIGURE_WORDS | _DATE_WORDS
        others = [
            name
            for name, _ in text.named_heads(committed)
            if not text.content_terms(name, keep_numbers=True) & known
        ]
        if others:
            return self._verdict(False, recall * 0.5, f"names {others} beside the truth")
        # "charging" is not "charged", though they share a stem: a state going on is not
        # the state reached.
        aspect = _aspect_changed(truth, committed)
        if aspect:
            return self._verdict(False, recall * 0.5, f"says {aspect[0]!r} for {aspect[1]!r}")
        # A short answer that drops a word of the truth for one of its own names something
        # else: "npm ci" is not "npm install".
        swapped = _unlike(extra - _ABOUT, full - answer_terms)
        if swapped and len(answer_terms) <= len(full) + 1 and _recall(full, answer_terms) < 1:
            return self._verdict(False, recall * 0.5, f"says {sorted(extra)} for the truth's words")
        return self._right(f"{recall:.0%} of the truth's key words")

    def _right(self, reason: str) -> Verdict:
        return Verdict(correct=True, score=1.0, reason=reason, prompt_id="offline")

    def _wrong(self, reason: str) -> Verdict:
        return self._verdict(False, 0.0, reason)

    def _verdict(self, correct: bool, score: float, reason: str) -> Verdict:
        if not correct:
            score = min(score, WRONG_SCORE_CAP)
        return Verdict(correct=correct, score=round(score, 4), reason=reason, prompt_id="offline")
