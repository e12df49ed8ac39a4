"""The offline judge against its labelled set (tests/data/judge_set.jsonl).

The set's verdicts were labelled by reading each question, truth and answer against the
standard in DESIGN.md ("Measuring honestly"), never by running a judge: recorded runs'
answers, the kinds of wrong answer issue 65 found credited, and answers from other domains.
The judge is also RL's reward, so it changes only with this set: it must agree with at least
97% of the lines and credit none of the wrong answers.
"""

import json
from pathlib import Path

import pytest

from engine.rewards.judge import OfflineJudge

JUDGE_SET = Path(__file__).parents[1] / "data" / "judge_set.jsonl"
# Written by reviewers who read neither the judge nor the set (2026-12-07), in three rounds,
# each set scored once before any rule was written from it (docs/judge-rejudge.md):
# - four sets (860 lines, 46 domains): the judge of that morning credited 80 of their 464
#   wrong answers;
# - seven sets (898 lines, about 90 more domains): the judge after the first round credited 22
#   of the first four's 255 wrong answers and missed 119 of their 261 true ones; the last
#   three, written after rules were drawn from those four, were credited 8 of 197 and missed 56
#   of 185;
# - two sets (279 lines: a natural mix, and one written to break a rule judge both ways),
#   written after every rule of the second round: 24 of 147 wrong answers credited, 61 of 132
#   true ones missed (the first round's judge: 31 and 85);
# - two more of the same kinds (286 lines), after the third round's rules: 13 of 149 wrong
#   answers credited, 57 of 137 true ones missed (the first round's judge: 17 and 77);
# - four more (560 lines, 54 domains: a small agent's natural answers, answers written to
#   fool a judge of words and figures, passages copied with several cases, questions other
#   than figures), after the fourth round's rules: 25 of 288 wrong answers credited (19 of
#   them in the set written to fool it), 117 of 272 true ones missed;
# - two more (300 lines, 28 domains: natural answers, and a set written to slip past the kinds
#   of rule it was told the judge has), after the fifth round's rules: 32 of 159 wrong answers
#   credited (28 in the second), 45 of 141 true ones missed;
# - two more (300 lines, 30 domains: natural answers over technical documents, and hard pairs
#   both ways over public-sector and finance ones), after the sixth round's rules: 15 of 152
#   wrong answers credited (none of the 77 natural ones), 65 of 148 true ones missed;
# - three more (450 lines: a small agent's natural answers over fifteen kinds of customer
#   document, pairs of the yardstick issue's kinds over many domains, and filings questions
#   in FinanceBench's style over 40 companies), after the seventh round's rules: 12 of 226
#   wrong answers credited (2 of the 75 natural ones), 36 of 224 true ones missed;
# - three more (450 lines: natural answers over fifteen other kinds of document, filings
#   beyond the 10-K, and a set told the kinds of rule the judge has), after the eighth
#   round's rules: 25 of 224 wrong answers credited (1 of the 75 natural ones, 19 of 75 in
#   the set told the rule kinds), 62 of 226 true ones missed;
# - one more (200 lines: natural answers over twenty other kinds of document), after the
#   ninth round's rules: 1 of 99 wrong answers credited, 25 of 101 true ones missed;
# - two more (350 lines: natural answers over twenty more kinds of document, and pairs of the
#   yardstick issue's kinds over many domains), after the tenth round's rules and a second
#   review: 2 of 99 and 8 of 75 wrong answers credited, 20 of 101 and 25 of 75 true ones missed;
# - two more (350 lines: natural answers over forty more kinds of document, and figures said
#   in another form: notations, conversions, shares said as counts), after the eleventh
#   round's rules and the rules for figures said otherwise: 1 of 98 and 1 of 75 wrong answers
#   credited, 26 of 102 and 32 of 75 true ones missed.
# What the judge misses most are true answers in words it cannot read. The set keeps it from
# crediting wrong answers of kinds the labelled set lacks; its agreement floor fell from 0.85
# to 0.83 with the eight sets after the first 2,323 lines, whose true answers it misses more
# of: a floor against losing ground, not a goal.
INDEPENDENT_SET = JUDGE_SET.with_name("judge_set_independent.jsonl")
INDEPENDENT_AGREEMENT_FLOOR = 0.83
# The 109 it still credits need more than the words: a condition or scope the question names
# in other words ("single" for a return fare, "for senators" to the lower house, "per
# individual" to the family maximum, "from purchase" for "from validation", "in the finish
# area" for the start area), a claim about the truth it cannot weigh ("X is suitable" where
# the truth is what must not be used), another person or period named beside the truth's,
# a ratio's sides turned ("placebo to active drug"), a claim beside the truth that knowledge
# refutes ("Hamburg two days after that"), a note's sharp dropped, an alias of another
# country, a figure's base ("2% of the milk weight" for the curd's), another body named first
# ("The local planning authority, after consulting the Forestry Commission"), a figure
# given to a case named in other words ("Youths pay $8 and adults $4" for a 16-year-old),
# one role acting after another ("The project manager approves them, after consulting the
# lead linguist"), "until" for "from", the right name in another role ("Outings taken by the
# Captain must be approved by the Safety Adviser"), a double negative that allows what the
# truth forbids, a truth only planned or expected, a total of other years, a share of another
# base (rules for the last three were tried and dropped: a review found them refusing true
# answers far more often), and of the eighth round's sets a yes with another cause than the
# truth's ("No, mainly because of elevated inventory levels"; the rule was dropped after a
# review found it refusing causes in other words) and an interval "considered but rejected"
# where the question asks for one "before the booster dose" (a "before" that reads as asking
# for an earlier state).
INDEPENDENT_CREDITED_AT_MOST = 109
AGREEMENT_NEEDED = 0.97
FIELDS = {"question", "truth", "answer", "verdict", "reason", "source"}


def load_set(path: Path = JUDGE_SET) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def judged() -> list[tuple[dict, object]]:
    judge = OfflineJudge()
    return [(row, judge.judge(row["question"], row["truth"], row["answer"])) for row in load_set()]


def _lines(disagreements) -> str:
    return "\n".join(
        f"  labelled {row['verdict']}, judged {verdict.correct} ({verdict.reason}) "
        f"[{row['source']}] truth={row['truth'][:60]!r} answer={row['answer'][:80]!r}"
        for row, verdict in disagreements
    )


def test_the_set_is_large_labelled_and_covers_its_sources():
    rows = load_set()
    assert len(rows) >= 300
    assert all(set(row) == FIELDS and isinstance(row["verdict"], bool) for row in rows)
    assert all(row["reason"].strip() for row in rows)
    sources = [row["source"].split(":")[0] for row in rows]
    assert sources.count("run") >= 150 and sources.count("domain") >= 60
    assert sources.count("kind") >= 60
    # Both verdicts in earnest: a set of wrong answers only would pass a judge that says no.
    assert 0.25 <= sum(row["verdict"] for row in rows) / len(rows) <= 0.75


def test_the_reviews_kinds_are_there_with_both_verdicts():
    """The kinds a review found after the judge was written (scale words after digits, a
    negation word that is a value's name, the fact after a yes or no, implied yes, "which"
    with a text truth, lists, half a name, units, currency and scale), each with right and
    wrong answers, so that neither a lenient nor a refusing judge passes them."""
    rows = [row for row in load_set() if row["source"].startswith("review:")]
    assert len(rows) >= 40
    kinds: dict[str, set[bool]] = {}
    for row in rows:
        kinds.setdefault(row["source"], set()).add(row["verdict"])
    assert len(kinds) >= 8
    assert all(verdicts == {True, False} for verdicts in kinds.values()), kinds


# Wrong answers whose error is a claim beside the truth that only knowledge of the world
# refutes ("Ottawa, in British Columbia" for "Ottawa"): no judge without that knowledge can
# tell them from a true aside ("Jane Austen, in 1813"), which the set labels correct. They
# count against agreement; the API judge is the way to catch them.
KNOWLEDGE = "redteam:knowledge"


def test_the_judge_credits_none_of_the_wrong_answers(judged):
    credited = [
        (row, v)
        for row, v in judged
        if v.correct and not row["verdict"] and row["source"] != KNOWLEDGE
    ]
    assert not credited, f"{len(credited)} wrong answers credited:\n{_lines(credited)}"


def test_the_wrong_answers_only_knowledge_refutes_are_few_and_labelled_so():
    rows = [row for row in load_set() if row["source"] == KNOWLEDGE]
    assert 0 < len(rows) <= 5 and not any(row["verdict"] for row in rows)
    assert all("world knowledge" in row["reason"] for row in rows)


def test_the_judge_agrees_with_the_labels(judged):
    disagreements = [(row, v) for row, v in judged if v.correct != row["verdict"]]
    agreement = 1 - len(disagreements) / len(judged)
    assert agreement >= AGREEMENT_NEEDED, (
        f"agreement {agreement:.3f} < {AGREEMENT_NEEDED}; disagreements:\n{_lines(disagreements)}"
    )


def test_a_wrong_verdict_never_scores_full_credit(judged):
    full = [(row, v) for row, v in judged if not v.correct and v.score >= 1.0]
    assert not full, _lines(full)


def test_the_independent_sets_wrong_answers_are_not_credited_but_those_known():
    judge = OfflineJudge()
    rows = load_set(INDEPENDENT_SET)
    assert len(rows) >= 5280 and all(set(row) == FIELDS for row in rows)
    judged = [(row, judge.judge(row["question"], row["truth"], row["answer"])) for row in rows]
    credited = [(row, v) for row, v in judged if v.correct and not row["verdict"]]
    assert len(credited) <= INDEPENDENT_CREDITED_AT_MOST, (
        f"{len(credited)} wrong answers credited:\n{_lines(credited)}"
    )
    agreement = sum(v.correct == row["verdict"] for row, v in judged) / len(judged)
    assert agreement >= INDEPENDENT_AGREEMENT_FLOOR, f"agreement {agreement:.3f}"
