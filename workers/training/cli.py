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

from workers.agent.trajectory import Limits
from workers.training.config import TrainConfig
from workers.training.losses import LossConfig


def register(subparsers: argparse._SubParsersAction) -> None:
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
    p.add_argument("--model", default="default", help="model folder or id (default SmolLM2-135M)")
    p.add_argument("--resume", action="store_true", help="continue the run in --out")
    p.add_argument("--max-minutes", type=float, help="stop cleanly when this budget is spent")
    p.add_argument("--steps", type=int, default=TrainConfig.steps)
    p.add_argument("--questions-per-step", type=int, default=TrainConfig.questions_per_step)
    p.add_argument("--group-size", type=int, default=TrainConfig.group_size)
    p.add_argument("--lr", type=float, default=TrainConfig.lr)
    p.add_argument(
        "--loss", default=LossConfig.kind, choices=["ppo", "dppo_tv", "dppo_kl", "tis", "mis"]
    )
    p.add_argument("--dr-grpo", action="store_true", help="advantages without std division")
    p.add_argument("--kl-ref", type=float, default=0.0, help="KL-to-reference coefficient")
    p.add_argument(
        "--dgpo",
        type=float,
        default=TrainConfig.dgpo_coef,
        help="teacher NLL weight on failed groups (0: off)",
    )
    p.add_argument("--lora", action="store_true", help="train LoRA adapters, not all weights")
    p.add_argument("--train-layers", type=int, help="train only the top N decoder layers")
    p.add_argument("--sft-epochs", type=int, default=TrainConfig.sft_epochs)
    p.add_argument("--sft-lr", type=float, default=TrainConfig.sft_lr)
    p.add_argument(
        "--no-heading-search",
        action="store_true",
        help="the scripted teacher searches with the scoped question only",
    )
    p.add_argument(
        "--scope-drills",
        type=int,
        default=TrainConfig.scope_drills,
        help="per teacher question, first searches on made-up entity names (0: none)",
    )
    p.add_argument("--temperature", type=float, default=TrainConfig.temperature)
    p.add_argument("--max-turns", type=int, default=Limits.max_turns)
    p.add_argument("--max-new-tokens", type=int, default=Limits.max_new_tokens)
    p.add_argument("--results-per-search", type=int, default=Limits.results_per_search)
    p.add_argument("--max-result-tokens", type=int, default=Limits.max_result_tokens)
    p.add_argument("--eval-every", type=int, default=TrainConfig.eval_every)
    p.add_argument("--save-every", type=int, default=TrainConfig.save_every)
    p.add_argument("--val-fraction", type=float, default=TrainConfig.val_fraction)
    p.add_argument("--val-limit", type=int, help="validation questions used during training")
    p.add_argument("--reward-config", help="JSON file of reward settings (weights, judge)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-final-eval", action="store_true", help="skip eval.json")
    p.set_defaults(func=cmd_train)


def _fail(message: str) -> int:
    print(f"sleuth train: {message}", file=sys.stderr)
    return 2


def config_from_args(args) -> TrainConfig:
    from workers.rewards.reward import RewardConfig

    reward = RewardConfig()
    if args.reward_config:
        reward = RewardConfig.from_dict(json.loads(Path(args.reward_config).read_text()))
    return TrainConfig(
        model=args.model,
        seed=args.seed,
        val_fraction=args.val_fraction,
        sft_epochs=args.sft_epochs,
        sft_lr=args.sft_lr,
        scope_drills=args.scope_drills,
        heading_search=not args.no_heading_search,
        steps=args.steps,
        questions_per_step=args.questions_per_step,
        group_size=args.group_size,
        lr=args.lr,
        loss=LossConfig(kind=args.loss, kl_ref_coef=args.kl_ref),
        normalize_std=not args.dr_grpo,
        dgpo_coef=args.dgpo,
        lora=args.lora,
        train_layers=args.train_layers,
        temperature=args.temperature,
        limits=Limits(
            max_turns=args.max_turns,
            max_new_tokens=args.max_new_tokens,
            max_result_tokens=args.max_result_tokens,
            results_per_search=args.results_per_search,
        ),
        eval_every=args.eval_every,
        save_every=args.save_every,
        max_minutes=args.max_minutes,
        reward=reward,
    )


def cmd_train(args) -> int:
    from workers.agent.models import ModelNotFoundError, load_model
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
            config.max_minutes = args.max_minutes
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
        questions, val_fraction=config.val_fraction, seed=config.seed
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
        model, tokenizer = load_model(config.model)
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
