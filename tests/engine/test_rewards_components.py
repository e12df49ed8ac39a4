"""Each reward component on hand-made trajectories, and the run config round trip."""

import pytest

from engine.rewards.judge import JudgeConfig, JudgeError, OfflineJudge, Verdict
from engine.rewards.reward import (
    RewardConfig,
    RewardInput,
    compute_reward,
    compute_rewards,
)

QUESTION = "What is the FY2018 capital expenditure amount (in USD millions) for 3M?"
TRUTH = "$1577.00"


def trajectory(**changes) -> RewardInput:
    fields = dict(
        question=QUESTION,
        ground_truth=TRUTH,
        answer="$1,577 million",
        retrieved_chunk_ids=["3m-p58", "3m-p60", "3m-p12"],
        golden_chunk_ids=["3m-p60"],
        searches=2,
        finish_reason="answer",
    )
    return RewardInput(**{**fields, **changes})


def score(inp: RewardInput, config: RewardConfig | None = None):
    return compute_reward(inp, config or RewardConfig(), OfflineJudge())


def test_a_correct_concise_answer_with_evidence_earns_every_component():
    result = score(trajectory())
    assert result.components == {
        "correctness": 1.0,
        "conciseness": 1.0,
        "golden_recall": 1.0,
        "format": 1.0,
    }
    assert result.total == pytest.approx(1.0)
    assert result.details["judge"]["prompt_id"] == "offline"


def test_total_is_the_weighted_sum_of_components():
    config = RewardConfig(weights={"correctness": 2.0, "golden_recall": 0.5})
    result = score(trajectory(retrieved_chunk_ids=["3m-p58"]), config)
    assert result.components["golden_recall"] == 0.0
    assert result.total == pytest.approx(2.0)


def test_a_wrong_answer_earns_no_correctness_and_no_conciseness():
    result = score(trajectory(answer="$1,373 million"))
    assert result.components["correctness"] == 0.0
    assert result.components["conciseness"] == 0.0
    assert result.details["conciseness_raw"] == 1.0


def test_conciseness_decays_past_the_allowance():
    # Varied sentences: one sentence said six times is a loop, which the judge does not credit.
    long_answer = (
        "$1,577 million. The company invested in plants and equipment across its regions, "
        "mostly in new production lines, warehouses, laboratories and information systems. "
        "Spending rose in the second half as several large projects in Asia moved from "
        "planning into construction, while maintenance work on older sites continued at a "
        "steady pace throughout the year."
    )
    result = score(trajectory(answer=long_answer))
    assert result.components["correctness"] == 1.0
    assert 0.0 < result.components["conciseness"] < 0.5


def test_padding_the_truth_does_not_use_costs_conciseness():
    assert score(trajectory(answer="$1,577 million 🚀")).components["conciseness"] == 0.5
    result = score(trajectory(answer="**$1,577 million** 🚀"))
    assert result.components["conciseness"] == 0.0
    assert result.details["padding"] == ["emoji", "emphasis"]


def test_padding_the_truth_itself_uses_is_not_penalized():
    truth = "Acquisitions:\n- **Czech** flexibles plant"
    answer = "- **Czech** flexibles plant"
    assert score(trajectory(ground_truth=truth, answer=answer)).details["conciseness_raw"] == 1.0


def test_golden_recall_is_the_share_of_golden_chunks_seen():
    inp = trajectory(golden_chunk_ids=["a", "b", "c", "d"], retrieved_chunk_ids=["x", "b", "d"])
    assert score(inp).components["golden_recall"] == 0.5


def test_golden_recall_without_golden_chunks_is_zero_and_says_why():
    result = score(trajectory(golden_chunk_ids=[]))
    assert result.components["golden_recall"] == 0.0
    assert "no golden chunks" in result.details["golden_recall"]


@pytest.mark.parametrize("finish_reason", ["max_turns", "max_tokens", "malformed", "no_answer"])
def test_format_is_zero_when_the_trajectory_did_not_finish_with_an_answer(finish_reason):
    result = score(trajectory(answer=None, finish_reason=finish_reason))
    assert result.components["format"] == 0.0
    assert result.total == pytest.approx(0.2)  # only the golden chunk it saw


def test_malformed_calls_and_stray_tags_cost_format():
    assert score(trajectory(malformed_calls=2)).components["format"] == 0.5
    stray = score(trajectory(answer="$1,577 million</answer><search>capex</search>"))
    assert stray.components["format"] == 0.25


def test_an_unknown_finish_reason_is_a_caller_error():
    with pytest.raises(ValueError, match="finish_reason"):
        score(trajectory(finish_reason="done"))


def test_answering_without_search_earns_no_correctness_when_evidence_is_required():
    result = score(trajectory(searches=0, retrieved_chunk_ids=[]))
    assert result.components["correctness"] == 0.0
    relaxed = score(trajectory(searches=0), RewardConfig(require_evidence=False))
    assert relaxed.components["correctness"] == 1.0


def test_calibration_is_logged_only_when_weighted():
    assert "calibration" not in score(trajectory(confidence=0.9)).components
    config = RewardConfig(weights={"correctness": 1.0, "calibration": 0.5})
    assert score(trajectory(confidence=0.9), config).components["calibration"] == 0.99
    wrong = score(trajectory(answer="15.77", confidence=0.9), config)
    assert wrong.components["calibration"] == pytest.approx(0.19)
    humble = score(trajectory(answer="15.77", confidence=0.1), config)
    assert humble.components["calibration"] > wrong.components["calibration"]
    assert score(trajectory(), config).components["calibration"] == 0.0  # none stated


def test_novelty_marks_down_only_wrong_answers_made_of_the_questions_words():
    assert "novelty" not in score(trajectory(answer="FY2018 capital expenditure")).components
    config = RewardConfig(weights={"correctness": 0.6, "novelty": 0.1})
    echo = score(trajectory(answer="The capital expenditures of 3M in FY2018"), config)
    assert (echo.components["novelty"], echo.correct) == (0.0, False)
    assert "question's words" in echo.details["novelty"]
    # a wrong answer that says something else, a right one, and a bare "No" each keep it
    assert score(trajectory(answer="$2,100 million"), config).components["novelty"] == 1.0
    assert score(trajectory(), config).components["novelty"] == 1.0
    assert score(trajectory(answer="No"), config).components["novelty"] == 1.0
    assert (
        score(trajectory(answer=None, finish_reason="no_answer"), config).components["novelty"]
        == 0.0
    )
    # it counts in the total: the echo's total is the other components' alone
    other = score(trajectory(answer="$2,100 million"), config)
    assert other.total - echo.total == pytest.approx(0.1)
    assert config.components == ["correctness", "conciseness", "golden_recall", "format", "novelty"]


class BrokenJudge:
    def judge(self, question: str, ground_truth: str, answer: str) -> Verdict:
        raise JudgeError("judge at http://127.0.0.1:9 failed after 3 attempts")


def test_a_failing_judge_is_recorded_not_raised():
    results = compute_rewards([trajectory(), trajectory()], RewardConfig(), BrokenJudge())
    assert [r.components["correctness"] for r in results] == [0.0, 0.0]
    assert all(r.details["judge_failed"] for r in results)
    assert "failed after 3 attempts" in results[0].errors[0]


def test_batch_results_keep_the_input_order():
    inputs = [trajectory(answer=a) for a in ["$1,577 million", "15.77", "1577"]]
    results = compute_rewards(inputs, RewardConfig(), OfflineJudge())
    assert [r.components["correctness"] for r in results] == [1.0, 0.0, 1.0]


def test_config_round_trips_through_json_data():
    config = RewardConfig(
        weights={"correctness": 0.7, "calibration": 0.1},
        require_evidence=False,
        judge=JudgeConfig(base_url="http://judge:8000/v1", model="qwen"),
    )
    assert RewardConfig.from_dict(config.to_dict()) == config


def test_config_rejects_unknown_components_and_settings():
    with pytest.raises(ValueError, match="unknown reward components"):
        RewardConfig(weights={"corectness": 1.0})
    with pytest.raises(ValueError, match="unknown reward settings"):
        RewardConfig.from_dict({"weight": {}})
    with pytest.raises(ValueError, match="negative"):
        RewardConfig(weights={"format": -1.0})


def test_breakdown_flattens_to_metrics_for_trajectories_and_dashboards():
    metrics = score(trajectory()).to_metrics()
    assert metrics == {
        "total": 1.0,
        "correctness": 1.0,
        "conciseness": 1.0,
        "golden_recall": 1.0,
        "format": 1.0,
        "correct": 1.0,
        "judge_failed": 0.0,
    }
    failed = compute_rewards([trajectory()], RewardConfig(), BrokenJudge())[0]
    assert failed.to_metrics()["judge_failed"] == 1.0
    assert failed.to_metrics()["correct"] == 0.0  # a judge that cannot decide credits nothing


def test_breakdown_serializes_for_trajectories():
    data = score(trajectory()).to_dict()
    assert set(data) == {"total", "components", "details", "errors", "correct"}
