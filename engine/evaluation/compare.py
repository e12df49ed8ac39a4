"""`sleuth compare`: the trained agent pooled over its fold runs beside the cheap baselines, in
one Markdown table with 95 % intervals (`evaluation.pooled` says what each row is)."""

from __future__ import annotations

import dataclasses
import json
import sys
from functools import cache

from engine.agent.trajectory import Limits
from engine.evaluation.baselines import COLD_START
from engine.evaluation.cli import (
    add_judge_options,
    judge_from_options,
    load_index_and_questions,
)

# The trained agent's runs before RL: the trained row less this one is RL's share.
COLD_START_ROW = "cold start alone (before RL)"


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "compare",
        help="the trained agent (pooled over fold runs) beside echo, scoped echo, the "
        "teacher's searches and the base model, with 95 %% intervals",
        description="One table, one ruler: golden recall and strict accuracy with bootstrap "
        "95 % intervals over questions, chunks per question and n, for the trained agent "
        "(its runs' recorded held-out trajectories, judged again; and re-evaluated with every "
        "decoding rule off where a run kept its checkpoint; its cold start alone, before RL, "
        "where the runs kept it; echo's hits read by the trained weights, where the runs kept "
        "them), echo at the agent's chunk count "
        "and echo's best up to it, the question scoped to its entity, the scripted teacher's "
        "searches, and optionally the base model; then every row's paired difference against "
        "echo, and the models' against each other. A gain holds when its interval excludes 0.",
    )
    p.add_argument("--index", required=True, metavar="DIR", help="a folder from `sleuth index`")
    p.add_argument("--questions", required=True, metavar="PATH", help="question file")
    p.add_argument(
        "--runs",
        nargs="*",
        default=[],
        metavar="RUN",
        help="`sleuth train` folders of one setting (its folds and seeds), pooled as one agent; "
        "the table then covers the questions they held out",
    )
    p.add_argument(
        "--chunks",
        default=None,
        metavar="N[,N]",
        help="chunk counts for the no-model rows (default: the agent's, or 5,10 without runs)",
    )
    p.add_argument("--base", action="store_true", help="also the untrained base model (slow)")
    p.add_argument(
        "--no-cold-start",
        action="store_true",
        help="leave out the runs' cold starts alone (by default re-evaluated where the runs "
        "kept them: the trained row less theirs is RL's share)",
    )
    p.add_argument(
        "--complete",
        action="store_true",
        help="evaluate, from each run's checkpoint, its held-out questions that its final "
        "evaluation left out (final_eval_sample)",
    )
    p.add_argument(
        "--model",
        default=None,
        help="base model (default: the runs' model, else SmolLM2-135M-Instruct)",
    )
    add_judge_options(p)
    p.add_argument("--seed", type=int, default=0, help="the bootstrap's seed")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--device", default="auto", help="cuda, cpu, or auto: the GPU if any")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_compare)


def _fail(message: str) -> int:
    print(f"sleuth compare: {message}", file=sys.stderr)
    return 2


def _chunk_counts(text: str | None) -> list[int] | None:
    if text is None:
        return None
    counts = [int(part) for part in text.split(",") if part.strip()]
    if not counts or min(counts) < 1:
        raise ValueError("--chunks takes whole numbers of at least 1, e.g. 5,10")
    return list(dict.fromkeys(counts))


def run_limits(config: dict) -> Limits:
    """A run's limits from its config.json, keeping only the fields this version knows (a
    decoding rule since moved or renamed is left at its default, off)."""
    known = {f.name for f in dataclasses.fields(Limits)}
    return Limits(**{k: v for k, v in (config.get("limits") or {}).items() if k in known})


def settings_as_read(config: dict) -> dict:
    """A run's settings as the trainer reads them (an older run's mapped to today's names, so
    its teacher's scope is the one it trained with); as stored when they no longer load."""
    from engine.training.config import TrainConfig

    try:
        return TrainConfig.from_dict(config).to_dict()
    except (TypeError, ValueError):
        return config


def cmd_compare(args) -> int:
    from engine.agent.greedy_rules import masks_tokens, unruled
    from engine.agent.models import ModelNotFoundError
    from engine.documents.evidence import map_evidence
    from engine.evaluation import pooled

    try:
        chunk_counts = _chunk_counts(args.chunks)
    except ValueError as exc:
        return _fail(str(exc))
    try:
        index, questions = load_index_and_questions(args)
    except ValueError as exc:
        return _fail(str(exc))
    try:
        runs = [pooled.read_run(folder) for folder in args.runs]
        pooled.check_one_setting(runs)
    except pooled.RunFolderError as exc:
        return _fail(str(exc))
    in_file = len(questions)
    config = runs[0].config if runs else {}
    limits = run_limits(config) if runs else None
    unrecorded = 0
    if runs:
        try:
            unrecorded = _complete(runs, questions, index=index, limits=limits, args=args)
        except ModelNotFoundError as exc:
            return _fail(str(exc))
        except ValueError as exc:  # a run's split that these questions cannot make
            return _fail(f"{exc} (are these the questions the runs were trained with?)")
        recorded = {qid for run in runs for qid in run.attempts["trained"]}
        questions = [q for q in questions if q.id in recorded]
        if not questions:
            return _fail(f"no question of {args.questions} is among the runs' held-out ones")
    map_evidence(questions, index.chunks)
    judge = judge_from_options(args)

    models: list[pooled.PolicyScores] = []
    try:
        if runs:
            trained = pooled.score_attempts(
                "trained" + (" (rules as run)" if masks_tokens(limits) else " (no rules)"),
                [run.attempts["trained"] for run in runs],
                questions,
                judge,
            )
            models.append(trained)
            if masks_tokens(limits):
                off = unruled(limits)
                models.append(
                    rules_off_scores(
                        runs, questions, index=index, limits=off, judge=judge, args=args
                    )
                )
            if not args.no_cold_start and any(
                run.cold_start or COLD_START in run.attempts for run in runs
            ):
                models.append(
                    cold_start_scores(
                        runs, questions, index=index, limits=limits, judge=judge, args=args
                    )
                )
            if any(run.checkpoint for run in runs):
                k = pooled.agent_chunk_count(models[0])
                models.append(
                    echo_reader_scores(
                        runs, questions, k, index=index, limits=limits, judge=judge, args=args
                    )
                )
        if args.base:
            models.append(
                _base(runs, questions, index=index, limits=limits, judge=judge, args=args)
            )
    except ModelNotFoundError as exc:
        return _fail(str(exc))

    if chunk_counts is None:
        chunk_counts = [pooled.agent_chunk_count(models[0])] if runs else [5, 10]
    elif runs:
        chunk_counts = list(dict.fromkeys([pooled.agent_chunk_count(models[0]), *chunk_counts]))
    teacher = pooled.no_model_teacher(index, questions, settings_as_read(config))
    sections = []
    for i, k in enumerate(chunk_counts):
        rows = [*(models if i == 0 else []), *pooled.baselines(index, questions, k, teacher)]
        if i == 0:  # accuracy's floor: a yes/no prior, no search
            rows.append(pooled.constant_answer(questions, judge))
        sections.append(pooled.section_report(k, rows, seed=args.seed))
    report = {
        "questions": len(questions),
        "questions_in_file": in_file,
        "runs": [str(run.folder) for run in runs],
        "seeds": sorted({run.config.get("seed") for run in runs}, key=str),
        "unrecorded": unrecorded,
        "scoped_by_label": pooled.scoped_by_label(teacher, questions),
        "sections": sections,
    }
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
        return 0
    if runs:
        print(
            f"{len(questions)} of the file's {in_file} questions, those held out by "
            f"{len(runs)} run(s) (seeds {', '.join(map(str, report['seeds']))}); accuracy by "
            f"the {type(judge).__name__}, 95 % bootstrap intervals over questions\n"
        )
        if unrecorded:
            print(
                f"{unrecorded} held-out question(s) have no recorded evaluation (a run evaluated "
                "a sample): --complete runs them from the runs' checkpoints\n"
            )
    else:
        print(f"{len(questions)} questions; 95 % bootstrap intervals over questions\n")
    print(pooled.format_markdown(report))
    return 0


@cache
def _loader(device: str):
    from functools import partial

    from engine.agent.models import best_device, load_model

    return cache(partial(load_model, device=best_device() if device == "auto" else device))


def _attempts(name, spec, questions, *, index, limits, args, base_model=None) -> dict:
    """The policy `spec` (`evaluation.policies`) run greedily on `questions`: question id →
    Attempt."""
    from tqdm import tqdm

    from engine.agent.trajectory import SamplingParams
    from engine.evaluation.harness import run_policy
    from engine.evaluation.policies import build_policy
    from engine.evaluation.pooled import Attempt

    policy = build_policy(
        spec,
        tool=index,
        limits=limits,
        load_model=_loader(args.device),
        base_model=base_model,
        batch_size=args.batch_size,
    )
    with tqdm(total=len(questions), desc=name, unit="q") as bar:
        runs = run_policy(
            policy,
            questions,
            samples=1,
            sampling=SamplingParams(temperature=0.0),
            batch_size=args.batch_size,
            progress=bar,
        )
    return {
        q.id: Attempt(tuple(t[0].retrieved_chunk_ids), t[0].answer)
        for q, t in zip(questions, runs, strict=True)
    }


def _complete(runs, questions, *, index, limits, args) -> int:
    """Each run's held-out questions that its final evaluation left out (a sample), run from
    its checkpoint as it ran (its rules on); returns how many are still missing."""
    from engine.evaluation import pooled

    missing = 0
    for run in runs:
        left = [q for q in pooled.held_out(run, questions) if q.id not in run.attempts["trained"]]
        if left and args.complete and run.checkpoint is not None:
            run.attempts["trained"] |= _attempts(
                f"{run.name} (rest)",
                str(run.checkpoint),
                left,
                index=index,
                limits=limits,
                args=args,
            )
        elif left:
            missing += len(left)
    return missing


def rules_off_scores(runs, questions, *, index, limits, judge, args):
    """The runs' checkpoints with every decoding rule off, each on the questions it held out."""
    return _agents_scores(
        "trained (rules off)",
        {run.name: run.checkpoint for run in runs},
        runs,
        questions,
        index=index,
        limits=limits,
        judge=judge,
        args=args,
        missing="no checkpoint",
    )


def cold_start_scores(runs, questions, *, index, limits, judge, args):
    """The runs' cold starts alone (the same runs before any RL step), each on the questions
    it held out, under the limits the runs ran with: the row RL's share is read against.
    A run whose final evaluation ran its cold start beside it on every question of its row
    (`cold-start` trajectories) is read, not run again: the same greedy run, so a record
    whose weights are gone still gives RL's share."""
    return _agents_scores(
        COLD_START_ROW,
        {run.name: run.cold_start for run in runs},
        runs,
        questions,
        index=index,
        limits=limits,
        judge=judge,
        args=args,
        missing="no cold start kept",
        recorded=COLD_START,
    )


def echo_reader_scores(runs, questions, k, *, index, limits, judge, args):
    """Echo's k hits, answered by each run's trained weights on the questions it held out: the
    agent's reading without its searching. The trained row less this one is what the agent's
    own searches add to its answers; the same less echo's hits read by the base is what its
    training taught it to read."""
    from engine.evaluation import pooled

    name = f"echo@{k}'s hits read by the trained agent"
    without = [run.name for run in runs if run.checkpoint is None]
    if without:
        return pooled.PolicyScores(name, note=f"not recorded (no checkpoint in {without[0]})")
    by_id = {q.id: q for q in questions}
    attempts = [
        _attempts(
            f"{run.name} ({name})",
            f"echo@{k}",
            [by_id[qid] for qid in run.attempts["trained"] if qid in by_id],
            index=index,
            limits=limits,
            args=args,
            base_model=str(run.checkpoint),
        )
        for run in runs
    ]
    return pooled.score_attempts(name, attempts, questions, judge)


def _agents_scores(
    name, agents, runs, questions, *, index, limits, judge, args, missing, recorded=None
):
    """The agent folder `agents[run.name]` of each run, greedy, on the questions that run held
    out, or the run's own `recorded` policy's attempts where they cover those questions;
    "not recorded" where a run has neither."""
    from engine.evaluation import pooled

    def as_recorded(run) -> dict | None:
        kept = run.attempts.get(recorded, {}) if recorded else {}
        asked = run.attempts["trained"]
        return {qid: kept[qid] for qid in asked} if set(asked) <= set(kept) else None

    without = [run.name for run in runs if agents[run.name] is None and as_recorded(run) is None]
    if without:
        return pooled.PolicyScores(name, note=f"not recorded ({missing} in {without[0]})")
    by_id = {q.id: q for q in questions}
    attempts = []
    for run in runs:
        read = as_recorded(run)
        if read is None:
            read = _attempts(
                f"{run.name} ({name})",
                str(agents[run.name]),
                [by_id[qid] for qid in run.attempts["trained"] if qid in by_id],
                index=index,
                limits=limits,
                args=args,
            )
        attempts.append(read)
    return pooled.score_attempts(name, attempts, questions, judge)


def _base(runs, questions, *, index, limits, judge, args):
    """The untrained model, under the runs' limits (the same rules the agent had) or, with no
    run, `sleuth eval`'s defaults."""
    from engine.evaluation import pooled
    from engine.evaluation.cli import LIMIT_DEFAULTS

    model = args.model or (runs[0].config.get("model") if runs else None)
    model = None if model == "default" else model
    attempts = _attempts(
        "base",
        "base",
        questions,
        index=index,
        limits=limits or Limits(**LIMIT_DEFAULTS),
        args=args,
        base_model=model,
    )
    return pooled.score_attempts("base", [attempts], questions, judge)
