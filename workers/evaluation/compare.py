"""`sleuth compare`: the trained agent pooled over its fold runs beside the cheap baselines, in
one Markdown table with 95 % intervals (`evaluation.pooled` says what each row is)."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from functools import cache

from workers.agent.trajectory import Limits


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "compare",
        help="the trained agent (pooled over fold runs) beside echo, scoped echo, the "
        "teacher's searches and the base model, with 95 %% intervals",
        description="One table, one ruler: golden recall and strict accuracy with bootstrap "
        "95 %% intervals over questions, chunks per question and n, for the trained agent "
        "(its runs' recorded held-out trajectories, judged again; and re-evaluated with every "
        "decoding rule off where a run kept its checkpoint), echo at the agent's chunk count "
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
        "--model",
        default=None,
        help="base model (default: the runs' model, else SmolLM2-135M-Instruct)",
    )
    p.add_argument(
        "--judge-base-url",
        default=None,
        help="API judge endpoint (default: the offline judge); key from $SLEUTH_JUDGE_API_KEY",
    )
    p.add_argument("--judge-model", default=None)
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


def cmd_compare(args) -> int:
    from workers.agent.greedy_rules import masks_tokens, unruled
    from workers.documents.evidence import map_evidence
    from workers.documents.questions import QuestionFileError, load_questions
    from workers.evaluation import pooled
    from workers.rewards.judge import CLI_KEY_ENV, JudgeConfig, build_judge
    from workers.search.index import SearchIndex

    try:
        chunk_counts = _chunk_counts(args.chunks)
    except ValueError as exc:
        return _fail(str(exc))
    try:
        index = SearchIndex.load(args.index)
    except (FileNotFoundError, ValueError) as exc:
        return _fail(f"cannot load index {args.index}: {exc} (build one with `sleuth index`)")
    try:
        questions = load_questions(args.questions)
    except (FileNotFoundError, QuestionFileError, ValueError) as exc:
        return _fail(f"cannot read questions {args.questions}: {exc}")
    try:
        runs = [pooled.read_run(folder) for folder in args.runs]
        pooled.check_one_setting(runs)
    except pooled.RunFolderError as exc:
        return _fail(str(exc))
    in_file = len(questions)
    if runs:
        held_out = {qid for run in runs for qid in run.attempts["trained"]}
        questions = [q for q in questions if q.id in held_out]
        if not questions:
            return _fail(f"no question of {args.questions} is among the runs' held-out ones")
    map_evidence(questions, index.chunks)
    config = runs[0].config if runs else {}
    limits = run_limits(config) if runs else None
    # The CLI's user chose the judge's URL, so the operator's key may go to it.
    judge = build_judge(
        JudgeConfig(base_url=args.judge_base_url, model=args.judge_model or "")
        if args.judge_base_url
        else None,
        api_key=os.environ.get(CLI_KEY_ENV, ""),
    )

    models: list[pooled.PolicyScores] = []
    if runs:
        trained = pooled.score_attempts(
            "trained" + (" (rules as run)" if masks_tokens(limits) else " (no rules)"),
            [run.attempts["trained"] for run in runs],
            questions,
            judge,
        )
        models.append(trained)
        if masks_tokens(limits):
            models.append(
                _unruled(
                    runs, questions, index=index, limits=unruled(limits), judge=judge, args=args
                )
            )
    if args.base:
        models.append(_base(runs, questions, index=index, limits=limits, judge=judge, args=args))

    if chunk_counts is None:
        chunk_counts = [pooled.agent_chunk_count(models[0])] if runs else [5, 10]
    elif runs:
        chunk_counts = list(dict.fromkeys([pooled.agent_chunk_count(models[0]), *chunk_counts]))
    teacher = pooled.no_model_teacher(index, questions, config)
    sections = []
    for i, k in enumerate(chunk_counts):
        rows = [*(models if i == 0 else []), *pooled.baselines(index, questions, k, teacher)]
        sections.append(pooled.section_report(k, rows, seed=args.seed))
    report = {
        "questions": len(questions),
        "questions_in_file": in_file,
        "runs": [str(run.folder) for run in runs],
        "seeds": sorted({run.config.get("seed") for run in runs}),
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
    else:
        print(f"{len(questions)} questions; 95 % bootstrap intervals over questions\n")
    print(pooled.format_markdown(report))
    return 0


@cache
def _loader(device: str):
    from functools import partial

    from workers.agent.models import best_device, load_model

    return cache(partial(load_model, device=best_device() if device == "auto" else device))


def _model_scores(name, spec, questions_by_run, *, index, limits, judge, args, base_model=None):
    """Run the policy `spec` on each group of questions and score its trajectories."""
    from workers.agent.trajectory import SamplingParams
    from workers.evaluation import pooled
    from workers.evaluation.harness import run_policy
    from workers.evaluation.policies import build_policy

    load = _loader(args.device)
    policy = build_policy(
        spec,
        tool=index,
        limits=limits,
        load_model=load,
        base_model=base_model,
        batch_size=args.batch_size,
    )
    attempts = []
    everything = [q for group in questions_by_run for q in group]
    from tqdm import tqdm

    with tqdm(total=len(everything), desc=name, unit="q") as bar:
        for group in questions_by_run:
            runs = run_policy(
                policy,
                group,
                samples=1,
                sampling=SamplingParams(temperature=0.0),
                batch_size=args.batch_size,
                progress=bar,
            )
            attempts.append(
                {
                    q.id: pooled.Attempt(tuple(t[0].retrieved_chunk_ids), t[0].answer)
                    for q, t in zip(group, runs, strict=True)
                }
            )
    return pooled.score_attempts(name, attempts, everything, judge)


def _unruled(runs, questions, *, index, limits, judge, args):
    """The runs' checkpoints with every decoding rule off, each on the questions it held out."""
    from workers.evaluation import pooled

    name = "trained (rules off)"
    missing = [run.name for run in runs if run.checkpoint is None]
    if missing:
        return pooled.PolicyScores(name, note=f"not recorded (no checkpoint in {missing[0]})")
    by_id = {q.id: q for q in questions}
    rows = []
    for run in runs:
        group = [by_id[qid] for qid in run.attempts["trained"] if qid in by_id]
        rows.append(
            _model_scores(
                name,
                str(run.checkpoint),
                [group],
                index=index,
                limits=limits,
                judge=judge,
                args=args,
            )
        )
    return _pool_rows(name, rows)


def _pool_rows(name, rows):
    """Rows scored run by run, pooled per question over the runs (seeds)."""
    from workers.evaluation import pooled
    from workers.evaluation.stats import pool_seeds

    return pooled.PolicyScores(
        name,
        recall=pool_seeds(row.recall for row in rows),
        correct=pool_seeds(row.correct or {} for row in rows),
        chunks=pool_seeds(row.chunks for row in rows),
        judge_errors=sum(row.judge_errors for row in rows),
    )


def _base(runs, questions, *, index, limits, judge, args):
    """The untrained model, under the runs' limits (the same rules the agent had) or, with no
    run, `sleuth eval`'s defaults."""
    from workers.evaluation.cli import LIMIT_DEFAULTS

    model = args.model or (runs[0].config.get("model") if runs else None)
    model = None if model == "default" else model
    limits = limits or Limits(**LIMIT_DEFAULTS)
    return _model_scores(
        "base",
        "base",
        [questions],
        index=index,
        limits=limits,
        judge=judge,
        args=args,
        base_model=model,
    )
