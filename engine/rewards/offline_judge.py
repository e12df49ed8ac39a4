"""The offline judge: is this answer the ground truth, said another way? No model, no
network: an answer is credited only when it commits to the truth (its figures with sign,
scale, unit and precision; its entity, option, day, time or yes/no; otherwise the truth's
words), with no negation, hedge, opposite or other case beside it. Held to its labelled sets
(tests/data/judge_set.jsonl, and tests/data/judge_set_independent.jsonl, written by reviewers
who never read it); each rule's history, and what it still gets wrong, in docs/judge-rejudge.md.
It is also RL's reward, run on whatever a policy writes: every rule has to stay fast on any
output (the reviews in docs/judge-rejudge.md time 2,000-character answers and long tokens).
"""

import dataclasses
import functools
import math
import os
import re
import unicodedata

from engine.rewards import quantities, text
from engine.rewards.verdict import Verdict

# Share of the ground truth's content words an answer must contain to count as correct.
TEXT_RECALL_NEEDED = 0.6
# Share of a "which" truth's naming words (the entity before its figure) an answer must say.
ENTITY_RECALL_NEEDED = 0.5
# The longest answer without a yes or no read as one: a short claim on the question's words.
IMPLIED_YES_NO_WORDS = 8
# A wrong answer's score, the reward's partial-credit shaping, never reaches this.
WRONG_SCORE_CAP = 0.5


# The words that say what a figure counts ("million", "USD", "percent"), not what it is.
FIGURE_WORDS = text.content_terms(
    " ".join([*quantities.SCALES, "millions thousands billions trillions"])
    + " usd dollar dollars percent percentage per cent share shares"
)
_WHICH = re.compile(r"\b(?:which|who|whom|whose)\b|\bwhat\s+(?:is|was|are|were)\s+the\s+name", re.I)
_JOINS = re.compile(r"\s(?:and|&|then)\s|\s*/\s*[a-z]", re.I)
# A row quoted from a table: figures with nothing but separators between them.
_ROW_GAP = re.compile(r"[\s,;|/$€£¥]*")
# A clause that gives the figure after it as the value of what it names: "the minimum is".
_GIVEN_AS = re.compile(r"\b(?:is|are|was|were|be|being|equals?)\s*[:=]?\s*(?:about\s+)?$", re.I)
_ITEM_SEPARATOR = re.compile(r",|;|\s(?:and|or|&)\s", re.I)


def _items(said: str) -> int:
    """How many items a text lists: "milk, peanuts and soy" three, "milk and peanuts" two;
    what a relative clause then says of them is not more items."""
    listed = _RELATIVE.split(said, maxsplit=1)[0]
    return len([part for part in _ITEM_SEPARATOR.split(listed) if part.strip()])


_RELATIVE = re.compile(r",?\s\b(?:which|that|who|whose|because|per|as)\b", re.I)


def _shape(code: str) -> str:
    """A code's shape: "hf2047" is "a9", "eu-west-1a" "a-a-9a", "2.1" "9.9"."""
    return re.sub(r"[a-z]+", "a", re.sub(r"\d+", "9", code))


# Two figures joined by "and" with no word of their own: "$8.7 billion and $8.9 billion".
_PAIR_GAP = re.compile(r"[\s,]*(?:and|&)[\s$€£¥]*", re.I)


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
        answer = _clock_times(_plain_letters(answer), timed).strip()
        ground_truth = _clock_times(_plain_letters(ground_truth), timed)
        question = _clock_times(_plain_letters(question), timed)
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
        if denied:
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


_SUBSCRIPTS = str.maketrans("₀₁₂₃₄₅₆₇₈₉", "0123456789")
_SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")
_POWER = re.compile(r"(?<=\d)([⁻]?[⁰¹²³⁴⁵⁶⁷⁸⁹]+)")


_PLUS_OR_MINUS = re.compile(r"\bplus\s+or\s+minus\s+", re.I)


def _plain_letters(said: str | None) -> str:
    """Letters without their accents, subscript digits as digits and a power in superscript
    as one written with "^": "García Márquez" is "Garcia Marquez", "H₂SO₄" "H2SO4", "10²³"
    "10^23"."""
    said = _PLUS_OR_MINUS.sub("±", said or "")  # "plus or minus 0.8 percent" is "±0.8%"
    said = said.replace("\u2212", "-")  # the minus sign, as a hyphen writes it: "−30 °C"
    said = _POWER.sub(lambda m: "^" + m.group(1).translate(_SUPERSCRIPTS), said)
    decomposed = unicodedata.normalize("NFD", said.translate(_SUBSCRIPTS))
    return unicodedata.normalize(
        "NFC", "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    )


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


# A format written in letters each repeated: "DD/MM/YYYY", "hh/mm" (not "red/white").
_JOINED_PARTS = re.compile(r"\b(?:([A-Za-z])\1*)(?:/(?:([A-Za-z])\2*))+\b")


def _parts_reordered(case: "_Case") -> bool:
    """Whether the answer writes a form the truth joins by slashes with its parts in another
    order: "MM/DD/YYYY" for "DD/MM/YYYY" is another format."""
    truth = {tuple(t.group(0).lower().split("/")) for t in _JOINED_PARTS.finditer(case.truth_text)}
    said = {tuple(t.group(0).lower().split("/")) for t in _JOINED_PARTS.finditer(case.answer_text)}
    return any(
        sorted(mine) == sorted(theirs) and mine != theirs and mine not in truth
        for mine in said
        for theirs in truth
    )


# A truth's condition on its day: "From 1 March 2021, for new hires only".
_CONDITION_WORD = re.compile(r"\b(?:only|unless|except|provided|if|when)\b", re.I)
# Words that place a day rather than name it: "in the week before 1 March", "until".
_PLACED_BY = text.content_terms("before after until till since prior following week month")
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


def _year_labelled(case: "_Case", figure: quantities.Quantity) -> str:
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


def _ratio_turned(case: "_Case") -> bool:
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


def _span_reversed(case: "_Case") -> bool:
    """Whether the truth spans two times of day and the answer names them the other way
    round: "from T0600 to T2200" is the day, "between T2200 and T0600" the night."""
    truth = list(dict.fromkeys(_TIME_CODE.findall(case.truth_text)))
    said = list(dict.fromkeys(_TIME_CODE.findall(case.answer_text)))
    return len(truth) == 2 and said == truth[::-1]


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
# Words that bound a figure ("at least", "no later than", "within", "up to"): the bound
# itself is judged by its opposite ("at most" for "at least"), not as a word of the truth.
_BOUNDS = text.content_terms("least most later earlier sooner more less fewer within up")
# Words that say "about" ("the proposal regarding a report" for "the proposal for a report").
_ABOUT = text.content_terms("regarding concerning relating pertaining respecting")
_DATE_WORDS = text.content_terms(
    "january february march april may june july august september october november december"
    " jan feb mar apr jun jul aug sep sept oct nov dec"
)


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
        hint = quantities.scale_hint(question)
        fractions = not _COUNTS.search(question)
        self.question_text = quantities.words_to_digits(_as_times(question))
        self.truth_text = quantities.words_to_digits(_as_times(truth), fractions=fractions)
        self.answer_text = quantities.words_to_digits(_as_times(answer), fractions=fractions)
        self.question_numbers = quantities.extract_quantities(self.question_text, hint)
        self.truth_numbers = _restated(
            quantities.extract_quantities(self.truth_text, hint), self.truth_text
        )
        self.answer_numbers = _restated(
            quantities.extract_quantities(self.answer_text, hint), self.answer_text
        )
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
        agree = functools.partial(quantities.agree, bare_percent=self.percent_named)
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
        return [a.text for a in given if _converts_wrongly(a, self.truth_numbers)]

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


# A question asking how much something changed, and a truth saying it went from one figure
# to another ("from 24.6% in FY 2021 to 21.6% in FY 2022").
_ASKS_CHANGE = re.compile(
    r"\b(?:chang|differ|increas|decreas|grow|grew|declin|drop|rise|rose|fell|fall|shift)\w*",
    re.I,
)
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
# A truth that is a span of values ("Between 2 °C and 8 °C", "0 °C to 40 °C"): an answer
# giving it as a range ("2–8 °C") commits to it; its ends are judged as its figures.
_SPAN = re.compile(
    r"(?<!from )(?<![\w.,])(?:between\s+)?[$€£]?\d[\d,.]*\s*(?:%|°\s?[CF]|[A-Za-z]+)?\s*"
    r"(?:to|and|through|–|-)\s*[+-]?[$€£]?\d",
    re.I,
)
_POINTS = re.compile(r"\s*(?:percentage\s+)?\b(?:points?|pts?|pp)\b", re.I)
# Where a truth's first statement ends: what follows explains it ("$1,577 million. Up 5%").
_STATEMENT_END = re.compile(r"\.(?:\s|$)|;|\s\(")


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
    r"\b(?:(?<![\d.,])(one|two|1|2)\s+times|(?:per\s+)?(" + "|".join(_RATE_WORDS) + r"))\b", re.I
)


_DIGIT = re.compile(r"\d")
# "Every 12 months" is once a year, "every 7 days" once a week, "every 24 hours" once a day.
_SPANS = {"12 months": "year", "7 days": "week", "24 hours": "day", "seven days": "week"}
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


_ORDINAL = re.compile(
    r"\b(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|\d+(?:st|nd|rd|th))\b",
    re.I,
)


_DAY_SPAN = re.compile(r"\b\d{1,2}(?:st|nd|rd|th)?\s*(?:[-–]|to)\s*\d{1,2}\b", re.I)
_ORDINAL_WORDS = "first second third fourth fifth sixth seventh eighth ninth tenth".split()


_RANKED = re.compile(_ORDINAL.pattern + r"[\s-]+([a-z]{3,})", re.I)


# A superlative the question ranks by an ordinal: "second-largest", "third most valuable".
_RANKED_SUPERLATIVE = re.compile(
    r"\b(?:second|third|fourth|fifth|\d+(?:nd|rd|th))[\s-]+((?:most|least)\s+[a-z]+|[a-z]+est)\b",
    re.I,
)


def _called_first(question: str, truth: str, answer: str) -> str:
    """The superlative the answer gives the truth plainly ("Walmart was the largest") where
    the question asks for one ranked lower ("second-largest"): it calls it the first; else
    ""."""
    name = re.escape(truth.strip(" .").strip())
    for found in _RANKED_SUPERLATIVE.finditer(question or ""):
        word = re.escape(found.group(1))
        said = re.search(
            rf"\b{name}\s+(?:was|is|were|are|remains|remained|became)\s+(?:the|its|their)\s+{word}\b",
            answer or "",
            re.I,
        )
        if name and said:
            return said.group(0)
    return ""


def _ranks(said: str) -> dict[str, int]:
    """The ordinals a text writes with the word they rank, by that word's stem: "second
    priority" and "2nd priority" are {"prioriti": 2}; "the first in 2015" ranks nothing."""
    ranks = {}
    for found in _RANKED.finditer(said or ""):
        word = re.split(r"[\s-]", found.group(0))[0].lower()
        rank = _ORDINAL_WORDS.index(word) + 1 if word in _ORDINAL_WORDS else int(word[:-2])
        ranks.setdefault(text.stem(found.group(1)), rank)
    return ranks


def _first_clause_end(said: str) -> int:
    """Where a truth's first clause ends: "Nitrogen, about 78%" answers "Nitrogen"."""
    found = re.search(r",\s|;|\.\s|\s\(", said)
    return found.start() if found else len(said)


def _counted_otherwise(case: "_Case") -> bool:
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


def _celsius(figure: quantities.Quantity) -> float | None:
    """A temperature in degrees Celsius; None for any other figure."""
    value = figure.mantissa * (figure.sign or 1)
    scale = figure.unit[0] if figure.unit else None
    return {
        "celsius": value,
        "fahrenheit": (value - 32) * 5 / 9,
        "kelvin": value - 273.15,
    }.get(scale)


def _converts_wrongly(figure: quantities.Quantity, truths: list[quantities.Quantity]) -> bool:
    """Whether `figure` restates a truth's temperature in another scale, and wrongly ("100
    °C, which is 200 °F"): within the figure's last digit, or it is another figure."""
    mine = _celsius(figure)
    if mine is None:
        return False
    step = 10.0 ** (-max(figure.decimals, 0)) * (5 / 9 if figure.unit[0] == "fahrenheit" else 1.0)
    others = [
        _celsius(truth)
        for truth in truths
        if _celsius(truth) is not None and truth.unit[0] != figure.unit[0]
    ]
    return bool(others) and all(abs(mine - theirs) > step / 2 + 1e-9 for theirs in others)


# A state said in a few words ("Fully charged", "The battery is charging.") is the text
# whose form of a verb says which state.
ASPECT_WORDS = 6
_ING_OR_ED = re.compile(r"\b[a-z]+(?:ing|ed)\b", re.I)


def _aspect_changed(truth: str, answer: str) -> tuple[str, str] | None:
    """A word of the answer ending in "-ing" where the truth has the same stem ending in
    "-ed", or the other way round ("charging" for "charged"); rises and falls aside, whose
    form says nothing of their direction."""

    def forms(said: str) -> dict[str, dict[bool, str]]:
        """stem -> {progressive?: the word as written}"""
        found: dict[str, dict[bool, str]] = {}
        for word in _ING_OR_ED.findall(said):
            stem = text.stem(word)
            if stem not in text.UP | text.DOWN:
                found.setdefault(stem, {})[word.lower().endswith("ing")] = word
        return found

    if max(len(truth.split()), len(answer.split())) > ASPECT_WORDS:
        return None  # a longer sentence tells its events in any form ("delayed, arriving")
    truth_forms = forms(truth)
    for stem, written in forms(answer).items():
        theirs = truth_forms.get(stem, {})
        if theirs and not set(written) & set(theirs):
            return next(iter(written.values())), next(iter(theirs.values()))
    return None


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


def _unlike(own: set[str], missing: set[str]) -> set[str]:
    """The answer's own terms that are not another form of a missing truth term: "receipt"
    for "receiving", "power" for "pow" share a root the stemmer keeps apart: all of the
    shorter term but its last two letters, and three letters at least ("transport" and
    "transfer" share only a prefix)."""

    def kin(a: str, b: str) -> bool:
        shared = len(os.path.commonprefix([a, b]))
        return shared >= max(3, min(len(a), len(b)) - 2)

    return {term for term in own if not any(kin(term, gone) for gone in missing)}


def _unfigured(said: str, figures: list[quantities.Quantity]) -> str:
    """`said` with its figures, and the units written with them, blanked out: by a mark, not
    spaces, so that "28–44" stays one span and "£85,000" no clause."""
    for figure in sorted(figures, key=lambda f: -f.start):
        said = said[: figure.start] + "#" * (figure.end - figure.start) + said[figure.end :]
    return said


def _words_of(said: str) -> set[str]:
    """Content terms of `said` less its figures' digits."""
    return {t for t in text.content_terms(said) if not any(ch.isdigit() for ch in t)}


# A period an answer labels a figure with: "2019", "FY2022", "FY 2022", "FY22".
_PERIOD = re.compile(r"\b(?:FY\s?|CY\s?)?((?:19|20)\d{2})\b|\bFY\s?'?(\d{2})\b", re.I)
# A year split across two ("2022/23", "2011-12", "FY2023-24"): both.
_SPLIT_YEAR = re.compile(r"\b((?:19|20)\d{2})\s?[/–-]\s?(\d{2})\b")


def _periods(written: str) -> set[str]:
    """The years a text names, fiscal or calendar, as four digits; a split year's both."""
    years = {long or f"20{short}" for long, short in _PERIOD.findall(written or "")}
    return years | {f"{first[:2]}{second}" for first, second in _SPLIT_YEAR.findall(written or "")}


# A number that labels a part of a document or a release: said as written.
_LABEL_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)*[a-z]?(?![\w]|\.\d)", re.I)
_LABEL = re.compile(
    r"(?:\b(?:sections?|sec\.|articles?|art\.|clauses?|rules?|chapters?|parts?|paragraphs?|para\."
    r"|items?|tables?|figures?|fig\.|versions?|releases?|appendix|schedules?|annex|regulations?)"
    r"\s*|§\s*)(\d+(?:\.\d+)*[a-z]?)(?![\w]|\.\d)",
    re.I,
)


# A letter that names a thing after its kind ("Band A", "Zone B", "Grade B+"); not "I".
# A letter that names a thing after its kind ("Band A", "Zone B", "Grade B+"); not "I",
# nor a middle initial ("John F. Kennedy", "Harry S Truman").
_LETTER_LABEL = re.compile(r"\b([A-Z][a-z]{2,})\s+((?!I\b)[A-Z][+-]?)(?![\w+-])(?!\.?\s+[A-Z])")


def _labels(said: str) -> set[str]:
    letters = {label.upper() for _, label in _LETTER_LABEL.findall(said or "")}
    return {_unpadded(label).lower() for label in _LABEL.findall(said or "")} | letters


def _said_labels(answer: str, truth: str) -> set[str]:
    """The labels an answer gives, as `_labels` reads them: numbers as written or in words
    ("Part Two"), any case ("Item 1a"), and a truth's letters after their kind in any case
    or alone ("hepatitis-B", "vitamin a", "B")."""
    numbers = {
        _unpadded(n).lower() for n in _LABEL_NUMBER.findall(quantities.words_to_digits(answer))
    }
    letters = set(re.findall(r"(?<![\w+])[A-Z][+-]?(?![\w+-])", answer))
    for kind, letter in _LETTER_LABEL.findall(truth or ""):
        if re.search(rf"\b{kind}[\s-]+{re.escape(letter)}(?![\w+-])", answer, re.I):
            letters.add(letter.upper())
    return numbers | letters


def _unpadded(label: str) -> str:
    """ "09" as "9", "4.02" as "4.2": zeros that pad a part say nothing ("9.10" stays)."""
    return ".".join(part.lstrip("0") or "0" for part in label.split("."))


# A question that asks for a sequence, whose truth's items are answered in their order.
_ASKS_ORDER = re.compile(
    r"\b(?:in\s+(?:what|which)\s+order|what\s+order|what\s+sequence|in\s+order(?!\s+to\b)"
    r"|what\s+are\s+the\s+steps)\b",
    re.I,
)
_ORDER_WORDS = text.content_terms("first then next finally last lastly one after")
_ORDER_SAID = re.compile(r"\b(?:first|then|next|finally|last|lastly|after\s+that)\b", re.I)


def _out_of_order(case: "_Case") -> bool:
    """Whether an answer to "In what order…?" names the truth's items in another order."""
    if not _ASKS_ORDER.search(case.question):
        return False
    items = [i for i in re.split(r",|\band\b|\bthen\b|;|→|->", case.truth) if i.strip()]
    if len(items) < 2:
        return False
    said = [text.stem(w) for w in text.words(case.answer)]
    every = [text.content_terms(item) - case.question_terms for item in items]
    places = []
    for terms in every:
        # An item by its own words: "replace the cover" not by the "cover" it shares.
        others = set().union(*(other for other in every if other is not terms))
        terms = (terms - others) or terms
        found = [said.index(t) for t in terms if t in said]
        if not found:
            return False  # an item left out is judged as words
        places.append(min(found))
    return places != sorted(places)


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


def _options(said: str) -> set[str]:
    """Command-line options as written, short and long ("-i", "--delete")."""
    return text.flags(said) | {name for name in _identifiers(said) if name.startswith("--")}


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


def _refuses(case: "_Case") -> bool:
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


def _hedgeable(case: "_Case") -> str:
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


# A bound that leaves its figure out ("more than 21 years" is no minimum age of 21).
_STRICT_BOUND = re.compile(
    r"\b(?:more|less|fewer|greater|higher|lower)\s+than\b"
    r"|\b(?:over|under|above|below)\s+(?=[$€£]?\d)",
    re.I,
)
# Words of an answer unsure of itself ("may be" is a document's modal as often).
_UNSURE = re.compile(
    r"\b(?:maybe|perhaps|possibly|probably|likely|either|not\s+sure|i\s+think|i\s+believe|i\s+guess"
    r"|or\s+so)\b",
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


def _bounded_otherwise(case: "_Case") -> bool:
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


def _bound_asked(case: "_Case") -> int:
    """+1 when the truth or question asks for a lower bound, -1 an upper one, 0 neither."""
    said = text.bound(case.truth_text)
    if said:
        return said
    return bool(_ASKS_LOWER.search(case.question)) - bool(_ASKS_UPPER.search(case.question))


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


def _asked_clause(case: "_Case") -> str | None:
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


def _figures_offered(case: "_Case") -> bool:
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


def _superseded(case: "_Case", by_words: bool = True) -> bool:
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


def _leading_answer(case: "_Case") -> str | None:
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


def _asked_statement(case: "_Case") -> str | None:
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


def _proper_names(said: str) -> set[str]:
    """Names a text writes, less a plain word capitalised only because it opens the text
    ("Thermal runaway on the hot end" names nothing; "Dr Leila Haddad" does)."""
    first = re.match(r"\W*([A-Z][a-z]+)\b", said or "")
    opener = text.content_terms(first.group(1)) if first else set()
    rest = said[first.end() :] if first else said
    return (text.names(said) - opener) | (text.names(rest) & opener)


def _figure_terms(clause: str, case: "_Case") -> set[str]:
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


def _best_answering(case: "_Case", clauses: list[str], *, candidates: bool = False) -> str | None:
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


def _direction_near(written: str, start: int, end: int) -> int:
    """The rise or fall said right around a figure, in its own clause: "fell by $75
    million", "$400,000,000 increase", "a loss of $2.1 billion". A figure after "from" or
    "to" is a level, not a change."""
    clause_start = max(written.rfind(mark, 0, start) for mark in ".;:\n") + 1
    before = text.words(written[clause_start:start])[-4:]
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
    clause_start = max(written.rfind(mark, 0, start) for mark in ".;:\n") + 1
    before = text.words(written[clause_start:start])[-4:]
    after = text.words(_COMPARISON_BREAK.split(written[end:], maxsplit=1)[0])[:2]
    # The nearest: "from a $4 million deficit to a $1 million surplus" has one of each.
    return next((_RESULTS[w] for w in [*after, *before[::-1]] if w in _RESULTS), 0)


_MORE_OR_LESS = {"more": 1, "greater": 1, "less": -1, "fewer": -1}
# A result said as a gain or a shortfall, by words that name no change.
_COMPARISON_BREAK = re.compile(r"[.;:,(\n]|\b(?:versus|vs|against|compared|from|than)\b", re.I)
_RESULTS = {"earned": 1, "profit": 1, "surplus": 1, "deficit": -1, "shortfall": -1}
_RESULTS |= {"loss": -1, "losses": -1, "lost": -1}
_RESULT_TERMS = text.content_terms("earned profit surplus deficit shortfall")  # the sign's
# A price turned up or down by the word right after its figure: "a 50% discount", "10% off",
# "a 10% surcharge"; read only against a truth signed as written ("+50%").
_PRICE_TURNS = {"surcharge": 1, "premium": 1, "markup": 1, "discount": -1, "rebate": -1, "off": -1}
_PRICE_TURN = re.compile(r"\s*(" + "|".join(_PRICE_TURNS) + r")\b", re.I)


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


def _says_denied_clause(case: "_Case") -> bool:
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


def _short_name(case: "_Case", truth_terms: set[str], answer: str, extra: bool) -> bool:
    """Whether the answer calls the truth's name by its last word, the one it is known by
    ("Austen" for "Jane Austen"): the truth is a name (its own words capitalised), and the
    answer says its last word, with no words of its own or, when it has some, with no other
    name before that word ("Fleming discovered it in 1928", not "Ian Fleming")."""
    written = [w for w in _WORD_WRITTEN.findall(case.truth) if text.content_terms(w) & truth_terms]
    if not written or not all(w[0].isupper() for w in written):
        return False
    last = text.content_terms(written[-1])
    said = _WORD_WRITTEN.findall(answer)
    spots = [i for i, w in enumerate(said) if text.content_terms(w) & last]
    if not spots:
        return False
    if not extra:
        return True
    before = said[spots[0] - 1] if spots[0] else ""
    return not before or not before[0].isupper() or bool(text.content_terms(before) & truth_terms)


_WORD_WRITTEN = re.compile(r"[A-Za-z][\w'’.-]*")
# A name written as one token: with an underscore ("__init__", "ALLOWED_HOSTS"), or dotted
# parts of two characters or more ("object.__getattr__", "http.timeout"; not "U.S." or "e.g."),
# a long option ("--force") or a path ("/etc/nginx/nginx.conf", "~/.bashrc").
_IDENTIFIER = re.compile(
    r"(?<![\w.])(?:\w*_\w*|[A-Za-z_]\w+(?:\.[A-Za-z_]\w+)+)(?![\w])"
    r"|(?<![\w-])--[A-Za-z][\w-]*"
    r"|(?<![\w/])(?:~|\.{1,2})?/[\w.-]+(?:/[\w.-]+)+|(?<![\w/])~/[\w.-]+"
)


def _identifiers(said: str) -> set[str]:
    """The names written as one token in `said`, lower-cased, with at least one letter."""
    return {
        m.group().lower().rstrip(".")  # a sentence's full stop after a path is not the path's
        for m in _IDENTIFIER.finditer(said or "")
        if any(ch.isalpha() for ch in m.group())
    }


# A truth that is a list of three or more short items, "A, B and C": each item is part of
# the answer. Word recall alone credits most of a list, and nothing of an item written as a
# symbol ("match, case and _").
# "What are the two reportable segments", "Which three vaccines": the number of things asked.
_COUNT_ASKED = re.compile(
    r"(?:\b(?:which|what|name|list|the|its|their)|'s?)\s+(?:are\s+the\s+|were\s+the\s+)?"
    r"(two|three|four|five|2|3|4|5)"
    r"\s+(?!times?\b|of\b)[a-z]",
    re.I,
)
_COUNT_WORDS = {"two": 2, "three": 3, "four": 4, "five": 5}


def _count_asked(question: str) -> int:
    """How many things the question asks for by number ("its two segments"), else 0."""
    found = _COUNT_ASKED.search(question or "")
    if not found:
        return 0
    word = found.group(1).lower()
    return int(word) if word.isdigit() else _COUNT_WORDS[word]


_LISTED = re.compile(r"^\s*([^,;.:]+(?:,[^,;.:]+)+?),?\s+and\s+([^,;.:]+?)\s*\.?\s*$", re.I)
# Four items or more by commas alone, each of three words at most and none opening with an
# article: "Gluten, eggs, fish, milk, mustard" (not a place and its regions, "Stratford-upon-
# Avon, Warwickshire, England", nor a name and its apposition, "HMS Victory, a first-rate ship").
_COMMA_LISTED = re.compile(
    r"^\s*((?!(?:a|an|the|now)\s)[^,;.:\s]+(?:\s+[^,;.:\s]+){0,2}"
    r"(?:,\s*(?!(?:a|an|the|now)\s)[^,;.:\s]+(?:\s+[^,;.:\s]+){0,2}){3,})\s*\.?\s*$",
    re.I,
)
LIST_ITEM_WORDS = 6


def _items_unsaid(truth: str, said: str, said_terms: set[str], count: int = 0) -> list[str]:
    """The items of a listed truth that `said` (whose key words are `said_terms`) leaves
    out: an item of words is said by any of its words, an item with none (a symbol) by the
    symbol standing alone. Where the question asks for `count` things, a truth of that many
    parts by commas and "and" is a list ("Meals & Beverages and Snacks" of two segments)."""
    listed = _LISTED.match(truth)
    parts = [
        p.strip() for p in re.split(r",\s*(?:and\s+)?|\s+and\s+", truth.strip(" .")) if p.strip()
    ]
    if listed:
        items = [item.strip() for item in listed.group(1).split(",")] + [listed.group(2).strip()]
    elif listed := _COMMA_LISTED.match(truth):
        items = [item.strip() for item in listed.group(1).split(",")]
    elif count >= 2 and len(parts) == count:
        items = parts
    else:
        return []
    if any(not item or len(item.split()) > LIST_ITEM_WORDS for item in items):
        return []
    unsaid = []
    every = [text.content_terms(item) for item in items]
    for item, words in zip(items, every, strict=True):
        # An item is said by a word of its own: "credit card" not by the "card" it shares
        # with "debit card".
        others = set().union(*(w for w in every if w is not words))
        words = (words - others) or words
        if words:
            if not words & said_terms:
                unsaid.append(item)
        elif not re.search(
            rf"(?<![\w{re.escape(item)}]){re.escape(item)}(?![\w{re.escape(item)}])", said
        ):
            unsaid.append(item)
    return unsaid


def _same_day(answer: tuple, truth: tuple) -> bool:
    month, day, year = truth
    return answer[0] == month and answer[1] == day and (year is None or answer[2] == year)


def _recall(wanted: set[str], said: set[str]) -> float:
    return len(wanted & said) / len(wanted) if wanted else 0.0


def _any_agree(answer: list[quantities.Quantity], truth: list[quantities.Quantity]) -> bool:
    return any(quantities.agree(a, t) for a in answer for t in truth)
