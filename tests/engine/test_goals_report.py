"""bench/goals.py: finished runs against the trained agent's goals, side by side."""

import json

import pytest

from bench.goals import RunFolderError, RunResult, goals_table, main, mean_run
from engine.evaluation.baselines import BaselineComparison


def write_run(
    folder,
    *,
    split_seed=0,
    recall=0.55,
    echo_recall=0.25,
    after_miss=2.0,
    answer=0.12,
    echo_answer=0.05,
    base_answer=0.0,
    minutes=39.0,
    k=5,
    bought=None,
):
    folder.mkdir(parents=True)
    metrics = {"searches_per_question": 1.0, "retrieved_chunks": float(k), "n": 20}
    report = {
        "policies": {
            "trained": metrics
            | {
                "golden_recall": recall,
                "accuracy": answer,
                "searches_after_miss": after_miss,
                "retrieved_chunks": k - 0.3,
            },
            "base": metrics | {"golden_recall": 0.0, "accuracy": base_answer},
            f"echo@{k}": metrics | {"golden_recall": echo_recall, "accuracy": echo_answer},
        },
        "echo_k": k,
        "questions": 20,
    }
    (folder / "eval.json").write_text(json.dumps(report))
    summary = {"minutes": minutes, "steps": 10} | (bought or {})
    (folder / "summary.json").write_text(json.dumps(summary))
    (folder / "config.json").write_text(json.dumps({"seed": 0, "split_seed": split_seed}))
    return folder


def row(table, goal_start):
    (line,) = [line for line in table.splitlines() if line.startswith(f"| {goal_start}")]
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_each_run_is_a_column_its_goals_marked_where_met(tmp_path):
    met = RunResult.read(write_run(tmp_path / "a", split_seed=0))
    short = RunResult.read(
        write_run(tmp_path / "b", split_seed=1, recall=0.49, answer=0.09, minutes=46)
    )

    table = goals_table([met, short])

    recall = row(table, "golden recall")
    assert recall[1] == "**0.550 at 4.70 chunks, 2.20× echo@5 (0.250)**"
    assert recall[2] == "0.490 at 4.70 chunks, 1.96× echo@5 (0.250)"
    assert recall[-1] == "by 1 of 2 runs (seed 0)"
    assert row(table, "≥ 1.5 searches")[-1] == "yes, by every run"
    assert row(table, "accuracy")[1].startswith("**0.120, 2.40× echo@5")
    assert row(table, "the whole command")[2:] == [
        "46.0 min",
        "**42.5 min**",
        "by 1 of 2 runs (seed 0)",
    ]
    assert "seed 1: b (20 q)" in table.splitlines()[0]


@pytest.mark.parametrize(
    ("answer", "echo_answer", "base_answer", "met"),
    [
        (0.10, 0.05, 0.0, True),  # at both bars
        (0.099, 0.0, 0.0, False),  # under the floor, however far above echo
        (0.30, 0.16, 0.0, False),  # under 2× echo's
        (0.30, 0.05, 0.16, False),  # under 2× the base's
    ],
)
def test_the_answer_goal_needs_the_floor_and_twice_each_baseline(
    tmp_path, answer, echo_answer, base_answer, met
):
    run = RunResult.read(
        write_run(tmp_path / "r", answer=answer, echo_answer=echo_answer, base_answer=base_answer)
    )
    cell = row(goals_table([run]), "accuracy")[1]
    assert cell.startswith("**") is met


def test_the_recall_goal_is_met_at_the_bar_itself_and_not_below_twice_echo(tmp_path):
    at_bar = RunResult.read(write_run(tmp_path / "a", recall=0.50, echo_recall=0.25))
    echo_strong = RunResult.read(write_run(tmp_path / "b", recall=0.60, echo_recall=0.31))
    cells = row(goals_table([at_bar, echo_strong]), "golden recall")
    assert cells[1].startswith("**") and not cells[2].startswith("**")


def test_the_mean_averages_each_figure_and_takes_the_ratio_of_the_means(tmp_path):
    runs = [
        RunResult.read(write_run(tmp_path / "a", recall=0.6, echo_recall=0.2)),
        RunResult.read(write_run(tmp_path / "b", recall=0.4, echo_recall=0.3, split_seed=1)),
    ]
    mean = mean_run(runs)
    assert (mean.scores.recall, mean.scores.echo_recall, mean.questions) == (0.5, 0.25, 40)
    assert row(goals_table(runs), "golden recall")[3].startswith("**0.500 at 4.70 chunks, 2.00×")


def test_a_last_row_says_what_each_runs_minutes_bought_where_its_summary_says(tmp_path):
    slow = {"precision": "float32", "cold_start_epochs": 0.42, "steps": 6}
    fast = {"precision": "bfloat16", "cold_start_epochs": 0.88, "steps": 14}
    runs = [
        RunResult.read(write_run(tmp_path / "a", bought=slow)),
        RunResult.read(write_run(tmp_path / "b", bought=fast, split_seed=1)),
        RunResult.read(write_run(tmp_path / "old", split_seed=2)),  # written before they were
    ]
    cells = row(goals_table(runs), "what the minutes bought")
    assert cells[1:4] == [
        "float32, 0.42 epoch of cold start, 6 RL steps",
        "bfloat16, 0.88 epoch of cold start, 14 RL steps",
        "10 RL steps",
    ]
    assert cells[4] == "10 RL steps"  # the mean: only what every run says
    assert row(goals_table(runs[:2]), "what the minutes bought")[3] == (
        "0.65 epoch of cold start, 10 RL steps"
    )
    seven = RunResult.read(write_run(tmp_path / "c", bought={**slow, "steps": 7}, split_seed=3))
    mean = row(goals_table([runs[0], runs[0], seven]), "what the minutes bought")[4]
    assert mean == "float32, 0.42 epoch of cold start, 6.3 RL steps"  # not 6.33333


def test_a_folder_that_is_not_a_finished_run_is_named_with_what_it_lacks(tmp_path, capsys):
    unfinished = tmp_path / "unfinished"
    unfinished.mkdir()
    (unfinished / "summary.json").write_text("{}")
    with pytest.raises(RunFolderError, match="no eval.json"):
        RunResult.read(unfinished)

    old_format = write_run(tmp_path / "old")
    (old_format / "eval.json").write_text(json.dumps({"policies": {}, "echo_k": 5}))
    assert main([str(old_format)]) == 2
    assert "eval.json lacks the trained agent" in capsys.readouterr().err


def test_the_comparison_needs_the_agent_echo_at_its_chunks_and_the_base_side_by_side(tmp_path):
    report = json.loads((write_run(tmp_path / "r", echo_recall=0.0) / "eval.json").read_text())
    comparison = BaselineComparison.of(report)
    assert comparison.k == 5 and comparison.recall_times is None  # echo found nothing
    assert comparison.answer_times == pytest.approx(0.12 / 0.05)
    # `sleuth eval --json` names policies by their specs and has no echo_k: no comparison.
    assert BaselineComparison.of({"policies": {"echo": {}, "runs/7/final": {}}}) is None
    assert BaselineComparison.of(None) is None
