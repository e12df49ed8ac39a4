"""bench/rl_curve.py: RL's learning curve from the fold runs' own logs."""

import json

import pytest

from bench.rl_curve import curve, main


def write_metrics(folder, records):
    folder.mkdir()
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return folder


def step(n, reward, right, tied, held_back=0, **val):
    record = {
        "held_back": held_back,
        "step": n,
        "reward/total": reward,
        "accuracy": right,
        "golden_recall": 0.9,
        "groups_dropped": tied,
        "entropy": 0.1,
    }
    return record | {f"val/{k}": v for k, v in val.items()}


def test_each_validation_is_the_mean_of_the_folds_that_reached_it_with_the_steps_since():
    fold0 = [
        {"step": 0, "val/accuracy": 0.30, "val/golden_recall": 0.80},
        step(1, 0.5, 0.50, 3),
        step(2, 0.7, 0.75, 1, accuracy=0.40, golden_recall=0.90),
        step(3, 0.9, 1.00, 4, 5, accuracy=0.50, golden_recall=0.90),  # its last, by the clock
    ]
    fold1 = [
        {"step": 0, "val/accuracy": 0.10, "val/golden_recall": 0.60},
        step(1, 0.1, 0.25, 2, 1),
        step(2, 0.3, 0.25, 3, 3, accuracy=0.20, golden_recall=0.70),
    ]
    rows = curve([fold0, fold1])

    assert [r["step"] for r in rows] == [0, 2, 3]
    assert rows[0]["val accuracy"] == pytest.approx(0.20) and rows[0]["training steps"] == 0
    assert rows[0]["reward"] is None  # the cold start's level: no RL step before it
    assert rows[1]["runs"] == 2 and rows[1]["val recall"] == pytest.approx(0.80)
    assert rows[1]["training steps"] == 4
    assert rows[1]["samples right"] == pytest.approx((0.5 + 0.75 + 0.25 + 0.25) / 4)
    assert rows[1]["groups tied"] == pytest.approx(9 / 4)
    assert rows[2]["runs"] == 1 and rows[2]["val accuracy"] == pytest.approx(0.50)
    assert rows[2]["training steps"] == 1
    # Questions RL stopped asking: each run's count at its latest step, the mean of the runs.
    assert rows[0]["held back"] is None
    assert rows[1]["held back"] == pytest.approx((0 + 3) / 2)
    assert rows[2]["held back"] == pytest.approx((5 + 3) / 2)


def test_runs_that_never_validated_are_refused_with_the_flag_that_would(tmp_path, capsys):
    run = write_metrics(tmp_path / "run", [step(1, 0.5, 0.5, 2)])
    with pytest.raises(SystemExit, match="--eval-every"):
        main([str(run)])


def test_an_optional_reward_component_gets_a_column_only_where_a_run_weighted_it(tmp_path, capsys):
    plain = [{"step": 0, "val/accuracy": 0.3, "val/golden_recall": 0.8}, step(1, 0.5, 0.5, 2)]
    plain[-1] |= {"val/accuracy": 0.4, "val/golden_recall": 0.8}
    main([str(write_metrics(tmp_path / "plain", plain))])
    assert "novelty" not in capsys.readouterr().out

    weighted = [dict(r) for r in plain]
    weighted[1]["reward/novelty"] = 0.75
    main([str(write_metrics(tmp_path / "weighted", weighted))])
    header, _, cold, first = capsys.readouterr().out.splitlines()
    column = header.split(" | ").index("novelty")
    assert cold.split(" | ")[column] == "—"  # the cold start's row: no RL step before it
    assert first.split(" | ")[column] == "0.750"
