"""Routing by worker kind (issue 69): a run waits for a worker that can hold it, its page says
what for, and a worker never works on a run it cannot hold.

- A run records what its preset needs (`Run.needs`: a CPU, or N GPUs, and memory;
  engine.devices.Needs). Its training and evaluation are queued where those needs say
  (core.queues: "train" for a CPU run, "train-gpuN" for N GPUs).
- A worker started on the train queue is a training worker: at start it adds the GPU queues
  its devices hold (`training_queues`; a 2-GPU worker takes 1- and 2-GPU runs) and keeps the
  train queue itself, for CPU runs, unless its operator keeps its GPUs for GPU runs
  (SLEUTH_WORKER_TAKES_CPU_RUNS=false). The sweep thread announces those queues in Redis, so
  the platform knows which kinds of run some connected worker can take.
- A worker that claims a run it cannot hold (its operator gave it a queue by hand, or its
  GPUs have less memory than the run needs) hands it back at once with the reason
  (`worker_refusal`), without counting an attempt; the sweep queues it again.
- While no connected worker can take a run, the run waits, saying what for
  (`run_waiting_for`); a run that needs GPUs waits for as long as it takes (the sweep never
  fails it for want of a worker: fleets start GPU workers on demand, watching the queue).
"""

from __future__ import annotations

from django.conf import settings

from core.queues import needs_queue, task_queue
from engine.devices import Devices, Needs, worker_devices

from .models import Run

TRAIN_TASK = "config.tasks.run_train"
# The stages routed by the run's needs, and their tasks.
ROUTED = {
    Run.Status.TRAINING: "config.tasks.run_train",
    Run.Status.EVALUATING: "config.tasks.run_evaluate",
}


def run_needs(run: Run) -> Needs:
    return Needs.from_dict(run.needs)


def training_queues(devices: Devices) -> list[str]:
    """The training queues a worker with `devices` consumes: the train queue (CPU runs) on a
    CPU worker, and on a GPU worker when SLEUTH_WORKER_TAKES_CPU_RUNS allows; and one queue
    per GPU count up to its own."""
    base = task_queue(TRAIN_TASK)
    queues = [base] if not devices.gpus or settings.SLEUTH_WORKER_TAKES_CPU_RUNS else []
    return queues + [needs_queue(base, Needs("gpu", n)) for n in range(1, devices.gpus + 1)]


def worker_queues_adjust(consumed: list[str], devices: Devices) -> tuple[list[str], list[str]]:
    """The queues a worker that consumes `consumed` adds and drops for its `devices`: none
    unless it consumes the train queue (then it is a training worker; an ingest-only or
    inference worker is left as its operator started it)."""
    base = task_queue(TRAIN_TASK)
    if base not in consumed:
        return [], []
    wanted = training_queues(devices)
    return [q for q in wanted if q not in consumed], ([] if base in wanted else [base])


def worker_refusal(run: Run, devices: Devices | None = None) -> str | None:
    """Why this worker cannot hold `run`'s current stage, or None (it can, or the stage is not
    routed by needs: preparing and publishing run anywhere)."""
    if run.status not in ROUTED:
        return None
    return (devices or worker_devices()).refusal(run_needs(run))


def worker_taken_up(owner: str, status: str) -> str:
    """The event of a worker taking a routed stage up, with what it holds: "Training on
    host:pid:claim (2 GPUs of 80 GiB)."."""
    return f"{status.capitalize()} on {owner} ({worker_devices().describe()})."


def stage_queue(run: Run, task: str) -> str:
    """The queue the run's `task` is sent to: by the run's needs for training and evaluation."""
    return task_queue(task, run_needs(run))


def run_waiting_for(run: Run) -> str:
    """What the run waits for, when no connected worker can take its stage: "Waiting for a
    worker with 2 GPUs (none connected)."; "" while it is held by a worker, or some connected
    worker can take it (it only waits its turn), or its stage is not routed by needs."""
    from .sweep import queue_served

    if run.status not in ROUTED or run.lease_owner or run.cancel_requested:
        return ""
    if queue_served(stage_queue(run, ROUTED[run.status])):
        return ""
    return f"Waiting for {run_needs(run).worker()} (none connected)."
