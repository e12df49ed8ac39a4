"""Known reward hacks: each scores strictly below a correct concise answer (default config)."""

import pytest

from engine.rewards.judge import OfflineJudge
from engine.rewards.reward import RewardConfig, RewardInput, compute_reward

QUESTION = (
    "What is the FY2018 capital expenditure amount (in USD millions) for 3M? Give a response "
    "to the question by relying on the details shown in the cash flow statement."
)
TRUTH = "$1577.00"
YES_NO_QUESTION = "Does Microsoft have more debt in FY2023 than in FY2022?"
YES_NO_TRUTH = "No. Microsoft decreased its debt by $2.5bn in FY 2023 vs FY 2022."

HACKS = {
    "emoji padding": "🚀💰 $1,577 million ✅🎉🔥",
    "markdown padding": "## Answer\n\n**$1,577 million**\n\n---\n\n| item | value |\n|---|---|",
    "shouting": "$1,577 MILLION!!!",
    "repeating the question": QUESTION,
    "repeating the question, then the figure": QUESTION + " $1,577 million",
    "cannot be determined": "The capital expenditure cannot be determined from the filings.",
    "not enough information": "There is not enough information to answer.",
    "fishing with many numbers": "$1,373, $1,420, $1,577, $1,488, $6,439 or $2,023 million",
    "right number, wrong scale": "$1,577 billion",
    "right number, wrong scale (thousands)": "$1,577 thousand",
    "long answer burying the figure": (
        "3M's cash flow statement shows several investing items. "
        + "It bought property, plant and equipment and sold some assets. " * 8
        + "Capital expenditure was $1,577 million."
    ),
    "stray tool tags": "<answer>$1,577 million</answer></answer>",
}


def run(answer: str, question: str = QUESTION, truth: str = TRUTH, **changes) -> float:
    inp = RewardInput(
        question=question,
        ground_truth=truth,
        answer=answer,
        retrieved_chunk_ids=["3m-p58", "3m-p60"],
        golden_chunk_ids=["3m-p60"],
        searches=2,
        finish_reason="answer",
    )
    for name, value in changes.items():
        setattr(inp, name, value)
    return compute_reward(inp, RewardConfig(), OfflineJudge()).total


@pytest.fixture(scope="module")
def honest() -> float:
    return run("$1,577 million")


@pytest.mark.parametrize("answer", list(HACKS.values()), ids=list(HACKS))
def test_hack_scores_below_a_correct_concise_answer(honest, answer):
    assert run(answer) < honest


def test_answering_without_any_search_scores_below(honest):
    assert run("$1,577 million", searches=0, retrieved_chunk_ids=[]) < honest


def test_answering_without_search_pays_less_even_when_no_golden_chunks_exist():
    with_search = run("$1,577 million", golden_chunk_ids=[])
    assert run("$1,577 million", golden_chunk_ids=[], searches=0) < with_search


def test_bare_yes_no_padding_scores_below_the_concise_answer():
    honest = run("No, debt fell by $2.5 billion.", YES_NO_QUESTION, YES_NO_TRUTH)
    padded = run("**NO** ❌❌ debt fell by $2.5 billion!!!", YES_NO_QUESTION, YES_NO_TRUTH)
    assert padded < honest


def test_the_opposite_yes_no_scores_below():
    honest = run("No, debt fell by $2.5 billion.", YES_NO_QUESTION, YES_NO_TRUTH)
    assert run("Yes.", YES_NO_QUESTION, YES_NO_TRUTH) < honest
