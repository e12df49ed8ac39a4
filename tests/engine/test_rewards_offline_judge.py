"""The offline judge: deterministic verdicts on financial answers, with no model at all."""

import json
from pathlib import Path

import pytest

from engine.rewards.judge import OfflineJudge

CAPEX_Q = (
    "What is the FY2018 capital expenditure amount (in USD millions) for 3M? Give a response "
    "to the question by relying on the details shown in the cash flow statement."
)
DATASETS = Path(__file__).parents[2].parent / "shared" / "datasets"


@pytest.fixture
def judge():
    return OfflineJudge()


@pytest.mark.parametrize("answer", ["$1,577 million", "1577.00", "$1.577 billion"])
def test_the_same_figure_in_another_format_is_correct(judge, answer):
    verdict = judge.judge(CAPEX_Q, "$1577.00", answer)
    assert verdict.correct and verdict.score == 1.0
    assert verdict.prompt_id == "offline"


@pytest.mark.parametrize("answer", ["15.77", "$1,577 billion", "$1,373 million"])
def test_a_different_figure_is_incorrect(judge, answer):
    assert not judge.judge(CAPEX_Q, "$1577.00", answer).correct


def test_a_row_quoted_with_a_figure_is_judged_by_its_figure_said_back_alone_by_nothing(judge):
    question = (
        "According to its financial statements, what did JPMorgan report as total net "
        "periodic defined benefit plan cost/(credit) for 2022?"
    )
    quoted = "Total net periodic defined benefit plan cost/(credit) (75) million"
    assert judge.judge(question, "-$75 million", quoted).correct
    assert not judge.judge(question, "-$75 million", quoted.replace("(75)", "(60)")).correct
    said_back = "Total net periodic defined benefit plan cost/(credit) for 2022"
    assert judge.judge(question, "-$75 million", said_back).reason == "repeats the question"


def test_percentages_are_compared_as_numbers(judge):
    question = "What is Adobe's FY2022 operating margin?"
    assert judge.judge(question, "34.6%", "Operating margin was 34.6 percent.").correct
    assert not judge.judge(question, "34.6%", "36.8%").correct


def test_yes_no_must_agree(judge):
    question = "Does Microsoft have more debt in FY2023 than in FY2022?"
    truth = "No. Microsoft decreased its debt by $2.5bn in FY 2023 vs FY 2022."
    assert judge.judge(question, truth, "No, it reduced its debt by $2.5 billion.").correct
    assert not judge.judge(question, truth, "Yes, debt went up.").correct


def test_right_yes_no_with_the_wrong_figure_is_incorrect(judge):
    truth = "Yes, CVS paid a $0.55 dividend per share every quarter in FY2022"
    assert not judge.judge("Did CVS pay a dividend?", truth, "Yes, $0.60 per share.").correct


WAGES_Q = (
    "Did Ulta Beauty's wages expense as a percent of net sales increase or decrease in FY2023?"
)
WAGES_TRUTH = "Wages expense as a percent of net sales increased in FY2023."


@pytest.mark.parametrize("answer", ["Increased", "It increased.", "an increase"])
def test_the_option_the_truth_chooses_is_correct(judge, answer):
    # The option is a word of the question, which the text overlap alone does not count.
    verdict = judge.judge(WAGES_Q, WAGES_TRUTH, answer)
    assert verdict.correct and verdict.score == 1.0, verdict


@pytest.mark.parametrize("answer", ["Decreased", "It increased or decreased", "Yes"])
def test_the_other_option_both_or_neither_is_incorrect(judge, answer):
    assert judge.judge(WAGES_Q, WAGES_TRUTH, answer).score == 0.0


def test_the_right_option_with_the_wrong_figures_is_incorrect(judge):
    question = "Has AMCOR's quick ratio improved or declined between FY2023 and FY2022?"
    truth = "The quick ratio has slightly improved from 0.67 times to 0.69 times."
    assert judge.judge(question, truth, "Improved, to 0.69 times").correct
    verdict = judge.judge(question, truth, "Improved, to 0.95 times")
    assert not verdict.correct and verdict.score == 0.5


def test_a_choice_in_brackets_or_of_small_words_is_no_choice():
    from engine.rewards.text import choice

    assert choice("Which activity brought in the most (or lost the least) cash?") is None
    assert choice("Is the dividend paid in cash or in stock?") is None  # "cash or in"
    assert choice("Did margins improve or decline?") == ("improv", "declin")


def test_text_answers_need_most_of_the_truth_key_words(judge):
    question = "What is the largest liability in American Express's balance sheet?"
    assert judge.judge(question, "Customer deposits", "Customer deposits.").correct
    assert not judge.judge(question, "Customer deposits", "Long-term debt").correct


def test_words_the_question_already_says_earn_nothing(judge):
    question = "Which region had the highest Pepsico revenue growth in FY2023?"
    truth = "Latin America"
    assert not judge.judge(question, truth, "Pepsico revenue growth in FY2023").correct


def test_the_unit_of_a_figure_is_no_answer_without_the_figure(judge):
    # proof109's student wrote the row and a unit, no figure: the judge had credited the
    # unit as "100% of the truth's key words".
    question = (
        "According to its financial statements, what did PepsiCo report as net income for 2021?"
    )
    for answer in ("Net income (2021) million", "Net income million", "USD millions"):
        assert not judge.judge(question, "7,679 million", answer).correct, answer
    assert judge.judge(question, "7,679 million", "Net income 7,679 million").correct
    # Nor are the question's own words beside it.
    question = "By how much did Pepsico increase its unsecured five year revolving credit?"
    answer = "increase unsecured revolving credit agreement 8K d/d"
    assert not judge.judge(question, "$400,000,000 increase.", answer).correct
    # Words beside a figure still count when they are the answer.
    question = "Which of JPM's business segments had the lowest net revenue in 2021 Q1?"
    assert judge.judge(
        question, "Corporate. Its net revenue was -$473 million.", "Corporate"
    ).correct


def test_a_headline_figure_is_enough_when_the_rest_explains_it(judge):
    truth = "36%. The answer here assumes FY2023 refers to the 12 months ended on January 28, 2023."
    assert judge.judge("What was Ulta's FY2023 gross margin?", truth, "36%").correct


def test_a_refusal_is_incorrect(judge):
    assert not judge.judge(CAPEX_Q, "$1577.00", "This cannot be determined.").correct


def test_an_empty_answer_is_incorrect(judge):
    assert not judge.judge(CAPEX_Q, "$1577.00", "  ").correct


def test_every_financebench_ground_truth_judges_itself_correct(judge):
    path = DATASETS / "financebench-dev" / "questions.jsonl"
    if not path.exists():
        pytest.skip("shared datasets are not beside the clone")
    questions = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    wrong = [
        q["id"]
        for q in questions
        if not judge.judge(q["question"], q["answer"], q["answer"]).correct
    ]
    assert wrong == []
