"""What an agent's answer score can reach by the kinds of answer it can give.

The answer goal of issue 17 (answer score >= 0.10 on companies never trained on) counts every
question of a split alike, and a split's questions are of kinds a small model answers
unequally well: a yes-or-no question answered "Yes" is right as often as its truth is "Yes",
a choice ("Did wages increase or decrease…?") is right with the option the filing supports,
a figure is right only where the filing prints it and the agent copies it, and a ratio, a
margin, an average or a sum the filing does not print is right only for a model that does the
arithmetic. No model runs here: each row is an answering habit, judged by the offline judge
on every validation question of each entity split (`sleuth train --split-seed N` holds the
same companies back), so it is the ceiling of that habit, what a student that had learnt it
perfectly would score.

- yes to every yes/no: "Yes" to every question asking yes or no (the filings pack's `asks_yes_no`),
  nothing else right. The `cpu-45min` students answer so (the `yes_no_answers` rule makes
  them say yes or no; they say "Yes").
- + every choice: also the truth itself to every question offering two (scored as the
  truth's option alone is: the judge reads which option an answer says).
- + every printed figure: also the truth's own figure wherever the question's golden
  evidence prints it (a perfect copier of the right row and column).
- + every yes/no read: also "No" where the truth says no (a model that reads the answer off
  two figures, or off a note).

Usage: python bench/answer_kinds.py [--questions PATH] [--seeds 0,1,2,3] [--val-fraction F]
"""

import argparse
import statistics
from collections.abc import Callable

from engine.documents.questions import Question, load_questions, split_by_entity
from engine.packs.filings.decoding import asks_yes_no, offered_options
from engine.rewards import quantities, text
from engine.rewards.judge import OfflineJudge

DEFAULT_QUESTIONS = "../shared/datasets/financebench-dev/questions.jsonl"
GOAL = 0.10


def printed_figure(question: Question) -> str | None:
    """The truth's headline figure as the golden evidence prints it ("(1,577)"), or None
    where the evidence prints no figure equal to it (a ratio, a margin, a sum worked out)."""
    hint = quantities.scale_hint(question.question)
    truth = quantities.extract_quantities(question.answer, hint)
    if not truth:
        return None
    for evidence in question.evidence:
        for shown in quantities.extract_quantities(evidence.text or "", hint):
            if quantities.same_quantity(shown, truth[0]):
                return shown.text
    return None


def says(question: Question) -> str | None:
    """The truth's yes, no or option, for a question asking yes or no or offering two."""
    options = text.choice(question.question)
    if options:
        said = text.chosen(question.answer, options)
        return min(said) if len(said) == 1 else None
    return text.polarity(question.answer)


# Each habit: the answer it gives a question (None: no answer, judged 0).
Habit = Callable[[Question], str | None]


def yes_to_yes_no(q: Question) -> str | None:
    return "Yes" if asks_yes_no(q.question) else None


def with_choices(q: Question) -> str | None:
    if offered_options(q.question) and says(q):
        return q.answer
    return yes_to_yes_no(q)


def with_printed_figures(q: Question) -> str | None:
    if not asks_yes_no(q.question) and not offered_options(q.question):
        return printed_figure(q)
    return with_choices(q)


def with_yes_no_read(q: Question) -> str | None:
    if asks_yes_no(q.question) and says(q):
        return q.answer
    return with_printed_figures(q)


HABITS: dict[str, Habit] = {
    "yes to every yes/no": yes_to_yes_no,
    "+ every choice": with_choices,
    "+ every printed figure": with_printed_figures,
    "+ every yes/no read": with_yes_no_read,
}


def score(questions: list[Question], habit: Habit, judge: OfflineJudge) -> float:
    scores = []
    for q in questions:
        answer = habit(q)
        scores.append(judge.judge(q.question, q.answer, answer).score if answer else 0.0)
    return statistics.fmean(scores) if scores else 0.0


def kinds(questions: list[Question]) -> str:
    yes_no = [q for q in questions if asks_yes_no(q.question)]
    yes = sum(says(q) == "yes" for q in yes_no)
    choices = sum(bool(offered_options(q.question)) for q in questions)
    printed = sum(
        printed_figure(q) is not None
        for q in questions
        if not asks_yes_no(q.question) and not offered_options(q.question)
    )
    return f"{len(yes_no)} yes/no ({yes} yes), {choices} choice, {printed} printed figure"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", default=DEFAULT_QUESTIONS)
    parser.add_argument("--seeds", default="0,1,2,3", help="entity split seeds")
    parser.add_argument("--val-fraction", type=float, default=0.25)
    args = parser.parse_args()

    questions = load_questions(args.questions)
    seeds = [int(s) for s in args.seeds.split(",")]
    splits = {s: split_by_entity(questions, args.val_fraction, s)[1] for s in seeds}
    judge = OfflineJudge()

    header = ["habit", *(f"seed {s} ({len(splits[s])} q)" for s in seeds), "mean"]
    print("| " + " | ".join(header) + " |")
    print("|" + " --- |" * len(header))
    print("| questions | " + " | ".join(kinds(splits[s]) for s in seeds) + " | – |")
    for name, habit in HABITS.items():
        values = [score(splits[s], habit, judge) for s in seeds]
        cells = [f"**{v:.3f}**" if v >= GOAL else f"{v:.3f}" for v in values]
        mean = statistics.fmean(values)
        print(f"| {name} | " + " | ".join(cells) + f" | {mean:.3f} |")
    print(f"\nbold: at or over the goal's {GOAL:.2f}")


if __name__ == "__main__":
    main()
