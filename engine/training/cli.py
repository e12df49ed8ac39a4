"""`sleuth train`: cold start + RL on a corpus and a question set, with a progress bar.

Writes DIR/checkpoints/step-N/ (the model in model/, the optimizer's state beside it; the last
3 kept, --keep-checkpoints), DIR/final/ (a Hugging Face model folder with its agent.json),
DIR/cold-start/ (the same before RL: `sleuth compare` reads RL's share against it),
DIR/metrics.jsonl, DIR/samples.jsonl, DIR/config.json, DIR/summary.json, DIR/eval.json (the
`sleuth eval --json` format: the trained agent against `echo` and `base` on the validation
entities) with DIR/eval_trajectories.jsonl (what each searched and answered), and with --docs
the index it built, DIR/index/. Disk, with the default model: about 0.5 GB a model folder, and
a checkpoint of 1.6 GB when every weight trains (quick-cpu), tens of MB with LoRA (cpu-45min).
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

from engine.settings import command_line_options
from engine.training.config import TrainConfig

# Every run setting declared with `option` is a flag (`engine.settings`), named after its
# field: `--steps`, `--max-turns` (limits.max_turns), `--grounded-scope/--no-grounded-scope`.
# They default to None, so only a flag given on the command line overrides the preset.
OPTIONS = command_line_options(TrainConfig)
# The settings a customer tunes, listed by `--help`; the others (the teacher's, the rules of
# decoding, the loss's: what presets and packs set) are taken all the same, and `--help-all`
# lists them.
CUSTOMER_SETTINGS = (
    "pack",
    "model",
    "seed",
    "val_fraction",
    "folds",
    "fold",
    "sft_epochs",
    "sft_lr",
    "synthetic_questions",
    "steps",
    "questions_per_step",
    "group_size",
    "lr",
    "temperature",
    "lora",
    "precision",
    "rollout_engine",
    "limits.max_turns",
    "limits.max_new_tokens",
    "limits.results_per_search",
    "max_minutes",
    "eval_every",
    "save_every",
)
# Older spellings of a switch, kept because runs were documented with them.
ALIASES: list[tuple[str, str, bool, str]] = [
    ("--dr-grpo", "normalize_std", False, "advantages without std division (Dr. GRPO)"),
    ("--refine-on-miss", "refine_always", False, "the key-term search only after a miss"),
]


def register(subparsers: argparse._SubParsersAction) -> None:
    from engine.training.presets import PRESETS

    p = subparsers.add_parser(
        "train",
        help="cold start + RL training of a search agent",
        description=__doc__,
        epilog="The teacher's settings, the rules of decoding and the loss's are set by "
        "presets and packs and may be given here too: --help-all lists every one.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--index", help="a folder written by `sleuth index`")
    source.add_argument("--docs", nargs="+", help="documents, folders or pages JSONL to index")
    p.add_argument("--questions", required=True, help="question file (JSONL or CSV)")
    p.add_argument("--out", required=True, help="run folder")
    p.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        help="start from a platform preset (flags given here override its settings)",
    )
    p.add_argument("--resume", action="store_true", help="continue the run in --out")
    p.add_argument("--help-all", action=_HelpAll, help="list every setting, then exit")
    for option in OPTIONS:
        if option.kind is bool:
            action = {"action": argparse.BooleanOptionalAction}
        else:
            metavar = None if option.choices else option.flag[2:].replace("-", "_").upper()
            action = {"type": option.kind, "choices": option.choices, "metavar": metavar}
        added = p.add_argument(option.flag, dest=_dest(option.path), help=option.help, **action)
        _hide_unless(added, option.path in CUSTOMER_SETTINGS)
    for flag, path, value, help_text in ALIASES:
        added = p.add_argument(
            flag, action="store_const", const=value, dest=_dest(path), help=help_text
        )
        _hide_unless(added, False)
    p.add_argument("--val-limit", type=int, help="validation questions used during training")
    p.add_argument("--reward-config", help="JSON file of reward settings (weights, judge)")
    p.add_argument("--no-final-eval", action="store_true", help="skip eval.json")
    p.set_defaults(func=cmd_train)


class _HelpAll(argparse.Action):
    """`--help-all`: the help with every setting listed, those `--help` leaves out too."""

    def __init__(self, option_strings, dest, help=None):
        super().__init__(option_strings, dest=argparse.SUPPRESS, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        for action in parser._actions:
            action.help = getattr(action, "full_help", action.help)
        parser.print_help()
        parser.exit()


def _hide_unless(action: argparse.Action, shown: bool) -> None:
    """Leave `action` out of `--help` unless `shown`; `--help-all` lists it."""
    action.full_help = action.help
    if not shown:
        action.help = argparse.SUPPRESS


def _dest(path: str) -> str:
    return "cfg__" + path.replace(".", "__")


def _fail(message: str) -> int:
    print(f"sleuth train: {message}", file=sys.stderr)
    return 2


def config_from_args(args) -> TrainConfig:
    """The preset's config (or TrainConfig's defaults), then its pack's, then every flag
    given on top."""
    from engine.rewards.reward import RewardConfig
    from engine.training.presets import PRESETS, run_config

    overrides: dict = {}
    for path in {option.path for option in OPTIONS}:
        value = getattr(args, _dest(path), None)
        if value is not None:
            *parents, leaf = path.split(".")
            node = overrides
            for parent in parents:
                node = node.setdefault(parent, {})
            node[leaf] = value
    if args.reward_config:
        reward = RewardConfig.from_dict(json.loads(Path(args.reward_config).read_text()))
        overrides["reward"] = reward.to_dict()
    return run_config(PRESETS[args.preset]["config"] if args.preset else None, overrides)


def cmd_train(args) -> int:
    from engine.agent.models import ModelNotFoundError, load_trainable
    from engine.documents.evidence import map_evidence
    from engine.documents.questions import QuestionFileError, load_questions
    from engine.rewards.judge import CLI_KEY_ENV, build_judge
    from engine.search.index import SearchIndex
    from engine.training.distributed import RankJob, threads_per_rank, train_on_ranks
    from engine.training.rl import train

    started = time.monotonic()
    out = Path(args.out)
    if not args.resume and (out / "config.json").exists():
        # Starting afresh there would overwrite the run's checkpoints and its records.
        return _fail(f"{out} already holds a run: --resume continues it; give another --out")
    try:
        config = config_from_args(args)
        if args.resume and (out / "config.json").exists():
            config = TrainConfig.from_dict(json.loads((out / "config.json").read_text()))
            config.max_minutes = getattr(args, _dest("max_minutes"))
        questions = load_questions(args.questions)
    except (QuestionFileError, ValueError, OSError) as exc:
        return _fail(str(exc))

    if args.index:
        try:
            index = SearchIndex.load(args.index)
        except (FileNotFoundError, ValueError) as exc:
            return _fail(str(exc))
    else:
        from engine.documents.corpus import build_corpus

        corpus = build_corpus(args.docs, progress=True)
        for error in corpus.errors:
            print(f"sleuth train: skipped {error.doc}: {error.message}", file=sys.stderr)
        if not corpus.chunks:
            return _fail("no text to index: every document was skipped or empty")
        index = SearchIndex.build(corpus.chunks)
        index.save(out / "index")

    report = map_evidence(questions, index.chunks)
    print(report.summary(), file=sys.stderr)
    try:
        train_qs, val_qs = config.split(questions)
    except ValueError as exc:  # more folds than entities, a fold out of range
        return _fail(str(exc))
    if not train_qs or not val_qs:
        return _fail("need questions about at least two entities to split train/validation")
    entities = sorted({q.entity or "?" for q in val_qs})
    print(
        f"{len(train_qs)} training / {len(val_qs)} validation questions "
        f"(validation entities: {', '.join(entities)})",
        file=sys.stderr,
    )
    try:
        model, tokenizer = load_trainable(config.model)
    except ModelNotFoundError as exc:
        return _fail(str(exc))

    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(config.to_dict(), indent=2))
    # The CLI's user chose the judge's URL, so the operator's key may go to it.
    judge = build_judge(config.reward, api_key=os.environ.get(CLI_KEY_ENV, ""))
    final_eval_questions = 0 if args.no_final_eval else len(val_qs)
    job = RankJob(  # what ranks 1… need, when the run has several (`--ranks`)
        config.to_dict(),
        args.index or str(out / "index"),
        train_qs,
        val_qs[: args.val_limit],
        str(out),
        args.resume,
        threads=threads_per_rank(config.ranks),
        final_eval_questions=final_eval_questions,
    )
    summary = train_on_ranks(
        config.ranks,
        job,
        lambda ranks: train(
            config,
            model=model,
            tokenizer=tokenizer,
            index=index,
            train_questions=train_qs,
            val_questions=val_qs[: args.val_limit],
            out_dir=out,
            resume=args.resume,
            log=lambda m: print(m, file=sys.stderr),
            judge=judge,
            final_eval_questions=final_eval_questions,
            ranks=ranks,
        ),
    )
    if summary["stopped_early"]:
        print(f"stopped early: {summary['stopped_early']}", file=sys.stderr)
    if not args.no_final_eval:
        final_eval(out, config, index, val_qs, judge=judge)
    summary["minutes"] = (time.monotonic() - started) / 60
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary, indent=2))
    return 0


def final_eval(out: Path, config: TrainConfig, index, val_questions, judge=None) -> dict:
    """eval.json: the trained agent against echo and the untrained base."""
    from engine.evaluation.harness import format_table
    from engine.training.evaluate import evaluate_run

    report = evaluate_run(out, config, index, val_questions, judge=judge)
    (out / "eval.json").write_text(json.dumps(report, indent=2))
    print(format_table(report), file=sys.stderr)
    return report
