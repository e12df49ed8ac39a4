"""A run's final evaluation on a sample of its held-out questions (`final_eval_sample`): the
clock goes to training, the report states the sample's intervals and what was left out."""

import json
import shutil
from types import SimpleNamespace

from engine.evaluation.folds import sample_questions
from engine.evaluation.pooled import COLD_START_DIR, paired_intervals
from engine.rewards.judge import OfflineJudge
from engine.search.index import SearchIndex
from engine.training.config import TrainConfig
from engine.training.evaluate import COLD_START, EVAL_TRAJECTORIES, evaluate_run
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


def test_a_run_that_kept_its_cold_start_reports_rls_share_of_the_run(tmp_path):
    base = tiny_model_folder(tmp_path)
    for kept in ("final", COLD_START_DIR):
        shutil.copytree(base, tmp_path / "run" / kept)
    config = TrainConfig(model=base, limits=LIMITS)
    index = SearchIndex.build(toy_chunks())

    report = evaluate_run(tmp_path / "run", config, index, questions()[:2], show_progress=False)

    # The same weights before and after: the cold start alone scores as the agent, RL's share 0.
    before, after = report["policies"][COLD_START], report["policies"]["trained"]
    untimed = [key for key in after if not key.endswith("_s")]
    assert [before[key] for key in untimed] == [after[key] for key in untimed]
    share = report["rl_share"]
    assert share["recall"]["n"] == 2 and share["recall"]["mean"] == share["accuracy"]["mean"] == 0
    no_rl = TrainConfig(model=base, limits=LIMITS, steps=0)  # the cold start is the agent
    report = evaluate_run(tmp_path / "run", no_rl, index, questions()[:2], show_progress=False)
    assert COLD_START not in report["policies"] and "rl_share" not in report
    shutil.rmtree(tmp_path / "run" / COLD_START_DIR)
    report = evaluate_run(tmp_path / "run", config, index, questions()[:2], show_progress=False)
    assert COLD_START not in report["policies"] and "rl_share" not in report


def test_rls_share_is_the_trained_agent_less_its_cold_start_question_by_question():
    asked = questions()[:2]
    shown = SimpleNamespace(retrieved_chunk_ids=[asked[0].golden_chunk_ids[0]], answer="seven")
    missed = SimpleNamespace(retrieved_chunk_ids=[], answer="no idea")
    trajectories = {"trained": [[shown], [missed]], COLD_START: [[missed], [missed]]}

    share = paired_intervals(asked, trajectories, OfflineJudge(), "trained", COLD_START)

    # The first question found and answered after RL, neither before; the second neither.
    assert share["recall"]["mean"] == share["accuracy"]["mean"] == 0.5
    assert share["recall"]["n"] == share["accuracy"]["n"] == 2
