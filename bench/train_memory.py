"""A preset's peak memory against the memory it declares (`Needs.memory_gib`).

The fleet gives a CPU run to a worker with at least the memory its preset names
(docs/fleet.md): a preset that names less than its run holds sends it to a worker that
kills it. This runs the preset's own training, shortened to a few minutes (its cold start,
two RL steps and a small evaluation: the cold start's batches and RL's policy update are
where the memory peaks, and both keep their full size), as a child process, and prints the
child's peak resident memory beside the declared figure, and their ratio (above 1: the
preset names too little).

    .venv/bin/python bench/train_memory.py --index var/pyref-index \
        --questions datasets/python-reference/questions.jsonl [--preset cpu-45min --minutes 6]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from engine.training.presets import PRESETS  # noqa: E402

GIB = 1024**3


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--index", required=True)
    p.add_argument("--questions", required=True)
    p.add_argument("--preset", default="cpu-45min", choices=sorted(PRESETS))
    p.add_argument("--minutes", type=float, default=6.0, help="the shortened run's budget")
    args = p.parse_args()

    declared = PRESETS[args.preset]["needs"].memory_gib
    with tempfile.TemporaryDirectory() as out:
        command = [
            sys.executable,
            "-m",
            "engine.cli",
            "train",
            "--preset",
            args.preset,
            "--index",
            args.index,
            "--questions",
            args.questions,
            "--folds",
            "2",
            "--fold",
            "0",
            "--steps",
            "2",
            "--val-limit",
            "4",
            "--max-minutes",
            str(args.minutes),
            "--out",
            str(Path(out) / "run"),
        ]
        env = {**os.environ, "PYTHONPATH": f"{REPO}:{REPO / 'platform'}"}
        started = time.monotonic()
        done = subprocess.run(command, env=env, capture_output=True, text=True)
        minutes = (time.monotonic() - started) / 60
    if done.returncode:
        print(done.stderr[-3000:], file=sys.stderr)
        return done.returncode
    # Linux reports a child's peak resident set in KiB.
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024 / GIB
    print(f"{args.preset}, shortened to {args.minutes:g} minutes (ran {minutes:.1f})")
    print("| | GiB |\n|---|---|")
    print(f"| peak resident memory of the run | {peak:.2f} |")
    print(f"| the preset's declared need (`Needs.memory_gib`) | {declared:g} |")
    ratio = f"{peak / declared:.2f}" if declared else "— (declares none)"
    print(f"| measured / declared | {ratio} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
