"""`sleuth eval`: compare policies on held-out questions in one table (or JSON)."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict
from functools import cache
from pathlib import Path

from engine.agent.trajectory import Limits
from engine.settings import command_line_options

# Limits of a policy that has none of its own (no checkpoint among the policies); the rules
# of decoding are off unless asked for.
LIMIT_DEFAULTS = {
    "max_turns": 4,
    "max_new_tokens": 256,
    "max_result_tokens": 512,
    "results_per_search": 3,
    "max_turn_tokens": 0,
    "first_results_per_search": 0,
}
# Every limit is a flag (`Limits`' own `option` fields); a yes/no one takes on or off.
LIMIT_OPTIONS = command_line_options(Limits)


def policy_limits(specs: list[str], args) -> dict:
    """Each policy's limits: a checkpoint runs under its own settings, the others under
    the one checkpoint's when exactly one kind is among them (so echo@K and base are
    compared on its terms); flags given on the command line win everywhere."""
    from engine.agent.settings import read_agent_settings

    given = {}
    for option in LIMIT_OPTIONS:
        value = getattr(args, option.path, None)
        if value is not None:
            given[option.path] = value == "on" if option.kind is bool else value
    own = {}
    for spec in specs:
        settings = read_agent_settings(spec) if Path(spec).is_dir() else None
        if settings is not None:
            own[spec] = asdict(settings.limits)
    shared = next(iter(own.values())) if len({tuple(v.items()) for v in own.values()}) == 1 else {}
    return {spec: Limits(**{**LIMIT_DEFAULTS, **own.get(spec, shared), **given}) for spec in specs}


def load_index_and_questions(args) -> tuple:
    """The index at `args.index` and the questions of `args.questions`; ValueError saying
    which could not be read, and what to do."""
    from engine.documents.questions import QuestionFileError, load_questions
    from engine.search.index import SearchIndex

    try:
        index = SearchIndex.load(args.index)
    except (FileNotFoundError, ValueError) as exc:
        raise ValueError(
            f"cannot load index {args.index}: {exc} (build one with `sleuth index`)"
        ) from None
    try:
        questions = load_questions(args.questions)
    except (FileNotFoundError, QuestionFileError, ValueError) as exc:
        raise ValueError(f"cannot read questions {args.questions}: {exc}") from None
    return index, questions


def add_judge_options(p) -> None:
    """`--judge-base-url` and `--judge-model`: an API judge instead of the offline one."""
    p.add_argument(
        "--judge-base-url",
        default=None,
        help="API judge endpoint (default: the offline judge); key from $SLEUTH_JUDGE_API_KEY",
    )
    p.add_argument("--judge-model", default=None)


def judge_from_options(args):
    """The judge `add_judge_options` asked for. The CLI's user chose the judge's URL, so the
    operator's key ($SLEUTH_JUDGE_API_KEY) may go to it."""
    from engine.rewards.judge import CLI_KEY_ENV, JudgeConfig, build_judge

    return build_judge(
        JudgeConfig(base_url=args.judge_base_url, model=args.judge_model or "")
        if args.judge_base_url
        else None,
        api_key=os.environ.get(CLI_KEY_ENV, ""),
    )


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "eval",
        help="compare agents (echo, base, checkpoints, API models) on held-out questions",
        description="Run each policy on the same questions with the same search tool and "
        "report accuracy (the share judged correct), the reward's answer score apart, "
        "golden-chunk recall, pass@k, searches, echo rate, answer length and latency.",
    )
    p.add_argument("--index", required=True, metavar="DIR", help="a folder from `sleuth index`")
    p.add_argument("--questions", required=True, metavar="PATH", help="question file")
    p.add_argument(
        "--model",
        default=None,
        help="base model for echo and base "
        "(default: SmolLM2-135M-Instruct; a folder or Hugging Face id)",
    )
    p.add_argument(
        "--policy",
        default="echo,base",
        help="comma-separated: echo, echo@K, base, a checkpoint folder, openai:MODEL",
    )
    p.add_argument(
        "--split",
        choices=["val", "train", "all"],
        default="val",
        help="entity-level split (default val: entities never trained on)",
    )
    p.add_argument("--val-fraction", type=float, default=0.25)
    p.add_argument(
        "--split-seed",
        type=int,
        default=None,
        help="which entities are held out (default: the seed of the run a checkpoint given as "
        "a policy was trained in, from its run folder's config.json; else 0)",
    )
    p.add_argument(
        "--folds",
        type=int,
        default=0,
        metavar="K",
        help="split into K entity folds instead (a run's `--folds`); --fold picks the held-out one",
    )
    p.add_argument("--fold", type=int, default=0, metavar="I", help="the held-out fold, from 0")
    p.add_argument(
        "--samples", type=int, default=1, metavar="K", help="trajectories per question, for pass@K"
    )
    p.add_argument("--limit", type=int, default=None, metavar="N", help="first N questions")
    p.add_argument(
        "--temperature",
        type=float,
        default=None,
        help="default 0 (greedy) for one sample, 0.7 for several",
    )
    p.add_argument("--top-p", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0)
    # Limits: a checkpoint's own (its agent.json) unless given here; echo, base and API
    # models run under the checkpoint's when there is one, else under LIMIT_DEFAULTS.
    limits = p.add_argument_group("the agent's limits (default: a checkpoint's own agent.json)")
    rules = p.add_argument_group(
        "decoding rules (off on the default path; the filings pack's, docs/packs.md)"
    )
    for option in LIMIT_OPTIONS:
        default = LIMIT_DEFAULTS.get(option.path, getattr(Limits(), option.path))
        if option.kind is bool:
            kind = {"choices": ["on", "off"]}
            default = "on" if default else "off"
        else:
            kind = {"type": option.kind, "metavar": "N"}
        help_text = f"{option.help} (default: a checkpoint's own, else {default})"
        group = rules if option.kind is bool else limits
        group.add_argument(option.flag, dest=option.path, help=help_text, **kind)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--device", default="auto", help="cuda, cpu, or auto: the GPU if any")
    p.add_argument(
        "--openai-base-url",
        default=None,
        help="OpenAI-compatible endpoint (default $OPENAI_BASE_URL); key from $OPENAI_API_KEY",
    )
    add_judge_options(p)
    p.add_argument(
        "--trajectories",
        metavar="PATH",
        default=None,
        help="also write every trajectory as JSON lines",
    )
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_eval)


def _fail(message: str) -> int:
    print(f"sleuth eval: {message}", file=sys.stderr)
    return 2


def model_folder(spec: str) -> str:
    """The model folder a policy names: a run folder's final agent (`final/`), a checkpoint's
    model (`checkpoints/step-N/model/`, beside the trainer's state); any other spec as given."""
    path = Path(spec)
    for inner in ("final", "model"):
        if (path / inner).is_dir():
            return str(path / inner)
    return spec


def run_split_seed(specs) -> tuple[int, str] | None:
    """The entity split seed of the run the checkpoint policies were trained in, and that
    run's config.json: a run folder holds `final/`, `cold-start/` and `checkpoints/step-N/`
    beside its config.json, so a checkpoint evaluated "on its held-out fold" is evaluated on
    the fold its run held out. None when no checkpoint has a run folder, or they disagree."""
    found: dict[int, str] = {}
    for spec in specs:
        path = Path(spec)
        if not path.is_dir():
            continue
        for folder in path.parents[:3]:  # final/, cold-start/, checkpoints/step-N/model/
            try:
                config = json.loads((folder / "config.json").read_text())
            except (OSError, ValueError):
                continue
            if isinstance(config, dict) and "seed" in config and "folds" in config:
                seed = config.get("split_seed")
                found[config["seed"] if seed is None else seed] = str(folder / "config.json")
                break
    return next(iter(found.items())) if len(found) == 1 else None


def cmd_eval(args) -> int:
    from engine.agent.models import ModelNotFoundError, best_device, load_model
    from engine.agent.trajectory import SamplingParams
    from engine.documents.evidence import map_evidence
    from engine.evaluation.folds import train_val_split
    from engine.evaluation.harness import evaluate, format_table, write_trajectories
    from engine.evaluation.policies import PolicySpecError, build_policy

    if args.samples < 1 or (args.limit is not None and args.limit < 1):
        return _fail("--samples and --limit must be at least 1")
    try:
        index, questions = load_index_and_questions(args)
    except ValueError as exc:
        return _fail(str(exc))
    specs = list(dict.fromkeys(s.strip() for s in args.policy.split(",") if s.strip()))
    for i, spec in enumerate(specs):
        if (folder := model_folder(spec)) != spec:
            print(f"{spec}: evaluating {folder}", file=sys.stderr)
            specs[i] = folder
    if args.split != "all":
        split_seed = args.split_seed
        if split_seed is None and (run := run_split_seed(specs)):
            split_seed, source = run
            print(f"split seed {split_seed}: the run's ({source})", file=sys.stderr)
        try:
            train, val = train_val_split(
                questions,
                val_fraction=args.val_fraction,
                seed=split_seed or 0,
                folds=args.folds,
                fold=args.fold,
            )
        except ValueError as exc:
            return _fail(str(exc))
        questions = val if args.split == "val" else train
    questions = questions[: args.limit] if args.limit else questions
    if not questions:
        return _fail(f"no questions in the {args.split} split")
    map_evidence(questions, index.chunks)

    limits = policy_limits(specs, args)

    @cache
    def load(name: str | None):
        return load_model(name, device=best_device() if args.device == "auto" else args.device)

    try:
        policies = {
            spec: build_policy(
                spec,
                tool=index,
                limits=limits[spec],
                load_model=load,
                base_model=args.model,
                batch_size=args.batch_size,
                openai_base_url=args.openai_base_url,
            )
            for spec in specs
        }
        tokenizer = load(args.model)[1]
    except (PolicySpecError, ModelNotFoundError) as exc:
        return _fail(str(exc))
    judge = judge_from_options(args)
    temperature = args.temperature
    if temperature is None:
        temperature = 0.0 if args.samples == 1 else 0.7
    report = evaluate(
        policies,
        questions,
        judge=judge,
        count_tokens=lambda text: len(tokenizer.encode(text, add_special_tokens=False)),
        samples=args.samples,
        sampling=SamplingParams(temperature, args.top_p, args.seed),
        batch_size=args.batch_size,
    )
    trajectories = report.pop("trajectories")
    report["limits"] = {spec: asdict(limits[spec]) for spec in specs}
    if args.trajectories:
        write_trajectories(args.trajectories, questions, trajectories)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"{len(questions)} questions ({args.split} split), {args.samples} sample(s) each")
        print(format_table(report))
        for spec in specs:
            print(f"{spec}: {asdict(limits[spec])}")
    return 0
