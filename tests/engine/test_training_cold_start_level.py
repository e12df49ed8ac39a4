"""Step 0: a validating run measures its cold start before any RL step, the level its RL curve
is read against (the run page draws it as a line)."""

from tests.helpers.toy import config, run_training


def test_a_validating_run_logs_its_cold_starts_level_as_step_0(tmp_path):
    _, metrics = run_training(tmp_path, config(steps=2, eval_every=1, sft_epochs=1))

    assert [m["step"] for m in metrics] == [0, 1, 2]
    assert set(metrics[0]) == {"step"} | {k for k in metrics[1] if k.startswith("val/")}
    assert "val/accuracy" in metrics[0]


def test_a_run_that_never_validates_logs_no_step_0(tmp_path):
    _, metrics = run_training(tmp_path, config(steps=2, eval_every=0))

    assert [m["step"] for m in metrics] == [1, 2]


def test_a_run_resumed_before_its_first_step_measures_its_level_once(tmp_path):
    run_training(tmp_path, config(steps=0, eval_every=1), name="r")
    _, metrics = run_training(tmp_path, config(steps=1, eval_every=1), resume=True, name="r")

    assert [m["step"] for m in metrics] == [0, 1]
