"""The RL trainer on a toy corpus with a tiny randomly initialized model (seconds, not minutes)."""

import time
from pathlib import Path

import pytest
import torch
from transformers import (
    AutoModelForCausalLM,
)

from engine.agent.hf_engine import HFRolloutEngine
from engine.agent.settings import ADAPTER_DIR, read_agent_settings
from engine.agent.trajectory import Limits, SamplingParams
from engine.documents.chunking import Chunk
from engine.evaluation.pooled import COLD_START_DIR
from engine.rewards.judge import JudgeConfig
from engine.rewards.reward import RewardConfig
from engine.search.index import SearchIndex
from engine.training import cold_start as cold_start_module
from engine.training.checkpoint import rng_states
from engine.training.config import LossConfig, TrainConfig
from engine.training.logprobs import full_logits_logprobs, token_logprobs
from engine.training.rl import LoopState, train
from tests.helpers.toy import (
    FACTS,
    bfloat16_rollout_recomputed,
    chunks,
    config,
    greedy_recall,
    questions,
    run_training,
    tiny_model,
    tiny_tokenizer,
)


def train_tiny(settings: TrainConfig, out_dir, **kwargs) -> dict:
    """`rl.train` on the tiny model, index and questions, quietly (`kwargs` passed on)."""
    from engine.training import rl

    tokenizer = tiny_tokenizer()
    return rl.train(
        settings,
        model=tiny_model(tokenizer),
        tokenizer=tokenizer,
        index=SearchIndex.build(chunks()),
        train_questions=questions(),
        val_questions=questions()[:1],
        out_dir=out_dir,
        progress=False,
        log=lambda line: None,
        **kwargs,
    )


def test_the_cold_start_takes_at_most_its_share_of_a_timed_run(tmp_path, monkeypatch):

    deadlines = []

    def recorded_sft(*args, deadline=None, **kwargs):
        deadlines.append(deadline - time.monotonic())
        return [0.0]

    monkeypatch.setattr(cold_start_module, "sft", recorded_sft)
    for share in (0.5, 0.8):
        train_tiny(
            config(steps=1, sft_epochs=1, save_every=0, max_minutes=40, sft_share=share),
            tmp_path / f"run-{share}",
        )
    # 40 minutes leave 30 to train (the evaluation gets the rest): 15 or 24 to the cold start.
    assert [round(d / 60) for d in deadlines] == [15, 24]
    with pytest.raises(ValueError, match="sft_share"):
        config(sft_share=0)


def test_a_slow_cold_start_ends_rl_early_enough_for_the_final_evaluation(tmp_path, monkeypatch):
    from engine.training import rl

    clock = {"skipped": 0.0}  # seconds the fake cold start "took"
    real_monotonic = time.monotonic
    monkeypatch.setattr(rl.time, "monotonic", lambda: real_monotonic() + clock["skipped"])

    def two_slow_batches(model, trajectories, *, on_step, **kwargs):
        for _ in range(2):  # 700 s a micro-batch: a question of the evaluation takes as long
            clock["skipped"] += 700
            on_step({"epoch": 0, "loss": 1.0, "lr": 1e-4, "trajectories": 3})
        return [1.0]

    monkeypatch.setattr(cold_start_module, "sft", two_slow_batches)
    summary = train_tiny(
        config(steps=3, sft_epochs=1, save_every=0, max_minutes=45),
        tmp_path / "run",
        final_eval_questions=100,
    )
    # At 8 s a question the 100 would leave RL until 30.7 minutes, past the cold start's
    # 23.3; at the measured speed they need half the 45, so RL ends after its first step.
    assert summary["stopped_early"] == "time budget spent"
    assert summary["steps"] == 1


def test_the_summary_says_how_much_of_the_cold_start_a_timed_run_got(tmp_path, monkeypatch):

    taught = []

    def two_batches_of_three(model, trajectories, *, on_step, **kwargs):
        taught.append(len(trajectories))
        for _ in range(2):  # then the deadline passed
            on_step({"epoch": 0, "loss": 1.0, "lr": 1e-4, "trajectories": 3})
        return [1.0]

    monkeypatch.setattr(cold_start_module, "sft", two_batches_of_three)
    summary = train_tiny(config(steps=1, sft_epochs=3, save_every=0), tmp_path / "run")
    assert summary["cold_start_batches"] == 2
    assert summary["precision"] == "float32"
    assert summary["cold_start_epochs"] == pytest.approx(6 / taught[0])


def test_rl_samples_only_the_questions_the_cold_start_left_to_it(tmp_path, monkeypatch):
    # Questions the cold start imitated tie in every group: with a share kept back, RL's
    # questions are those the policy has not been shown the answer to.
    from engine.training import rl

    imitated, sampled = set(), []

    def record_sft(model, trajectories, *, on_step, **kwargs):
        imitated.update(t.question for t in trajectories)
        on_step({"epoch": 0, "loss": 1.0, "lr": 1e-4, "trajectories": len(trajectories)})
        return [1.0]

    take = rl.QuestionSampler.take

    def record_take(self, n):
        picked = take(self, n)
        sampled.extend(picked)
        return picked

    monkeypatch.setattr(cold_start_module, "sft", record_sft)
    monkeypatch.setattr(rl.QuestionSampler, "take", record_take)
    train_tiny(config(steps=2, sft_epochs=1, save_every=0, rl_fresh_share=0.5), tmp_path / "run")

    by_id = {q.id: q.question for q in questions()}
    assert len(imitated) == 2 and len(set(sampled)) == 2
    assert not {by_id[qid] for qid in sampled} & imitated
    assert rl.kept_for_rl({q: None for q in by_id}, 0.5, seed=0) == set(sampled)


def test_rls_own_synthetic_questions_are_sampled_and_never_imitated(tmp_path, monkeypatch):
    # RL on the questions the cold start showed learns their answers; on its own questions,
    # synthesized beside the cold start's and never shown, only by reading the results.
    from engine.training import rl

    prose = (
        "The descaling program removes limescale from the boiler and the pipes. "
        "A grinder crushes the beans just before brewing. "
        "The steam wand heats milk for cappuccino and latte drinks."
    )
    index = SearchIndex.build([*chunks(), Chunk("acme-3", "acme-manual", 3, "acme", prose)])

    def run(rl_synthetic_questions: int, folder: str) -> tuple[set[str], list[str], dict]:
        imitated, sampled = set(), []

        def record_sft(model, trajectories, *, on_step, **kwargs):
            imitated.update(t.question for t in trajectories)
            on_step({"epoch": 0, "loss": 1.0, "lr": 1e-4, "trajectories": len(trajectories)})
            return [1.0]

        def record_take(self, n):
            picked = take(self, n)
            sampled.extend(picked)
            return picked

        take = rl.QuestionSampler.take
        with monkeypatch.context() as patched:
            patched.setattr(cold_start_module, "sft", record_sft)
            patched.setattr(rl.QuestionSampler, "take", record_take)
            tokenizer = tiny_tokenizer()
            settings = config(
                steps=2,
                sft_epochs=1,
                save_every=0,
                synthetic_questions=2,
                completion_questions=True,
                rl_synthetic_questions=rl_synthetic_questions,
            )
            by_id = {}
            teacher_data = cold_start_module.teacher_data

            def record_teacher_data(*args):
                made = teacher_data(*args)
                by_id.update(made[2])
                return made

            patched.setattr(rl, "teacher_data", record_teacher_data)
            rl.train(
                settings,
                model=tiny_model(tokenizer),
                tokenizer=tokenizer,
                index=index,
                train_questions=questions(),
                val_questions=questions()[:1],
                out_dir=tmp_path / folder,
                progress=False,
                log=lambda line: None,
            )
        return imitated, sampled, by_id

    imitated, sampled, by_id = run(4, "with")
    own = {qid for qid, q in by_id.items() if q.meta.get("rl_only")}
    assert own and own <= set(sampled)  # RL asks them
    assert not {by_id[qid].question for qid in own} & imitated  # the cold start never does
    without, _, _ = run(0, "without")
    assert imitated == without  # and imitates what it would without them


def test_the_cold_start_still_teaches_the_search_when_the_teacher_reaches_no_evidence(tmp_path):
    tokenizer = tiny_tokenizer()
    unreachable = questions()
    for q in unreachable:
        q.golden_chunk_ids = [f"{q.entity}-2"]  # the filler page, which no search ranks first
    logged = []

    train(
        config(steps=1, sft_epochs=1, scope_drills=0, customer_scope_drills=0, save_every=0),
        model=tiny_model(tokenizer),
        tokenizer=tokenizer,
        index=SearchIndex.build(chunks()),
        train_questions=unreachable,
        val_questions=unreachable[:1],
        out_dir=tmp_path / "run",
        progress=False,
        log=logged.append,
    )

    assert "scripted teacher: correct trajectories for 0/4 training questions" in logged
    assert any(line.startswith("search drills: 4, 0 of them on made-up names") for line in logged)
    assert any(line.startswith("cold start SFT loss per epoch") for line in logged)


def test_the_customers_own_questions_get_more_drills_on_made_up_names(tmp_path):
    tokenizer = tiny_tokenizer()
    logged = []
    own = questions()

    train(
        # The filings pack's scoped first search, where the drills' names go (on the default
        # path they go to the second search: test_training_teacher.py).
        config(
            steps=1,
            sft_epochs=1,
            scope_drills=0,
            customer_scope_drills=2,
            scoped_first_search=True,
            save_every=0,
        ),
        model=tiny_model(tokenizer),
        tokenizer=tokenizer,
        index=SearchIndex.build(chunks()),
        train_questions=own,
        val_questions=own[:1],
        out_dir=tmp_path / "run",
        progress=False,
        log=logged.append,
    )

    # Whole teacher trajectories for the questions it reaches, the real first search for
    # the others (none here: it reaches all four), and two made-up copies of each.
    assert "scripted teacher: correct trajectories for 4/4 training questions" in logged
    assert any(line.startswith("search drills: 8, 8 of them on made-up names") for line in logged)


def test_head_only_log_probs_match_the_full_softmax_where_the_loss_looks():
    tokenizer = tiny_tokenizer()
    model = tiny_model(tokenizer)
    ids = torch.randint(3, len(tokenizer), (2, 12))
    attention = torch.ones_like(ids)
    target = torch.zeros(2, 12)
    target[:, 5:9] = 1

    fast, entropy = token_logprobs(model, ids, attention, target, with_entropy=True)
    full = full_logits_logprobs(model, ids, attention)

    assert torch.allclose(fast[target.bool()], full[target.bool()], atol=1e-5)
    assert (fast[~target.bool()] == 0).all()
    assert (entropy[target.bool()] > 0).all()


@pytest.fixture(scope="module")
def cold_started_run(tmp_path_factory):
    """A whole run from a random model: scripted-teacher SFT, then three RL steps."""
    return run_training(
        tmp_path_factory.mktemp("cold"),
        # No scope drills: the toy's word-level vocabulary cannot spell made-up names.
        config(steps=3, sft_epochs=150, sft_lr=3e-3, lr=1e-4, save_every=0, scope_drills=0),
    )


def test_a_tiny_model_learns_the_toy_search_task(cold_started_run):
    tokenizer = tiny_tokenizer()
    index = SearchIndex.build(chunks())
    before = greedy_recall(tiny_model(tokenizer), tokenizer, index)

    result, metrics = cold_started_run
    trained = AutoModelForCausalLM.from_pretrained(result["final"])
    after = greedy_recall(trained, tokenizer, index)

    assert result["teacher_questions"] == len(FACTS)
    # The summary says how much cold start the run got: all 150 epochs here.
    assert result["precision"] == "float32"
    assert result["cold_start_epochs"] == pytest.approx(150)
    assert result["cold_start_batches"] >= 150
    assert before == 0.0
    assert after >= 0.75
    assert [m["step"] for m in metrics] == [1, 2, 3]


def test_a_run_keeps_its_cold_start_beside_the_agent_it_hands_over(cold_started_run):
    result, _ = cold_started_run
    kept = Path(result["final"]).parent / COLD_START_DIR
    tokenizer = tiny_tokenizer()
    before_rl = AutoModelForCausalLM.from_pretrained(kept)

    # The cold start's agent, with the settings it ran under: what RL's share is read against.
    assert read_agent_settings(kept).limits == read_agent_settings(result["final"]).limits
    assert greedy_recall(before_rl, tokenizer, SearchIndex.build(chunks())) >= 0.75


def test_a_lora_run_keeps_its_cold_start_and_trains_its_adapter_on_after_it(tmp_path):
    result, _ = run_training(
        tmp_path, config(steps=1, sft_epochs=1, lora=True, lora_rank=4, scope_drills=0)
    )
    run = Path(result["final"]).parent

    # The cold start was saved merged from a copy: the run's own model stayed an adapter,
    # which RL trained and the final agent saved as one.
    for agent in (run / COLD_START_DIR, run / "final"):
        assert (agent / ADAPTER_DIR / "adapter_config.json").is_file()
        merged = AutoModelForCausalLM.from_pretrained(agent)
        assert not any("lora" in name for name, _ in merged.named_parameters())


def test_a_run_with_no_cold_start_keeps_none_not_even_one_left_in_its_folder(tmp_path):
    earlier = tmp_path / "run" / COLD_START_DIR
    earlier.mkdir(parents=True)  # an earlier run's, in the folder a new run is given
    result, _ = run_training(tmp_path, config(steps=1))
    assert not (Path(result["final"]).parent / COLD_START_DIR).exists()


def _comparable(record: dict) -> dict:
    timing = ("_s", "tokens_per_s")
    return {k: v for k, v in record.items() if not k.endswith(timing)}


def test_resume_continues_exactly_where_the_run_stopped(tmp_path):
    _, straight = run_training(tmp_path, config(steps=3), name="straight")
    run_training(tmp_path, config(steps=2), name="resumed")
    result, resumed = run_training(tmp_path, config(steps=3), resume=True, name="resumed")

    assert [m["step"] for m in resumed] == [1, 2, 3]  # none lost, none duplicated
    assert _comparable(resumed[2]) == pytest.approx(_comparable(straight[2]))
    a = torch.load(
        tmp_path / "straight/checkpoints/step-000003/trainer_state.pt", weights_only=False
    )
    b = torch.load(
        tmp_path / "resumed/checkpoints/step-000003/trainer_state.pt", weights_only=False
    )
    assert a["sampler"] == b["sampler"]


def test_a_resumed_run_trains_at_its_config_learning_rate_not_the_one_saved_with_it():
    model = torch.nn.Linear(2, 2)
    before = TrainConfig(lr=1e-5, warmup_steps=4)
    loop = LoopState.begin(model, before, ["q"], None)
    for _ in range(2):  # two steps of the warm-up: the rate is 3/4 of the config's
        model(torch.ones(2)).sum().backward()
        loop.optimizer.step()
        loop.scheduler.step()
    saved = {**loop.saved(before), "step": 2, "rng": rng_states()}

    same = LoopState.begin(model, before, ["q"], saved)
    assert same.optimizer.param_groups[0]["lr"] == pytest.approx(0.75e-5)  # as it stopped

    changed = LoopState.begin(model, TrainConfig(lr=1e-4, warmup_steps=4), ["q"], saved)
    assert changed.optimizer.param_groups[0]["lr"] == pytest.approx(0.75e-4)
    changed.scheduler.step()
    assert changed.scheduler.get_last_lr()[0] == pytest.approx(1e-4)  # warm-up done
    assert changed.optimizer.state_dict()["state"]  # Adam's moments kept


def test_a_question_never_solved_in_its_visits_is_held_back_and_a_solved_one_never_is():
    model = torch.nn.Linear(2, 2)
    loop = LoopState.begin(model, TrainConfig(hold_back_after=2), ["hard", "once"], None)
    for solved_once in (False, True, False, False):
        loop.count_group("hard", False, hold_back_after=2)
        loop.count_group("once", solved_once, hold_back_after=2)

    assert loop.sampler.held_back == {"hard"}
    assert loop.sampler.take(2) == ["once"]
    restored = LoopState.begin(
        model,
        TrainConfig(),
        ["hard", "once"],
        {
            **loop.saved(TrainConfig()),
            "step": 4,
            "rng": rng_states(),
        },
    )
    assert (restored.visits, restored.solved, restored.step) == (
        {"hard": 4, "once": 4},
        {"once"},
        4,
    )
    assert restored.sampler.held_back == {"hard"}


def test_with_hold_back_off_a_question_never_solved_is_still_asked():
    loop = LoopState.begin(torch.nn.Linear(2, 2), TrainConfig(), ["hard"], None)
    for _ in range(5):
        loop.count_group("hard", False, hold_back_after=0)

    assert loop.sampler.held_back == set() and loop.sampler.take(1) == ["hard"]


def test_a_question_mastered_visits_in_a_row_is_retired_and_a_missed_visit_resets_it():
    model = torch.nn.Linear(2, 2)
    loop = LoopState.begin(model, TrainConfig(retire_after=2), ["easy", "mixed"], None)
    for mastered_now in (True, False, True):
        loop.count_group("easy", True, hold_back_after=2, mastered=True, retire_after=2)
        loop.count_group("mixed", True, hold_back_after=2, mastered=mastered_now, retire_after=2)

    assert loop.sampler.held_back == {"easy"}
    assert loop.mastered == {"easy": 3, "mixed": 1}
    assert loop.sampler.take(2) == ["mixed"]
    restored = LoopState.begin(
        model,
        TrainConfig(),
        ["easy", "mixed"],
        {**loop.saved(TrainConfig()), "step": 3, "rng": rng_states()},
    )
    assert restored.mastered == {"easy": 3, "mixed": 1}
    assert restored.sampler.held_back == {"easy"}


def test_with_retirement_off_a_mastered_question_is_still_asked():
    loop = LoopState.begin(torch.nn.Linear(2, 2), TrainConfig(), ["easy"], None)
    for _ in range(5):
        loop.count_group("easy", True, hold_back_after=2, mastered=True, retire_after=0)

    assert loop.sampler.held_back == set() and loop.sampler.take(1) == ["easy"]


def test_a_run_whose_judge_always_fails_still_finishes_and_says_so(tmp_path, cold_started_run):
    broken = RewardConfig(
        judge=JudgeConfig(base_url="http://127.0.0.1:9/v1", model="judge", timeout=0.2, retries=0)
    )
    # Starts from the cold-started model, whose rollouts answer, so the judge is asked.
    model = AutoModelForCausalLM.from_pretrained(cold_started_run[0]["final"])
    result, metrics = run_training(
        tmp_path, config(steps=1, reward=broken, eval_every=1), model=model
    )

    assert result["steps"] == 1
    cold_start, step = metrics  # step 0: the validation before any RL step
    assert step["judge_errors"] >= 1
    assert step["reward/correctness"] == 0.0
    assert "val/answer_score" in step and "val/answer_score" in cold_start


def test_with_unchanged_weights_the_trainer_recomputes_the_rollout_log_probs_at_its_temperature():
    from engine.training.batching import collate_packed
    from engine.training.logprobs import batch_logprobs
    from engine.training.losses import policy_loss

    tokenizer = tiny_tokenizer()
    model = tiny_model(tokenizer).eval()
    engine = HFRolloutEngine(
        model, tokenizer, SearchIndex.build(chunks()), limits=Limits(max_new_tokens=24)
    )
    trajectories = engine.rollout(
        [q.question for q in questions()], SamplingParams(temperature=0.7, seed=3)
    )
    batch = collate_packed([[t] for t in trajectories], pad_id=0)
    with torch.no_grad():
        logp, _ = batch_logprobs(model, batch, temperature=0.7)
    mask = batch.loss_mask.bool()
    assert mask.sum() > 20
    assert torch.allclose(logp[mask], batch.rollout_logp[mask], atol=1e-4)
    _, metrics = policy_loss(
        logp, batch.rollout_logp, torch.ones_like(logp), batch.loss_mask, LossConfig()
    )
    assert metrics["mismatch_abs"] < 1e-4 and metrics["masked_share"] == 0.0
    # At temperature 1 the same tokens look like drift: what the trainer measured before.
    with torch.no_grad():
        at_one, _ = batch_logprobs(model, batch)
    assert (at_one[mask] - batch.rollout_logp[mask]).abs().mean() > 1e-2


def test_in_bfloat16_the_trainer_recomputes_the_rollout_log_probs_up_to_rounding():
    batch, _, exact, metrics = bfloat16_rollout_recomputed()
    mask = batch.loss_mask.bool()
    # Rounding, not drift: no token leaves DPPO's trust region.
    assert 0 < metrics["mismatch_abs"] < 0.02 and metrics["masked_share"] == 0.0
    assert (exact[mask] - batch.rollout_logp[mask]).abs().max() < 0.1


def test_a_bfloat16_run_keeps_float32_master_weights_and_saves_them(tmp_path):
    result, metrics = run_training(tmp_path, config(steps=1, precision="bfloat16"))

    assert result["steps"] == 1 and metrics[0]["step"] == 1
    final = AutoModelForCausalLM.from_pretrained(result["final"])
    assert {p.dtype for p in final.parameters()} == {torch.float32}


def test_an_unknown_precision_is_refused():
    with pytest.raises(ValueError, match="unknown precision 'fp16'"):
        config(precision="fp16")
