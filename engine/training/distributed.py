"""Data-parallel training on torch.distributed: one run in several processes ("ranks"), one
device each, every rank holding the whole model.

How a run shares its work (`rl.train` and `sft` take a `Ranks`):
- RL: every rank walks the same question order; each samples its contiguous share of a
  step's questions, the trajectories are gathered to every rank, rank 0 scores them (the
  judge and its key live in one process) and sends the rewards back, and every rank then
  computes the same advantages and curriculum. Each rank runs the loss on its own share of
  the rows, normalized by the whole step's token count, and the gradients are summed: the
  step is the one a single process would take on the whole batch.
- Cold start: a step takes one micro-batch per rank (as DDP's batch grows with its ranks).
- Rank 0 alone writes metrics, samples, checkpoints and the final agent, and runs the
  platform's hooks; every rank resumes from rank 0's checkpoint.

Why the gradients are all-reduced once a step, by hand, rather than by DDP's wrapper: the
ranks run different numbers of micro-batches (packing follows lengths; a rank whose groups
all tied runs none), and DDP all-reduces inside every backward, so ranks would wait on
collectives their peers never call.

`train_on_ranks` starts a run's ranks (the platform's training task and `sleuth train`
with `ranks` above 1): the calling process is rank 0, so its hooks (the platform's database,
its judge and key) stay where they are, and ranks 1… are child processes (`engine.training.rank`),
given torchrun's environment contract (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT,
LOCAL_RANK; `join_from_env`). NCCL on GPUs, one device a rank; gloo on CPUs.
"""

from __future__ import annotations

import os
import pickle
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist

# How long a rank waits in a collective for a peer that went silent (a rank that exits
# breaks gloo's connections at once; this is the backstop for one that hangs).
COLLECTIVE_TIMEOUT = timedelta(minutes=15)
JOB_FILE = "rank-job.pkl"


class RankFailed(RuntimeError):
    """A rank of a data-parallel run stopped: the run cannot go on without it. `summary`
    says which and how ("training rank 1 was killed by signal 9"), the message adds the
    last lines of its log (for the operator's eyes: paths, tracebacks)."""

    def __init__(self, summary: str, log_tail: str = "") -> None:
        super().__init__(summary + (f": {log_tail}" if log_tail else ""))
        self.summary = summary


@dataclass(frozen=True)
class Ranks:
    """This process's place in a run: rank `rank` of `world`. `Ranks()` is a single process,
    where every collective below returns its input."""

    rank: int = 0
    world: int = 1

    @property
    def main(self) -> bool:
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world > 1

    def share(self, count: int) -> range:
        """This rank's contiguous part of `count` items (the first ranks take one more when
        it does not divide): concatenating the ranks' parts in order gives the whole."""
        size, extra = divmod(count, self.world)
        start = self.rank * size + min(self.rank, extra)
        return range(start, start + size + (self.rank < extra))

    def gather(self, items: Sequence) -> list:
        """Every rank's `items`, concatenated in rank order, on every rank."""
        if not self.distributed:
            return list(items)
        parts: list = [None] * self.world
        dist.all_gather_object(parts, list(items))
        return [item for part in parts for item in part]

    def broadcast(self, value):
        """Rank 0's `value` on every rank."""
        if not self.distributed:
            return value
        box = [value]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    def _reduce(self, values: Sequence[float], op: str) -> list[float]:
        if not self.distributed:
            return list(values)
        tensor = torch.tensor(values, dtype=torch.float64, device=self._device())
        dist.all_reduce(tensor, op=getattr(dist.ReduceOp, op))
        return tensor.tolist()

    def total(self, *values: float) -> list[float]:
        """The sums over the ranks of each of `values`."""
        return self._reduce(values, "SUM")

    def highest(self, *values: float) -> list[float]:
        """The largest over the ranks of each of `values`."""
        return self._reduce(values, "MAX")

    def any(self, flag: bool) -> bool:
        """True on every rank when it is true on one: decisions that end a loop (out of
        time, a stop asked) must be the same everywhere, or a rank waits forever."""
        return bool(self.highest(float(flag))[0])

    def sum_gradients(self, parameters: Sequence[torch.nn.Parameter]) -> None:
        """Sum each parameter's gradient over the ranks, in one flat all-reduce (a rank that
        ran no micro-batch adds zeros)."""
        if not self.distributed:
            return
        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in parameters]
        flat = torch.cat([g.reshape(-1) for g in grads])
        dist.all_reduce(flat, op=dist.ReduceOp.SUM)
        offset = 0
        for p, g in zip(parameters, grads, strict=True):
            p.grad = flat[offset : offset + g.numel()].view_as(p).to(p.dtype)
            offset += g.numel()

    def same_parameters(self, parameters: Sequence[torch.nn.Parameter]) -> None:
        """Rank 0's values of `parameters` on every rank (a LoRA adapter's random start)."""
        if not self.distributed:
            return
        with torch.no_grad():
            for p in parameters:
                dist.broadcast(p.data, src=0)

    def barrier(self) -> None:
        if self.distributed:
            dist.barrier()

    def _device(self) -> torch.device:
        """Where collectives' tensors live: NCCL reduces on the rank's GPU, gloo on the CPU."""
        if dist.get_backend() == "nccl":
            return torch.device("cuda", torch.cuda.current_device())
        return torch.device("cpu")


SINGLE = Ranks()  # a process that trains alone


def backend() -> str:
    return "nccl" if torch.cuda.is_available() else "gloo"


def join_from_env() -> Ranks:
    """This process's rank under torchrun's contract (a single process when WORLD_SIZE is
    unset or 1); joins the process group."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return SINGLE
    if torch.cuda.is_available():  # torchrun shows every GPU; train_on_ranks a rank's own
        several = torch.cuda.device_count() > 1
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")) if several else 0)
    dist.init_process_group(backend(), timeout=COLLECTIVE_TIMEOUT)
    return Ranks(dist.get_rank(), dist.get_world_size())


def leave() -> None:
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class RankJob:
    """What a child rank needs to train its part of a run: everything else it loads itself
    (the model named by the config, the index from its folder)."""

    config: dict
    index_dir: str
    train_questions: list
    val_questions: list
    out_dir: str
    resume: bool
    threads: int | None  # torch threads a rank (CPU ranks share the machine's cores)
    final_eval_questions: int | None = None  # as rank 0's: the same clock on every rank


def threads_per_rank(world: int) -> int | None:
    """CPU ranks split the machine's cores; a GPU rank keeps torch's default."""
    if torch.cuda.is_available():
        return None
    return max(1, (os.cpu_count() or 1) // max(world, 1))


# What a child rank keeps of its parent's environment: what finds and runs the model (paths,
# locale, the model cache, torch's, CUDA's and NCCL's own settings). Nothing else: the
# platform's worker holds database, S3 and judge credentials a rank has no use for.
CHILD_ENV_NAMES = frozenset({"PATH", "HOME", "LANG", "TMPDIR", "SLEUTH_MODEL_CACHE"})
CHILD_ENV_PREFIXES = ("LC_", "HF_", "TRANSFORMERS_", "TORCH", "OMP_", "MKL_", "CUDA_", "NCCL_")


def _child_env(rank: int, world: int, port: int, threads: int | None) -> dict[str, str]:
    """A child rank's environment: the allowed part of the parent's, torchrun's variables,
    and its own device."""
    env = {
        name: value
        for name, value in os.environ.items()
        if name in CHILD_ENV_NAMES or name.startswith(CHILD_ENV_PREFIXES)
    }
    env.update(
        RANK=str(rank),
        LOCAL_RANK=str(rank),
        WORLD_SIZE=str(world),
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        PYTHONPATH=os.pathsep.join(p for p in sys.path if p),
    )
    if threads:
        env["OMP_NUM_THREADS"] = str(threads)
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if torch.cuda.is_available():  # one GPU a rank, as rank 0 takes the first
        devices = visible.split(",") if visible else [str(i) for i in range(world)]
        env["CUDA_VISIBLE_DEVICES"] = devices[rank]
    return env


def train_on_ranks(
    world: int,
    job: RankJob,
    rank0: Callable[[Ranks], dict],
    *,
    on_started: Callable[[list[int]], None] | None = None,
) -> dict:
    """Run `rank0(ranks)` in this process as rank 0 of `world`, and ranks 1… as child
    processes training `job`; returns rank 0's result. A rank that dies fails the whole run
    with `RankFailed` (which rank, how it ended), and rank 0 stopping for any reason stops
    the children: no rank outlives the run. `on_started` receives the children's pids."""
    if world <= 1:
        return rank0(SINGLE)
    out_dir = Path(job.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    job_file = out_dir / JOB_FILE
    job_file.write_bytes(pickle.dumps(job))
    port = _free_port()
    children = []
    for rank in range(1, world):
        log_file = (out_dir / f"rank-{rank}.log").open("wb")
        children.append(
            subprocess.Popen(
                [sys.executable, "-m", "engine.training.rank", str(job_file)],
                env=_child_env(rank, world, port, job.threads),
                stdout=log_file,
                stderr=subprocess.STDOUT,
            )
        )
    if on_started:
        on_started([child.pid for child in children])
    if job.threads:
        torch.set_num_threads(job.threads)
    try:
        if torch.cuda.is_available():
            torch.cuda.set_device(0)
        dist.init_process_group(
            backend(),
            init_method=f"tcp://127.0.0.1:{port}",
            rank=0,
            world_size=world,
            timeout=COLLECTIVE_TIMEOUT,
        )
        try:
            result = rank0(Ranks(0, world))
        except Exception as error:
            if failed := _failed_child(children, out_dir, wait=5.0):
                raise failed from error
            raise
        for rank, child in enumerate(children, start=1):
            if child.wait(timeout=COLLECTIVE_TIMEOUT.total_seconds()) != 0:
                raise _ended(rank, child, out_dir)
        return result
    finally:
        leave()
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()
        job_file.unlink(missing_ok=True)


def _failed_child(children, out_dir: Path, wait: float) -> RankFailed | None:
    """How the first child rank that ended with an error ended, waiting up to `wait` seconds
    for one to end (rank 0's error may be the echo of a peer's death)."""
    deadline = time.monotonic() + wait
    while True:
        for rank, child in enumerate(children, start=1):
            if child.poll() not in (None, 0):
                return _ended(rank, child, out_dir)
        if time.monotonic() > deadline:
            return None
        time.sleep(0.1)


def _ended(rank: int, child: subprocess.Popen, out_dir: Path) -> RankFailed:
    code = child.returncode
    how = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
    log = out_dir / f"rank-{rank}.log"
    tail = log.read_text(errors="replace").strip().splitlines()[-3:] if log.exists() else []
    return RankFailed(f"training rank {rank} {how}", " | ".join(tail))


def exit_with_parent() -> None:
    """A child rank never outlives the process that started it (rank 0 killed with
    SIGKILL runs no clean-up)."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()
