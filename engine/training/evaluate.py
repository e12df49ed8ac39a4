"""A finished run's evaluation (eval.json): the trained agent against the baselines.

Same held-out questions, same search tool, same judge, in the `sleuth eval --json` format:
- "trained": the run's final model as an agent;
- "base": the untrained model as an agent;
- "echo@K": one search with the question itself, K results, K being the trained agent's
  mean number of distinct retrieved chunks rounded up (echo never sees fewer chunks than
  the agent) — so more searches alone cannot explain a gain;
- "echo": the same with the agent's usual number of results per search;
- "cold-start": the same run's agent before RL (`cold-start/`), where the run kept one; the
  report's "rl_share" is then the trained agent less it, question by question, with its paired
  95 % interval: what RL added in this very run.
With `final_eval_sample`, a fixed random sample of the held-out questions is evaluated (its 95 %
intervals in the report say how far the sample may be from the whole), so a large validation
set does not take the run's clock from training; the rest is evaluated after the run
(`sleuth eval --folds`, `sleuth compare`).
Every policy's trajectories go to eval_trajectories.jsonl in the run folder (the trained
agent's first, written before the baselines run), so that every answer can be read beside its
score and judged again when the judge is corrected (`bench/rejudge.py`).
"""

import math
from collections.abc import Sequence
from functools import cache, partial
from pathlib import Path

from engine.agent.models import best_device, load_model
from engine.agent.trajectory import SamplingParams
from engine.evaluation.baselines import COLD_START
from engine.evaluation.folds import sample_questions
from engine.evaluation.harness import evaluate, write_trajectories
from engine.evaluation.policies import build_policy
from engine.evaluation.pooled import COLD_START_DIR, paired_intervals, trajectory_intervals
from engine.rewards.judge import build_judge
from engine.training.config import TrainConfig

EVAL_TRAJECTORIES = "eval_trajectories.jsonl"  # every policy's, beside eval.json


def evaluate_run(
    out_dir: Path,
    config: TrainConfig,
    index,
    val_questions: Sequence,
    *,
    samples: int = 1,
    show_progress: bool = True,
    judge=None,
    device: str | None = None,
) -> dict:
    """Evaluate out_dir/final against base and echo on `val_questions`; returns the report.
    `judge`: a ready judge (the platform builds it with its key); default: from config.reward.
    `device`: where the models run, the worker's GPU if it has one by default (bfloat16
    there, `load_model`'s rule), so a GPU worker does not evaluate on its CPU."""
    held_out = len(val_questions)
    val_questions = sample_questions(val_questions, config.final_eval_sample, config.seed)
    load = cache(partial(load_model, device=device or best_device()))
    judge = judge if judge is not None else build_judge(config.reward)
    tokenizer = load(config.model)[1]
    sampling = SamplingParams(temperature=0.0 if samples == 1 else 0.7, seed=config.seed)

    def run(policies: dict) -> dict:
        return evaluate(
            policies,
            val_questions,
            judge=judge,
            count_tokens=lambda text: len(tokenizer.encode(text, add_special_tokens=False)),
            samples=samples,
            sampling=sampling,
            show_progress=show_progress,
        )

    def policy(spec: str):
        return build_policy(
            spec, tool=index, limits=config.limits, load_model=load, base_model=config.model
        )

    trajectories_path = Path(out_dir) / EVAL_TRAJECTORIES
    trained = run({"trained": policy(str(Path(out_dir) / "final"))})
    # What the agent wrote on each held-out question, to read beside the scores.
    write_trajectories(trajectories_path, val_questions, trained["trajectories"])
    report = trained["policies"]
    k = max(1, math.ceil(round(report["trained"]["retrieved_chunks"], 2)))
    baselines = {"base": policy("base"), f"echo@{k}": policy(f"echo@{k}")}
    if k != config.limits.results_per_search:
        baselines["echo"] = policy("echo")
    cold_start = Path(out_dir) / COLD_START_DIR
    if cold_start.is_dir() and config.evaluates_cold_start:  # with no RL step, it is the agent
        baselines[COLD_START] = policy(str(cold_start))
    compared = run(baselines)
    report |= compared["policies"]
    everyone = trained["trajectories"] | compared["trajectories"]
    write_trajectories(trajectories_path, val_questions, everyone)
    result = {
        "policies": report,
        "echo_k": k,
        "questions": len(val_questions),
        "held_out": held_out,
        "intervals": trajectory_intervals(val_questions, everyone, judge),
    }
    if COLD_START in everyone:
        result["rl_share"] = paired_intervals(val_questions, everyone, judge, "trained", COLD_START)
    return result
