"""A monthly budget of calls to the operator's judges per account (issue 68.6): every verdict
asked of an operator's judge on the operator's key counts, once, atomically across workers
and threads, in Redis; a run whose worst case cannot fit is refused when it is started, a run
that spends the budget mid-training fails with the reason, a preview is refused with a
message; a customer's own judge with their own key is not counted; the customer sees what
is used and what is left.

Judges are real local HTTP servers (tests/helpers/judges.py's LoggingServer).
"""

import threading
from pathlib import Path

import pytest

from engine.rewards.reward import RewardConfig, RewardInput, compute_rewards
from engine.training.config import TrainConfig
from runs import judge_budget, pipeline
from runs.models import Run
from runs.services import RunRejected, judge_build, run_create
from tests.helpers.judges_platform import QUESTION, set_judge, start_run

pytestmark = pytest.mark.django_db


def house_reward() -> RewardConfig:
    return RewardConfig.from_dict({"judge": {"name": "house"}})


def ask(judge, n: int, start: int = 0) -> None:
    """n verdicts on n different answers (no verdict cache hit among them)."""
    for i in range(start, start + n):
        judge.judge(QUESTION, "$1577.00", f"${1000 + i} million")


def test_each_verdict_of_an_operator_judge_counts_and_the_spent_budget_refuses_the_next(
    alice, project, operator_judge, knob
):
    knob("SLEUTH_JUDGE_CALLS_PER_MONTH", 3)
    ask(judge_build(reward=house_reward(), project=project), 2)
    # Another worker (a judge built again, as after a restart) reads the same count.
    again = judge_build(reward=house_reward(), project=project)
    ask(again, 1, start=2)
    with pytest.raises(judge_budget.JudgeBudgetSpent, match="3 calls"):
        ask(again, 1, start=3)

    assert len(operator_judge.requests) == 3  # the refused call never reached the endpoint
    usage = judge_budget.judge_usage(alice)
    assert (usage.used, usage.limit, usage.left) == (3, 3, 0)


def test_the_count_is_atomic_across_threads_and_judges(alice, project, operator_judge, knob):
    knob("SLEUTH_JUDGE_CALLS_PER_MONTH", 10)
    judges = [judge_build(reward=house_reward(), project=project) for _ in range(3)]
    refused = []

    def work(judge, start):
        for i in range(start, start + 8):
            try:
                judge.judge(QUESTION, "$1577.00", f"${i} million")
            except judge_budget.JudgeBudgetSpent:
                refused.append(i)

    threads = [threading.Thread(target=work, args=(judges[t % 3], 100 * t)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(operator_judge.requests) == 10 and len(refused) == 22
    assert judge_budget.judge_usage(alice).used == 10


def test_a_customers_own_judge_is_not_counted(
    alice, client_alice, project, servers, operator_judge, local_urls, knob
):
    knob("SLEUTH_JUDGE_CALLS_PER_MONTH", 1)
    own = servers()
    set_judge(client_alice, project, own.base_url, api_key="their-key")
    project.refresh_from_db()
    judge = judge_build(
        reward=RewardConfig.from_dict(
            {"judge": {"base_url": own.base_url, "model": "their-model"}}
        ),
        project=project,
    )
    ask(judge, 4)

    assert len(own.requests) == 4
    assert judge_budget.judge_usage(alice).used == 0


def test_a_run_whose_worst_case_cannot_fit_is_refused_when_started(
    alice, client_alice, project, operator_judge, knob
):
    # quick-cpu: 4 steps × 2 questions × 2 rollouts, and questions generated (up to 100)
    # judged by 4 policies twice at the end, and its cold start twice, then both again for
    # RL's share: 16 + 800 + 400 calls at most.
    config = TrainConfig.from_dict(
        {**pipeline_preset("quick-cpu"), "reward": {"judge": {"name": "house"}}}
    )
    assert judge_budget.run_worst_case_calls(config, questions=100) == 1216

    knob("SLEUTH_JUDGE_CALLS_PER_MONTH", 1215)
    with pytest.raises(RunRejected, match=r"up to 1,216 calls.*1,215 left"):
        run_create(
            project=project,
            user=alice,
            name="Too big",
            question_set=None,
            options={"reward": {"judge": {"name": "house"}}},
        )
    response = client_alice.post(
        f"/projects/{project.pk}/runs/new/",
        {"name": "Judged", "preset": "quick-cpu", "judge": "house"},
    )
    assert response.status_code == 400
    assert "up to 1,216 calls" in response.content.decode()
    assert not Run.objects.exists()

    # The built-in judge and the customer's own are not counted: the same run starts.
    start_run(client_alice, project, judge="").delete()
    knob("SLEUTH_JUDGE_CALLS_PER_MONTH", 1216)  # the worst case just fits
    assert start_run(client_alice, project, judge="house").config["reward"]["judge"]["name"]


def pipeline_preset(name: str) -> dict:
    from runs.presets import preset_config

    return preset_config(name).to_dict()


def test_a_preview_past_the_budget_is_refused_with_a_message(
    alice, client_alice, project, preview, operator_judge, knob
):
    knob("SLEUTH_JUDGE_CALLS_PER_MONTH", 1)
    assert "<strong>1.00</strong>" in preview(client_alice, project, judge="house")
    html = preview(client_alice, project, judge="house")

    assert "judge calls" in html and "1 of 1" in html
    assert len(operator_judge.requests) == 1


def test_a_preview_that_spends_the_budget_on_the_worker_says_so(
    alice, client_alice, project, operator_judge, knob
):
    """Two answers and two calls left when the preview was queued, one spent by another
    worker meanwhile: the worker's count refuses the second call and the preview says why."""
    import re

    from runs.services import reward_preview_run

    knob("SLEUTH_PREVIEW_QUEUE", "previews-scored-by-the-test")
    knob("SLEUTH_JUDGE_CALLS_PER_MONTH", 2)
    posted = client_alice.post(
        f"/projects/{project.pk}/runs/reward-preview/",
        {
            "preset": "quick-cpu",
            "judge": "house",
            "question_text": QUESTION,
            "ground_truth": "$1577.00",
            "sample_answers": "$1,577 million\n$1,578 million",
            "searched": "on",
            "found_golden": "on",
        },
    ).content.decode()
    poll = re.search(r'hx-get="(/projects/\d+/runs/reward-preview/([\w-]+)/)"', posted)
    assert poll, posted
    ask(judge_build(reward=house_reward(), project=project), 1)  # another worker's call
    reward_preview_run(preview_id=poll.group(2))
    html = client_alice.get(poll.group(1)).content.decode()

    assert "2 calls to the platform&#x27;s judges" in html
    assert len(operator_judge.requests) == 2


def test_the_customer_sees_the_judge_budget(alice, client_alice, project, operator_judge, knob):
    knob("SLEUTH_JUDGE_CALLS_PER_MONTH", 5000)
    ask(judge_build(reward=house_reward(), project=project), 3)
    for url in (f"/projects/{project.pk}/runs/new/", f"/projects/{project.pk}/judge/"):
        html = client_alice.get(url).content.decode()
        assert "3 of 5,000" in html, url


@pytest.mark.django_db(transaction=True)
def test_a_run_that_spends_the_budget_mid_training_fails_with_the_reason(
    training_run, operator_judge, knob, monkeypatch
):
    """The trainer is replaced by one that scores rollouts through the reward with the judge
    the platform built for the run, as the RL loop does each step."""
    import engine.agent.models
    import engine.training.rl
    from engine.documents.questions import Question

    knob("SLEUTH_JUDGE_CALLS_PER_MONTH", 5)
    run = training_run
    config = {**run.config, "reward": {**run.config["reward"], "judge": {"name": "house"}}}
    Run.objects.filter(pk=run.pk).update(config=config)
    question = Question("q1", QUESTION, "$1577.00", "3M", [])
    monkeypatch.setattr(pipeline, "restore_checkpoint", lambda *a, **k: 0)
    monkeypatch.setattr(pipeline, "_load_questions", lambda *a: ([question], [question]))
    monkeypatch.setattr(pipeline, "load_index", lambda prefix: None)
    monkeypatch.setattr(pipeline, "index_folder", lambda prefix: Path("/nonexistent"))
    monkeypatch.setattr(engine.agent.models, "load_trainable", lambda model: (None, None))
    steps = []

    def train(config, *, judge, **kwargs):
        for step in range(1, 10):
            inputs = [
                RewardInput(QUESTION, "$1577.00", f"${step}.{i} million", ["g"], ["g"], 1, "answer")
                for i in range(2)
            ]
            compute_rewards(inputs, config.reward, judge)
            steps.append(step)
        raise AssertionError("the budget should have stopped the run")

    monkeypatch.setattr(engine.training.rl, "train", train)

    finished = pipeline.run_train(run_id=run.pk)

    assert finished.status == Run.Status.FAILED
    assert "5 calls to the platform's judges" in finished.status_reason
    assert "your own judge endpoint" in finished.status_reason
    assert steps == [1, 2] and len(operator_judge.requests) == 5
