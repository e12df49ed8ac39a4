"""`sleuth questions generate`: question / answer / golden-chunk triples from an index's
chunks, offline from the documents' own sentences (and a pack's kinds, a filing's tables),
or by a teacher model on an OpenAI-compatible endpoint."""

from __future__ import annotations

import argparse
import os
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    questions = subparsers.add_parser("questions", help="work with question sets")
    actions = questions.add_subparsers(dest="questions_command", metavar="ACTION")
    p = actions.add_parser(
        "generate",
        help="synthesize questions from an index's chunks",
        description="Without a teacher, questions are read off the documents (no model "
        "needed): what a thing does, what a term is, how many there are, from any prose; "
        "with the filings pack's kinds, table cells, year-on-year comparisons and reasons "
        "for a change. "
        "With --teacher-base-url and --teacher-model (or SLEUTH_TEACHER_BASE_URL / "
        "SLEUTH_TEACHER_MODEL / SLEUTH_TEACHER_API_KEY), a teacher model writes them.",
    )
    p.add_argument("--index", required=True, metavar="DIR")
    p.add_argument("--out", required=True, metavar="FILE", help="JSONL to write")
    p.add_argument("--n", type=int, default=100, help="how many questions (default 100)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--yes-no-share",
        type=float,
        default=0.0,
        help="offline, filings kinds: share of yes/no comparisons of a row's two latest years "
        "(default 0: lookups only)",
    )
    p.add_argument(
        "--yes-share",
        type=float,
        default=0.5,
        help="offline, filings kinds: share of those comparisons answered Yes (default 0.5; a "
        "training run uses the share of its own yes/no questions answered Yes)",
    )
    p.add_argument(
        "--cause-share",
        type=float,
        default=0.0,
        help="offline, filings kinds: share of 'what drove' questions, where a filing says "
        "why a figure changed ('… increased, primarily due to …'), answered by the reason "
        "(default 0)",
    )
    p.add_argument(
        "--kinds",
        default="generic",
        metavar="KINDS",
        help="offline only: comma-separated question kinds, 'generic' (action, definition, "
        "count), 'reading' (completion), a pack's name for its kinds ('filings': table, "
        "comparison, cause), or 'all' (default: generic)",
    )
    p.add_argument("--teacher-base-url", default=os.environ.get("SLEUTH_TEACHER_BASE_URL"))
    p.add_argument("--teacher-model", default=os.environ.get("SLEUTH_TEACHER_MODEL"))
    p.add_argument(
        "--teacher-api-key", default=os.environ.get("SLEUTH_TEACHER_API_KEY", "not-needed")
    )
    p.set_defaults(func=cmd_generate)
    questions.set_defaults(func=lambda args: questions.print_help() or 0)


def cmd_generate(args) -> int:
    from engine.documents.questions import save_questions
    from engine.documents.synthesis import GENERIC_KINDS, READING_KINDS, teacher_questions
    from engine.packs import PACKS, synthesized_questions
    from engine.search.index import SearchIndex

    if args.n < 1:
        print("sleuth: error: --n must be at least 1", file=sys.stderr)
        return 2
    for name in ("yes_no_share", "yes_share", "cause_share"):
        if not 0.0 <= getattr(args, name) <= 1.0:
            flag = "--" + name.replace("_", "-")
            print(f"sleuth: error: {flag} must be between 0 and 1", file=sys.stderr)
            return 2
    # A pack's kinds are asked for by its name; one pack's at a time.
    packs = {name: pack.synthesis_kinds for name, pack in PACKS.items()}
    groups = {"generic": GENERIC_KINDS, "reading": READING_KINDS, **packs}
    every = tuple(k for kinds in groups.values() for k in kinds)
    groups = {"all": every, **groups}
    kinds: list[str] = []
    for word in (w.strip() for w in args.kinds.split(",") if w.strip()):
        if word not in groups and word not in every:
            choices = ", ".join([*groups, *every])
            print(
                f"sleuth: error: unknown kind {word!r} in --kinds (choose from {choices})",
                file=sys.stderr,
            )
            return 2
        kinds.extend(k for k in groups.get(word, (word,)) if k not in kinds)
    if not kinds:
        print("sleuth: error: --kinds names no kind", file=sys.stderr)
        return 2
    if bool(args.teacher_base_url) != bool(args.teacher_model):
        print(
            "sleuth: error: a teacher needs both --teacher-base-url and --teacher-model",
            file=sys.stderr,
        )
        return 2
    try:
        index = SearchIndex.load(args.index)
    except (FileNotFoundError, ValueError) as exc:
        print(f"sleuth: error: {exc}", file=sys.stderr)
        return 2
    if args.teacher_base_url:
        import openai

        client = openai.OpenAI(base_url=args.teacher_base_url, api_key=args.teacher_api_key)
        try:
            questions, rejected = teacher_questions(
                index.chunks, client, args.teacher_model, n=args.n, seed=args.seed
            )
        except openai.OpenAIError as exc:
            print(f"sleuth: error: the teacher endpoint failed: {exc}", file=sys.stderr)
            return 2
        source = f"teacher {args.teacher_model} ({rejected} replies rejected)"
    else:
        pack = next((name for name, own in packs.items() if set(own) & set(kinds)), "")
        mix = {n: getattr(args, n) for n in ("yes_no_share", "cause_share", "yes_share")}
        questions = synthesized_questions(
            pack, index.chunks, args.n, args.seed, kinds=kinds, mix=mix if pack else None
        )
        made = sorted({q.meta["source"].removeprefix("offline-") for q in questions})
        source = f"the documents' own words (offline: {', '.join(made) or 'none'})"
    if not questions:
        print(
            "sleuth: error: no self-contained questions could be made from these chunks",
            file=sys.stderr,
        )
        return 2
    save_questions(questions, args.out)
    print(f"wrote {len(questions)} questions from {source} -> {args.out}")
    if len(questions) < args.n and not args.teacher_base_url:
        # Fewer than asked is what these documents hold of these kinds, not a failure: say
        # so, and what makes more, rather than leave a short file unexplained.
        more = "a teacher model writes more (--teacher-base-url, --teacher-model)"
        if not set(READING_KINDS) <= set(kinds):
            more += (
                "; --kinds generic,reading adds fill-in-the-blank questions, which teach "
                "reading but quote their passage, so they measure no search"
            )
        print(
            f"sleuth: only {len(questions)} of the {args.n} asked for are in these documents "
            f"with these kinds: {more}",
            file=sys.stderr,
        )
    return 0
