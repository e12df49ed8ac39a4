"""`sleuth train`: cold start + RL on a corpus and a question set, with a progress bar.

Writes DIR/checkpoints/step-N/, DIR/final/ (a Hugging Face model folder), DIR/metrics.jsonl,
DIR/samples.jsonl, DIR/config.json and DIR/eval.json (the `sleuth eval --json` format:
the trained agent against `echo` and `base` on the validation entities).
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

from workers.training.config import LOSS_KINDS, TrainConfig

# Flags that set one TrainConfig field each: (flag, type, config path, help). They
# default to None, so only a flag given on the command line overrides the preset.
FIELD_FLAGS: list[tuple[str, type, str, str]] = [
    ("--model", str, "model", "model folder or id (default SmolLM2-135M)"),
    ("--max-minutes", float, "max_minutes", "stop cleanly when this budget is spent"),
    ("--steps", int, "steps", "RL steps"),
    ("--questions-per-step", int, "questions_per_step", "questions per RL step"),
    ("--group-size", int, "group_size", "rollouts per question (GRPO group)"),
    ("--lr", float, "lr", "RL learning rate"),
    ("--kl-ref", float, "loss.kl_ref_coef", "KL-to-reference coefficient"),
    ("--dgpo", float, "dgpo_coef", "teacher NLL weight on failed groups (0: off)"),
    ("--train-layers", int, "train_layers", "train only the top N decoder layers"),
    ("--sft-epochs", int, "sft_epochs", "cold-start SFT epochs"),
    ("--sft-lr", float, "sft_lr", "cold-start SFT learning rate"),
    ("--sft-share", float, "sft_share", "most of the training time the cold start may take"),
    (
        "--sft-warmdown",
        float,
        "sft_warmdown",
        "last share of the cold start over which its learning rate falls to zero",
    ),
    ("--scope-drills", int, "scope_drills", "per question, scoped searches on made-up names"),
    (
        "--customer-scope-drills",
        int,
        "customer_scope_drills",
        "more of them per question of the customer's own",
    ),
    (
        "--synthetic-questions",
        int,
        "synthetic_questions",
        "questions synthesized from the training entities' tables for cold start and RL",
    ),
    ("--temperature", float, "temperature", "rollout sampling temperature"),
    ("--max-turns", int, "limits.max_turns", "searches per trajectory"),
    ("--max-new-tokens", int, "limits.max_new_tokens", "model tokens per trajectory"),
    ("--results-per-search", int, "limits.results_per_search", "hits per search"),
    (
        "--first-results-per-search",
        int,
        "limits.first_results_per_search",
        "hits of the first search (0: --results-per-search)",
    ),
    ("--max-result-tokens", int, "limits.max_result_tokens", "tokens of one results block"),
    (
        "--max-turn-tokens",
        int,
        "limits.max_turn_tokens",
        "model tokens of one turn; a query cut there runs as written (0: no limit)",
    ),
    ("--eval-every", int, "eval_every", "validate every N steps (0: only at the end)"),
    ("--save-every", int, "save_every", "checkpoint every N steps"),
    ("--keep-checkpoints", int, "keep_checkpoints", "keep the last N checkpoints (0: all)"),
    ("--val-fraction", float, "val_fraction", "share of questions held out (whole entities)"),
    ("--split-seed", int, "split_seed", "which entities are held out (default: --seed)"),
    ("--seed", int, "seed", "training seed"),
    ("--rollout-engine", str, "rollout_engine", "hf (transformers) or sglang (GPU)"),
    (
        "--precision",
        str,
        "precision",
        "rollouts and trainer matmuls: auto (bfloat16 where fast), float32 or bfloat16",
    ),
]
# Flags that store a constant into a field when given.
SWITCHES: list[tuple[str, str, object, str]] = [
    ("--dr-grpo", "normalize_std", False, "advantages without std division"),
    ("--lora", "lora", True, "train LoRA adapters, not all weights"),
    ("--no-heading-search", "heading_search", False, "no heading search in the teacher"),
    ("--no-refine-search", "refine_search", False, "no key-term second search in the teacher"),
    (
        "--refine-always",
        "refine_always",
        True,
        "the teacher's key-term second search follows every first search, not only a miss",
    ),
    ("--refine-on-miss", "refine_always", False, "the key-term search only after a miss"),
    (
        "--section-search",
        "section_search",
        True,
        "the teacher searches again within the part of the document the question names",
    ),
    ("--no-section-search", "section_search", False, "no such search in the teacher"),
    (
        "--synthetic-sections",
        "synthetic_sections",
        True,
        "synthetic questions name their statement in the customer's own words",
    ),
    ("--no-synthetic-sections", "synthetic_sections", False, "synthetic questions name none"),
    (
        "--grounded-figures",
        "limits.grounded_figures",
        True,
        "the agent's answers write only figures its question or results show (evaluation, serving)",
    ),
    ("--no-grounded-figures", "limits.grounded_figures", False, "answers write any figure"),
    (
        "--loop-guard",
        "limits.loop_guard",
        True,
        "greedy decoding never writes a run of words three times in a row (evaluation, serving)",
    ),
    ("--no-loop-guard", "limits.loop_guard", False, "greedy decoding writes any token"),
    (
        "--grounded-scope",
        "limits.grounded_scope",
        True,
        "greedy decoding writes only words of the question into a search's [scope] (evaluation,"
        " serving)",
    ),
    ("--no-grounded-scope", "limits.grounded_scope", False, "a scope may name anything"),
]


def register(subparsers: argparse._SubParsersAction) -> None:
    from workers.training.presets import PRESETS

    p = subparsers.add_parser(
        "train",
        help="cold start + RL training of a search agent",
        description=__doc__,
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
    p.add_argument("--loss", choices=LOSS_KINDS, help="policy loss (default dppo_tv)")
    for flag, kind, path, help_text in FIELD_FLAGS:
        p.add_argument(flag, type=kind, dest=_dest(path), help=help_text)
    for flag, path, value, help_text in SWITCHES:
        p.add_argument(flag, action="store_const", const=value, dest=_dest(path), help=help_text)
    p.add_argument("--val-limit", type=int, help="validation questions used during training")
    p.add_argument("--reward-config", help="JSON file of reward settings (weights, judge)")
    p.add_argument("--no-final-eval", action="store_true", help="skip eval.json")
    p.set_defaults(func=cmd_train)


def _dest(path: str) -> str:
    return "cfg__" + path.replace(".", "__")


def _fail(message: str) -> int:
    print(f"sleuth train: {message}", file=sys.stderr)
    return 2


def config_from_args(args) -> TrainConfig:
    """The preset's config (or TrainConfig's defaults), then every flag given on top."""
    from workers.rewards.reward import RewardConfig
    from workers.training.presets import merge_settings, preset_config

    overrides: dict = {}
    for path in [f[2] for f in FIELD_FLAGS] + [s[1] for s in SWITCHES]:
        value = getattr(args, _dest(path), None)
        if value is not None:
            *parents, leaf = path.split(".")
            node = overrides
            for parent in parents:
                node = node.setdefault(parent, {})
            node[leaf] = value
    if args.loss:
        overrides.setdefault("loss", {})["kind"] = args.loss
    if args.reward_config:
        reward = RewardConfig.from_dict(json.loads(Path(args.reward_config).read_text()))
        overrides["reward"] = reward.to_dict()
    if args.preset:
        return preset_config(args.preset, overrides)
    return TrainConfig.from_dict(merge_settings(TrainConfig().to_dict(), overrides))


def cmd_train(args) -> int:
    from workers.agent.models import ModelNotFoundError, load_trainable
    from workers.documents.evidence import map_evidence
    from workers.documents.questions import QuestionFileError, load_questions, split_by_entity
    from workers.rewards.judge import CLI_KEY_ENV, build_judge
    from workers.search.index import SearchIndex
    from workers.training.rl import train

    started = time.monotonic()
    out = Path(args.out)
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
        from workers.documents.corpus import build_corpus

        corpus = build_corpus(args.docs, progress=True)
        for error in corpus.errors:
            print(f"sleuth train: skipped {error.doc}: {error.message}", file=sys.stderr)
        if not corpus.chunks:
            return _fail("no text to index: every document was skipped or empty")
        index = SearchIndex.build(corpus.chunks)
        index.save(out / "index")

    report = map_evidence(questions, index.chunks)
    print(report.summary(), file=sys.stderr)
    train_qs, val_qs = split_by_entity(
        questions, val_fraction=config.val_fraction, seed=config.entity_split_seed()
    )
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
    summary = train(
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
    from workers.evaluation.harness import format_table
    from workers.training.evaluate import evaluate_run

    report = evaluate_run(out, config, index, val_questions, judge=judge)
    (out / "eval.json").write_text(json.dumps(report, indent=2))
    print(format_table(report), file=sys.stderr)
    return report
