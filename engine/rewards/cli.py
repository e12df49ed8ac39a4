"""`sleuth reward preview`: score a few answers with a run's reward, component by component,
so a customer can check what the reward pays for before paying for a run."""

import argparse
import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

from tqdm import tqdm

from engine.documents.questions import Question, QuestionFileError, load_questions
from engine.rewards.judge import CLI_KEY_ENV, OfflineJudge, build_judge
from engine.rewards.reward import (
    FINISH_REASONS,
    RewardBreakdown,
    RewardConfig,
    RewardInput,
    compute_reward,
)


class UsageError(Exception):
    """A problem with the user's files or options; printed without a traceback, exit 2."""


def register(subparsers: argparse._SubParsersAction) -> None:
    reward = subparsers.add_parser("reward", help="check a run's reward before training")
    commands = reward.add_subparsers(dest="reward_command", metavar="COMMAND")
    preview = commands.add_parser(
        "preview",
        help="score answers with a reward configuration and show every component",
        description=(
            "Score answers (JSONL lines {id or question, answer[, retrieved_chunk_ids, "
            "searches, finish_reason, confidence, malformed_calls]}) against a question file. "
            "An answer names its question by id, or by its text (a CSV's questions have ids "
            "made from their text)."
        ),
    )
    preview.add_argument(
        "--questions", required=True, type=Path, help="question file (JSONL or CSV)"
    )
    preview.add_argument(
        "--index",
        help="a `sleuth index` folder: the questions' evidence is mapped to its chunks, so "
        "golden_recall can be computed",
    )
    preview.add_argument("--answers", required=True, type=Path, help="answers file (JSONL)")
    preview.add_argument(
        "--config", type=Path, help="reward configuration (JSON); default: built-in"
    )
    preview.add_argument("--json", action="store_true", help="print JSON instead of a table")
    preview.set_defaults(func=run_preview)
    reward.set_defaults(func=lambda args: reward.print_help() or 0)


def run_preview(args: argparse.Namespace) -> int:
    try:
        config = _load_config(args.config)
        questions = _load_questions(args.questions, args.index)
        answers = _load_answers(args.answers)
        by_text = {q.question.strip(): q.id for q in questions.values()}
        for answer in answers:
            if "id" not in answer:
                answer["id"] = by_text.get(str(answer["question"]).strip(), "")
        unknown = [a.get("question", a["id"]) for a in answers if a["id"] not in questions]
        if unknown:
            raise UsageError(
                f"{args.answers}: {len(unknown)} answer(s) name no question in "
                f"{args.questions}: {', '.join(map(str, unknown))}"
            )
        # The CLI's user chose the judge's URL, so the operator's key may go to it.
        judge = build_judge(config, api_key=os.environ.get(CLI_KEY_ENV, ""))
    except UsageError as error:
        print(f"sleuth reward preview: {error}", file=sys.stderr)
        return 2

    notes = _evidence_notes(answers, questions, config)
    jobs = [_job(answer, questions[answer["id"]], config) for answer in answers]
    workers = 1 if isinstance(judge, OfflineJudge) or not config.judge else config.judge.concurrency
    with ThreadPoolExecutor(max_workers=max(workers, 1)) as pool:
        scored = pool.map(lambda job: compute_reward(job[0], job[1], judge), jobs)
        results = list(
            tqdm(scored, total=len(jobs), desc="scoring", file=sys.stderr, disable=len(jobs) < 5)
        )
    rows = [
        _row(answer, inp, result, config)
        for answer, (inp, _), result in zip(answers, jobs, results, strict=True)
    ]

    if args.json:
        print(json.dumps([{k: row[k] for k in ("id", "total", "components")} for row in rows]))
    else:
        print(_table(rows, config))
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    failed = [row["id"] for row in rows if row["errors"]]
    if failed:
        first = next(row["errors"][0] for row in rows if row["errors"])
        print(
            f"sleuth reward preview: the judge failed on {len(failed)} answer(s) "
            f"({', '.join(failed)}); their correctness is 0. First error: {first}",
            file=sys.stderr,
        )
        return 1
    return 0


def _load_config(path: Path | None) -> RewardConfig:
    if path is None:
        return RewardConfig()
    try:
        return RewardConfig.from_dict(json.loads(path.read_text()))
    except FileNotFoundError:
        raise UsageError(f"no reward configuration at {path}") from None
    except (json.JSONDecodeError, TypeError, ValueError) as error:
        raise UsageError(f"{path} is not a valid reward configuration: {error}") from None


def _load_questions(path: Path, index: str | None = None) -> dict[str, Question]:
    try:
        questions = load_questions(path)
    except FileNotFoundError:
        raise UsageError(f"no file at {path}") from None
    except QuestionFileError as error:
        raise UsageError(str(error)) from None
    if index:
        from engine.documents.evidence import map_evidence
        from engine.search.index import SearchIndex

        try:
            chunks = SearchIndex.load(index).chunks
        except (FileNotFoundError, ValueError) as error:
            raise UsageError(f"cannot load index {index}: {error}") from None
        map_evidence(questions, chunks)
    return {q.id: q for q in questions}


def _load_answers(path: Path) -> list[dict]:
    answers = []
    for line_no, record in _jsonl(path):
        if not ("id" in record or "question" in record) or "answer" not in record:
            raise UsageError(
                f'{path} line {line_no}: each line needs "answer", and "id" or "question"'
            )
        finish = record.get("finish_reason")
        if finish is not None and finish not in FINISH_REASONS:
            raise UsageError(
                f"{path} line {line_no}: finish_reason {finish!r} is not one of {FINISH_REASONS}"
            )
        retrieved = record.get("retrieved_chunk_ids")
        if retrieved is not None and not isinstance(retrieved, list):
            raise UsageError(f"{path} line {line_no}: retrieved_chunk_ids must be a list")
        for key in ("searches", "malformed_calls"):
            if key in record and not isinstance(record[key], int):
                raise UsageError(f"{path} line {line_no}: {key} must be a whole number")
        if "id" in record:
            record["id"] = str(record["id"])
        answers.append(record)
    return answers


def _jsonl(path: Path):
    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()
    except FileNotFoundError:
        raise UsageError(f"no file at {path}") from None
    found = False
    for line_no, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise UsageError(f"{path} line {line_no}: not valid JSON ({error.msg})") from None
        if not isinstance(record, dict):
            raise UsageError(f"{path} line {line_no}: expected a JSON object")
        found = True
        yield line_no, record
    if not found:
        raise UsageError(f"{path} is empty")


def _job(answer: dict, question: Question, config: RewardConfig):
    text = answer.get("answer")
    text = None if text is None else str(text)
    finish = answer.get("finish_reason") or ("answer" if (text or "").strip() else "no_answer")
    inp = RewardInput(
        question=question.question,
        ground_truth=question.answer,
        answer=text,
        retrieved_chunk_ids=[str(c) for c in answer.get("retrieved_chunk_ids") or []],
        golden_chunk_ids=_golden_chunk_ids(question),
        searches=answer.get("searches", 0),
        finish_reason=finish,
        malformed_calls=answer.get("malformed_calls", 0),
        confidence=answer.get("confidence"),
    )
    if "searches" not in answer:
        # No trajectory behind this answer: the evidence requirement cannot be checked.
        config = replace(config, require_evidence=False)
    return inp, config


def _golden_chunk_ids(question: Question) -> list[str]:
    """The question's golden chunks, or those its evidence passages were mapped to."""
    mapped = [c for evidence in question.evidence for c in evidence.chunk_ids]
    return list(dict.fromkeys([*question.golden_chunk_ids, *mapped]))


def _row(answer: dict, inp: RewardInput, result: RewardBreakdown, config: RewardConfig) -> dict:
    components: dict[str, float | None] = dict(result.components)
    if "retrieved_chunk_ids" not in answer or not inp.golden_chunk_ids:
        components["golden_recall"] = None  # not computable, rather than a misleading 0
    reason = result.details.get("judge", {}).get("reason") or result.details.get("correctness", "")
    return {
        "id": answer["id"],
        "total": result.total,
        "components": components,
        "reason": reason,
        "errors": result.errors,
    }


def _evidence_notes(
    answers: list[dict], questions: dict[str, Question], config: RewardConfig
) -> list[str]:
    notes = []
    weight = config.weights["golden_recall"]
    no_chunks = [a["id"] for a in answers if "retrieved_chunk_ids" not in a]
    if no_chunks:
        notes.append(
            f"{len(no_chunks)} answer(s) carry no retrieved_chunk_ids: golden_recall is not "
            f"computed for them (shown as n/a; its weight {weight:g} adds nothing to their total)"
        )
    no_golden = sorted({a["id"] for a in answers if not _golden_chunk_ids(questions[a["id"]])})
    if no_golden:
        notes.append(
            f"{len(no_golden)} question(s) have no golden_chunk_ids ({', '.join(no_golden)}): "
            "golden_recall is not computed for them (give --index to map their evidence)"
        )
    no_searches = [a["id"] for a in answers if "searches" not in a]
    if no_searches and config.require_evidence:
        notes.append(
            f"{len(no_searches)} answer(s) carry no searches count: the reward's evidence "
            "requirement (no search, no correctness) was not checked for them"
        )
    return notes


def _table(rows: list[dict], config: RewardConfig) -> str:
    names = config.components
    header = ["id", "total", *names, "judge"]
    lines = [header]
    for row in rows:
        values = [_cell(row["components"].get(name)) for name in names]
        judge = "ERROR" if row["errors"] else row["reason"]
        lines.append([row["id"], f"{row['total']:.3f}", *values, judge[:60]])
    widths = [max(len(line[i]) for line in lines) for i in range(len(header) - 1)]
    weights = "weights: " + ", ".join(f"{n} {config.weights[n]:g}" for n in names)
    out = [
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=False))
        + "  "
        + line[-1]
        for line in lines
    ]
    return "\n".join([*out, weights])


def _cell(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"
