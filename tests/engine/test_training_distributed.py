"""Data-parallel training on torch.distributed (gloo on this machine's CPUs): two ranks of one
thread each against one process, on the toy corpus and the tiny model of tests/helpers/toy.py."""

import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest
import torch

from engine.agent.models import load_trainable
from engine.search.index import SearchIndex
from engine.training.distributed import SINGLE, RankFailed, RankJob, Ranks, train_on_ranks
from engine.training.rl import train
from tests.helpers.toy import chunks, config, questions, tiny_model_folder


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    """The tiny model's folder and the toy index's, as a run's child ranks load them."""
    root = tmp_path_factory.mktemp("toy")
    index_dir = SearchIndex.build(chunks()).save(root / "index")
    return tiny_model_folder(root), str(index_dir)


def run(toy, out_dir: Path, world: int, cfg, *, resume=False, on_started=None):
    """`train` on `world` ranks of one thread each (rank 0 in this process)."""
    model_dir, index_dir = toy
    cfg.model = model_dir
    qs = questions()
    job = RankJob(cfg.to_dict(), index_dir, qs, qs[:2], str(out_dir), resume, threads=1)

    def rank0(ranks: Ranks) -> dict:
        model, tokenizer = load_trainable(model_dir)
        return train(
            cfg,
            model=model,
            tokenizer=tokenizer,
            index=SearchIndex.load(index_dir),
            train_questions=qs,
            val_questions=qs[:2],
            out_dir=out_dir,
            resume=resume,
            progress=False,
            log=lambda message: None,
            ranks=ranks,
        )

    threads = torch.get_num_threads()
    try:
        return train_on_ranks(world, job, rank0, on_started=on_started)
    finally:
        torch.set_num_threads(threads)


def weights(folder: Path) -> dict[str, torch.Tensor]:
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(folder).state_dict()


def metrics(out_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (out_dir / "metrics.jsonl").read_text().splitlines()]


def test_each_rank_takes_a_contiguous_share_and_the_shares_make_the_whole():
    for count in range(0, 9):
        for world in (1, 2, 3):
            shares = [Ranks(rank, world).share(count) for rank in range(world)]
            assert [i for share in shares for i in share] == list(range(count))
            assert max(map(len, shares)) - min(map(len, shares)) <= 1
    assert SINGLE.gather([1, 2]) == [1, 2] and SINGLE.total(3.0, 4.0) == [3.0, 4.0]


def test_two_ranks_with_half_the_batch_each_train_the_weights_one_process_trains(toy, tmp_path):
    # Cold start and RL both: every rank samples half of each step's groups with the random
    # streams one process gives those rows, so the two runs see the same trajectories.
    cfg = dict(steps=2, questions_per_step=4, sft_epochs=1, max_batch_tokens=400, save_every=2)
    one = run(toy, tmp_path / "one", 1, config(**cfg))
    two = run(toy, tmp_path / "two", 2, config(**cfg))

    assert one["steps"] == two["steps"] == 2
    assert one["cold_start_batches"] == two["cold_start_batches"] > 0
    a, b = metrics(tmp_path / "one"), metrics(tmp_path / "two")
    for key in ("reward/total", "golden_recall", "trained_tokens", "groups_dropped"):
        assert [m[key] for m in a] == pytest.approx([m[key] for m in b], rel=1e-4)
    wa, wb = weights(Path(one["final"])), weights(Path(two["final"]))
    assert wa.keys() == wb.keys()
    moved = 0
    for name in wa:
        assert torch.allclose(wa[name], wb[name], atol=1e-5), name
        moved += not torch.equal(wa[name], load_trainable(toy[0])[0].state_dict()[name])
    assert moved, "the run trained nothing: the comparison would hold for any code"
    assert not (tmp_path / "two" / "rank-job.pkl").exists()


def test_a_resumed_two_rank_run_continues_as_the_run_that_never_stopped(toy, tmp_path):
    cfg = dict(steps=3, questions_per_step=4, save_every=1, hold_back_after=100)
    straight = run(toy, tmp_path / "straight", 2, config(**cfg))
    run(toy, tmp_path / "resumed", 2, config(**{**cfg, "steps": 2}))
    resumed = run(toy, tmp_path / "resumed", 2, config(**cfg), resume=True)

    assert [m["step"] for m in metrics(tmp_path / "resumed")] == [1, 2, 3]
    a, b = metrics(tmp_path / "straight")[-1], metrics(tmp_path / "resumed")[-1]
    assert a["reward/total"] == pytest.approx(b["reward/total"])
    wa, wb = weights(Path(straight["final"])), weights(Path(resumed["final"]))
    assert all(torch.allclose(wa[name], wb[name], atol=1e-6) for name in wa)


def test_a_rank_killed_mid_run_fails_the_run_with_its_reason_and_leaves_whole_checkpoints(
    toy, tmp_path
):
    out = tmp_path / "killed"
    pids: list[int] = []

    def kill_once_training() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if pids and (out / "metrics.jsonl").exists():
                os.kill(pids[0], signal.SIGKILL)
                return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_once_training)
    killer.start()
    with pytest.raises(RankFailed, match="rank 1 was killed by signal 9"):
        run(
            toy,
            out,
            2,
            config(steps=500, questions_per_step=4, save_every=1, hold_back_after=10**6),
            on_started=pids.extend,
        )
    killer.join()

    saved = sorted(p.name for p in (out / "checkpoints").iterdir())
    assert saved and all(not name.endswith(".partial") for name in saved)
    with pytest.raises(ProcessLookupError):  # no rank outlives the run
        os.kill(pids[0], 0)
    # This process left the group: the next run (one rank here) starts cleanly.
    assert run(toy, tmp_path / "after", 1, config(steps=1))["steps"] == 1


def test_a_child_rank_gets_torchruns_variables_and_none_of_the_workers_credentials(monkeypatch):
    from engine.training import distributed

    for name in ("DATABASE_URL", "AWS_SECRET_ACCESS_KEY", "SECRET_KEY", "SLEUTH_JUDGE_API_KEY"):
        monkeypatch.setenv(name, "secret")
    monkeypatch.setenv("HF_HOME", "/models")

    env = distributed._child_env(rank=1, world=2, port=29500, threads=1)

    assert "secret" not in env.values()
    assert env["HF_HOME"] == "/models" and env["OMP_NUM_THREADS"] == "1"
    assert (env["RANK"], env["WORLD_SIZE"], env["MASTER_PORT"]) == ("1", "2", "29500")
