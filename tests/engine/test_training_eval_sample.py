"""A run's final evaluation on a sample of its held-out questions (`final_eval_sample`): the
clock goes to training, the report states the sample's intervals and what was left out."""

import json
import shutil

from engine.evaluation.folds import sample_questions
from engine.search.index import SearchIndex
from engine.training.config import TrainConfig
from engine.training.evaluate import EVAL_TRAJECTORIES, evaluate_run
from tests.helpers.toy import LIMITS, questions, tiny_model_folder
from tests.helpers.toy import chunks as toy_chunks


def test_a_sample_is_fixed_by_its_seed_keeps_the_order_and_zero_takes_all():
    pool = list(range(40))
    sample = sample_questions(pool, 10, seed=3)
    assert sample == sample_questions(pool, 10, seed=3) == sorted(sample)
    assert len(set(sample)) == 10 and sample != sample_questions(pool, 10, seed=4)
    assert sample_questions(pool, 0) == pool == sample_questions(pool, 99)


def test_the_time_kept_for_the_final_evaluation_is_the_samples():
    whole = TrainConfig(max_minutes=45)
    sampled = TrainConfig(max_minutes=45, final_eval_sample=40)
    # 265 held-out questions would take half the clock; a sample of 40, the usual ten minutes
    assert whole.training_seconds(265) == 45 * 60 / 2
    assert sampled.training_seconds(265) == sampled.training_seconds(40) == 45 * 60 - 600


def test_the_final_evaluation_runs_on_the_sample_and_states_its_intervals(tmp_path):
    base = tiny_model_folder(tmp_path)
    shutil.copytree(base, tmp_path / "run" / "final")
    config = TrainConfig(model=base, limits=LIMITS, final_eval_sample=1)
    index = SearchIndex.build(toy_chunks())

    report = evaluate_run(tmp_path / "run", config, index, questions()[:2], show_progress=False)

    assert (report["questions"], report["held_out"]) == (1, 2)
    trained = report["intervals"]["trained"]
    assert trained["recall"]["n"] == 1 and trained["accuracy"]["n"] == 1
    assert trained["recall"]["low"] <= trained["recall"]["mean"] <= trained["recall"]["high"]
    recorded = (tmp_path / "run" / EVAL_TRAJECTORIES).read_text().splitlines()
    assert len({json.loads(line)["question_id"] for line in recorded}) == 1
