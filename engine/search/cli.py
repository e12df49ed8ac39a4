"""`sleuth index`, `sleuth search` and `sleuth retrieval-eval`."""

from __future__ import annotations

import argparse
import json
import sys
import time

from engine.documents.chunking import DEFAULT_MAX_TOKENS, DEFAULT_OVERLAP_TOKENS


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "index",
        help="parse and chunk documents, build a BM25 index folder",
        description="Documents in (PDF, HTML, Markdown, text, DOCX, folders of them, or JSONL "
        'of pre-extracted pages {"doc","page","text","company" or "entity"}), index out.',
    )
    p.add_argument("--docs", nargs="+", required=True, metavar="PATH")
    p.add_argument("--out", required=True, metavar="DIR")
    p.add_argument("--max-tokens", type=int, default=DEFAULT_MAX_TOKENS)
    p.add_argument("--overlap-tokens", type=int, default=DEFAULT_OVERLAP_TOKENS)
    p.add_argument(
        "--entity",
        action="append",
        default=[],
        metavar="DOC=ENTITY",
        help="set a document's entity (default: from the pages file, or the file name)",
    )
    p.set_defaults(func=cmd_index)

    p = subparsers.add_parser("search", help="search an index the way the agent does")
    p.add_argument("query")
    p.add_argument("--index", required=True, metavar="DIR")
    p.add_argument("-k", type=int, default=5)
    p.add_argument("--doc", action="append", help="only this document (repeatable)")
    p.add_argument("--entity", action="append", help="only this entity (repeatable)")
    p.add_argument("--json", action="store_true", help="hits as JSON instead of the tool text")
    p.set_defaults(func=cmd_search)

    p = subparsers.add_parser(
        "retrieval-eval",
        help="recall@k of golden evidence with the question as the query (echo baseline)",
    )
    p.add_argument("--index", required=True, metavar="DIR")
    p.add_argument("--questions", required=True, metavar="FILE")
    p.add_argument("--k", default="1,3,5,10", help="comma-separated cutoffs (default 1,3,5,10)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_retrieval_eval)


def _fail(message: str) -> int:
    print(f"sleuth: error: {message}", file=sys.stderr)
    return 2


def _load_index(directory: str):
    from engine.search.index import SearchIndex

    try:
        return SearchIndex.load(directory)
    except (FileNotFoundError, ValueError) as exc:
        raise _UserError(str(exc)) from None


class _UserError(Exception):
    pass


def cmd_index(args) -> int:
    from engine.documents.corpus import build_corpus
    from engine.search.index import SearchIndex

    entities = {}
    for item in args.entity:
        doc, sep, entity = item.partition("=")
        if not sep or not doc or not entity:
            return _fail(f"--entity takes DOC=ENTITY, got {item!r}")
        entities[doc] = entity
    started = time.perf_counter()
    try:
        corpus = build_corpus(
            args.docs, args.max_tokens, args.overlap_tokens, entities, progress=True
        )
    except ValueError as exc:
        return _fail(str(exc))
    for error in corpus.errors:
        print(f"sleuth: skipped {error.doc}: {error.message}", file=sys.stderr)
    if not corpus.chunks:
        return _fail("no text to index: every document was skipped or empty")
    index = SearchIndex.build(corpus.chunks)
    index.params |= {"max_tokens": args.max_tokens, "overlap_tokens": args.overlap_tokens}
    index.save(args.out)
    print(
        f"indexed {corpus.documents} documents into {len(index)} chunks in "
        f"{time.perf_counter() - started:.1f}s -> {args.out}"
        + (f" ({len(corpus.errors)} skipped)" if corpus.errors else "")
    )
    return 0


def cmd_search(args) -> int:
    from dataclasses import asdict
    from difflib import get_close_matches

    from engine.search.tool import format_hits_for_model

    try:
        index = _load_index(args.index)
    except _UserError as exc:
        return _fail(str(exc))
    filters = {}
    if args.doc:
        filters["doc"] = args.doc
    if args.entity:
        filters["entity"] = args.entity
    for field, wanted in filters.items():
        # A name the index does not hold would filter everything out: say so, not "No results".
        held = {str(getattr(chunk, field)) for chunk in index.chunks}
        if unknown := [name for name in wanted if name not in held]:
            close = sorted({m for name in unknown for m in get_close_matches(name, held, n=3)})
            hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
            return _fail(f"no {field} named {', '.join(map(repr, unknown))} in {args.index}{hint}")
    hits = index.search(args.query, k=args.k, filters=filters or None)
    if args.json:
        print(json.dumps([asdict(h) for h in hits], ensure_ascii=False, indent=2))
    else:
        print(format_hits_for_model(hits))
    return 0


def cmd_retrieval_eval(args) -> int:
    from engine.documents.evidence import map_evidence
    from engine.documents.questions import QuestionFileError, load_questions
    from engine.search.recall import echo_recall

    try:
        ks = [int(k) for k in args.k.split(",") if k.strip()]
        if not ks or min(ks) < 1:
            raise ValueError
    except ValueError:
        return _fail(f"--k takes positive integers separated by commas, got {args.k!r}")
    try:
        index = _load_index(args.index)
        questions = load_questions(args.questions)
    except _UserError as exc:
        return _fail(str(exc))
    except FileNotFoundError:
        return _fail(f"no such question file: {args.questions}")
    except QuestionFileError as exc:
        return _fail(str(exc))
    report = map_evidence(questions, index.chunks)
    result = echo_recall(index, questions, ks)
    result |= {
        "evidence_mapped": round(report.mapped_share, 4),
        "evidence_passages": report.total,
        "questions": len(questions),
        "chunks": len(index),
    }
    if args.json:
        print(json.dumps(result))
    else:
        print(report.summary())
        for key, value in result.items():
            print(f"{key:>18}  {value}")
    return 0
