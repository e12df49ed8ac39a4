"""The comparison table of `sleuth compare`: policies side by side on one ruler, with intervals.

Every row scores the same questions: golden recall (the share of a question's golden chunks
shown), strict accuracy (the share of questions whose answer the judge finds correct; a
policy with no model writes no answer and has none), chunks shown per question, and n. Each
mean carries its 95 % bootstrap interval over questions (`stats`), and every row is paired
against echo at the same chunk count, models also against each other: that interval of the
difference, not the two rows' intervals, says whether a gain holds.

Rows:
- the trained agent, pooled over run folders (`sleuth train` with `--folds K --fold I`, one
  per fold and training seed): each question scored by the runs that held it out, averaged
  over seeds. Its recorded held-out trajectories are judged again here, by today's judge;
- the same weights with every decoding rule off (`greedy_rules.unruled`), re-evaluated from
  a run's checkpoint (the CLI does it; absent checkpoints are "not recorded");
- the cold start alone: each run's agent before its first RL step (`cold-start/`, beside
  `final/`), re-evaluated under the run's own rules; the trained row less this one is RL's
  share of these very runs (the CLI does it; runs that kept none are "not recorded");
- echo@N's hits read by the trained agent: the runs' weights (`final/`) given echo's N hits
  in their transcript and asked for the answer, each on the questions its run held out (the
  CLI does it where the runs kept their weights): the agent's reading without its searching;
- echo@N: one search, the question itself, N hits;
- echo's best up to N: echo@k for the k ≤ N of highest recall on these very questions (a choice
  made on the answers, so in echo's favour: the agent has to beat it regardless);
- scoped echo@N: the question within its entity's documents (`[entity] question`, the entity's
  label from the question file), no model: what knowing the entity is worth, whether or not
  the question names it;
- the teacher's searches@N: the scripted teacher's searches for the question (the scoped
  question, then its key terms), N hits shared between them, no model. What the teacher
  chooses by looking at the golden chunks (its heading search, its section search's phrase, a
  key-term search only after a miss) is left out: that is no policy without the answers;
- the base model, when asked for (slow on a CPU).
N is the agent's distinct chunks per question rounded up, so more chunks alone cannot explain a
gain; without runs, the chunk counts asked for.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from engine.evaluation.stats import Interval, bootstrap_mean, paired_difference, pool_seeds
from engine.rewards.judge import JudgeError

EVAL_TRAJECTORIES = "eval_trajectories.jsonl"  # as `sleuth train` writes it (training.evaluate)
COLD_START_DIR = "cold-start"  # the run's agent before any RL step, beside final/ (training.rl)
# What may differ between runs pooled as one agent: which questions each held out, and the seed.
POOLED_SETTINGS_MAY_DIFFER = frozenset({"seed", "split_seed", "fold", "max_minutes"})


class RunFolderError(ValueError):
    """A --runs folder that holds no recorded evaluation, or runs that are not one setting."""


@dataclass(frozen=True)
class Attempt:
    """What a policy did on one question: the chunks it was shown, and its answer if any."""

    chunk_ids: tuple[str, ...]
    answer: str | None = None


@dataclass
class RecordedRun:
    """A `sleuth train` folder: its settings and its policies' attempts by question id."""

    folder: Path
    config: dict
    attempts: dict[str, dict[str, Attempt]]  # policy -> question id -> attempt

    @property
    def name(self) -> str:
        return self.folder.name

    @property
    def checkpoint(self) -> Path | None:
        final = self.folder / "final"
        return final if final.is_dir() else None

    @property
    def cold_start(self) -> Path | None:
        """The agent the run's cold start left, before any RL step; None where the run had no
        cold start or was written before runs kept it."""
        folder = self.folder / COLD_START_DIR
        return folder if folder.is_dir() else None


def read_run(folder: str | Path) -> RecordedRun:
    """A run folder's config.json and eval_trajectories.jsonl (or .jsonl.gz)."""
    folder = Path(folder)
    plain, packed = folder / EVAL_TRAJECTORIES, folder / f"{EVAL_TRAJECTORIES}.gz"
    path = plain if plain.exists() else packed
    if not path.exists():
        if (folder / "config.json").exists():
            raise RunFolderError(
                f"{folder}: no {EVAL_TRAJECTORIES}(.gz): the run's final evaluation did not "
                "run (`--no-final-eval`, or the run stopped first); `sleuth train --resume` "
                "with its --out, --index and --questions runs it"
            )
        raise RunFolderError(
            f"{folder}: no {EVAL_TRAJECTORIES}(.gz); give folders written by `sleuth train`"
        )
    try:
        config = json.loads((folder / "config.json").read_text())
    except (OSError, ValueError) as exc:
        raise RunFolderError(f"{folder}: cannot read config.json ({exc})") from None
    attempts: dict[str, dict[str, Attempt]] = {}
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                searches = record.get("searches") or []
                chunks = dict.fromkeys(c for s in searches for c in s["chunk_ids"])
                attempts.setdefault(record["policy"], {})[record["question_id"]] = Attempt(
                    tuple(chunks), record.get("answer")
                )
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                raise RunFolderError(f"{path}, line {number}: not a trajectory ({exc!r})") from None
    if "trained" not in attempts:
        raise RunFolderError(f"{path}: no trajectories of the trained agent")
    return RecordedRun(folder, config, attempts)


def held_out(run: RecordedRun, questions: Sequence) -> list:
    """The questions `run` held out, its split made again from its config.json."""
    from engine.training.config import TrainConfig

    return TrainConfig.from_dict(run.config).split(questions)[1]


def check_one_setting(runs: Sequence[RecordedRun]) -> None:
    """Raise RunFolderError unless the runs differ only in seed and held-out fold: pooled, they
    are read as one agent."""
    from engine.training.config import TrainConfig

    if not runs:
        return
    # Read as TrainConfig reads them: a run stored before a setting existed has the value that
    # setting takes for such runs, not a difference.
    settings = [TrainConfig.from_dict(run.config).to_dict() for run in runs]
    first = runs[0]
    for run, config in zip(runs[1:], settings[1:], strict=True):
        differ = [
            key
            for key in _differences(settings[0], config)
            if key not in POOLED_SETTINGS_MAY_DIFFER
        ]
        if differ:
            raise RunFolderError(
                f"{first.name} and {run.name} differ in {', '.join(differ)}: pool only runs of "
                "one setting (their seeds and folds may differ)"
            )


def _differences(a: Mapping, b: Mapping, prefix: str = "") -> list[str]:
    """The settings two configs disagree on, nested ones by their dotted name."""
    differ = []
    for key in sorted(set(a) | set(b)):
        x, y = a.get(key), b.get(key)
        if isinstance(x, Mapping) and isinstance(y, Mapping):
            differ += _differences(x, y, f"{prefix}{key}.")
        elif x != y:
            differ.append(f"{prefix}{key}")
    return differ


@dataclass
class PolicyScores:
    """One row: per question id, its recall, correctness (None: no model) and chunks shown,
    each the mean over the runs (seeds) that scored it."""

    name: str
    recall: dict[str, float] = field(default_factory=dict)
    correct: dict[str, float] | None = None
    chunks: dict[str, float] = field(default_factory=dict)
    note: str = ""  # why a row has no numbers ("not recorded")
    judge_errors: int = 0

    @property
    def has_model(self) -> bool:
        return self.correct is not None


def attempt_recall(question, attempt: Attempt) -> float | None:
    """Share of the question's golden chunks the attempt was shown; None without golden chunks
    (as `metrics.summarize` counts golden recall)."""
    golden = set(question.golden_chunk_ids or [])
    if not golden:
        return None
    return len(golden & set(attempt.chunk_ids)) / len(golden)


def score_attempts(
    name: str,
    runs: Iterable[Mapping[str, Attempt]],
    questions: Sequence,
    judge: Any | None,
) -> PolicyScores:
    """Recall, chunks and (with a `judge`) correctness of recorded attempts, pooled over the
    runs: a question scored by several runs counts once, with their mean."""
    by_id = {q.id: q for q in questions}
    recalls, corrects, chunks = [], [], []
    errors = 0
    for attempts in runs:
        recall, correct, shown = {}, {}, {}
        for qid, attempt in attempts.items():
            question = by_id.get(qid)
            if question is None:
                continue
            value = attempt_recall(question, attempt)
            if value is not None:
                recall[qid] = value
            shown[qid] = len(attempt.chunk_ids)
            if judge is not None:
                right = False
                if attempt.answer:
                    try:
                        verdict = judge.judge(question.question, question.answer, attempt.answer)
                        right = bool(verdict.correct)
                    except JudgeError:
                        errors += 1  # counted wrong, and reported
                correct[qid] = float(right)
        recalls.append(recall)
        corrects.append(correct)
        chunks.append(shown)
    return PolicyScores(
        name,
        recall=pool_seeds(recalls),
        correct=pool_seeds(corrects) if judge is not None else None,
        chunks=pool_seeds(chunks),
        judge_errors=errors,
    )


def trajectory_intervals(
    questions: Sequence, trajectories: Mapping[str, Sequence[Sequence[Any]]], judge: Any
) -> dict[str, dict[str, dict | None]]:
    """Each policy's recall and accuracy with their 95 % intervals, from its trajectories
    (`trajectories[name][i]`: the samples of `questions[i]`, averaged per question)."""
    intervals = {}
    for name, runs in trajectories.items():
        scores = _trajectory_scores(name, runs, questions, judge)
        recall, accuracy = _interval(scores.recall, 0), _interval(scores.correct or {}, 0)
        intervals[name] = {
            "recall": recall.to_dict() if recall else None,
            "accuracy": accuracy.to_dict() if accuracy else None,
        }
    return intervals


def paired_intervals(
    questions: Sequence,
    trajectories: Mapping[str, Sequence[Sequence[Any]]],
    judge: Any,
    a: str,
    b: str,
) -> dict[str, dict | None]:
    """Policy `a` less policy `b` on the same questions, recall and accuracy, each with its
    paired 95 % interval (trajectories as `trajectory_intervals` reads them)."""
    left, right = (_trajectory_scores(n, trajectories[n], questions, judge) for n in (a, b))
    recall = _paired(left.recall, right.recall, 0)
    accuracy = _paired(left.correct or {}, right.correct or {}, 0)
    return {
        "recall": recall.to_dict() if recall else None,
        "accuracy": accuracy.to_dict() if accuracy else None,
    }


def _trajectory_scores(name: str, runs: Sequence[Sequence[Any]], questions, judge):
    samples = max((len(s) for s in runs), default=0)
    return score_attempts(
        name,
        [
            {
                q.id: Attempt(tuple(s[j].retrieved_chunk_ids), s[j].answer)
                for q, s in zip(questions, runs, strict=True)
                if j < len(s)
            }
            for j in range(samples)
        ],
        questions,
        judge,
    )


def agent_chunk_count(scores: PolicyScores) -> int:
    """The agent's distinct chunks per question rounded up (echo never sees fewer)."""
    mean = sum(scores.chunks.values()) / max(len(scores.chunks), 1)
    return max(1, math.ceil(round(mean, 2)))


# Policies with no model: searches through the same index, no answer.


def _no_model(name: str, questions: Sequence, searches) -> PolicyScores:
    """`searches(question)` → the chunk ids shown; recall and chunks per question."""
    scores = PolicyScores(name)
    for question in tqdm(questions, desc=name, unit="q", leave=False):
        attempt = Attempt(tuple(dict.fromkeys(searches(question))))
        value = attempt_recall(question, attempt)
        if value is not None:
            scores.recall[question.id] = value
        scores.chunks[question.id] = len(attempt.chunk_ids)
    return scores


def echo(index, questions: Sequence, k: int) -> PolicyScores:
    """echo@k: the question itself as the one search, k hits (the echo policy's search)."""
    return _no_model(
        f"echo@{k}",
        questions,
        lambda q: [h.chunk_id for h in index.search(q.question, k, question=q.question)],
    )


def echo_best(index, questions: Sequence, up_to: int) -> PolicyScores:
    """echo@k for the k ≤ `up_to` of the highest mean recall (the smallest such k)."""
    ranked = {
        q.id: [h.chunk_id for h in index.search(q.question, up_to, question=q.question)]
        for q in tqdm(questions, desc=f"echo@1..{up_to}", unit="q", leave=False)
    }
    by_id = {q.id: q for q in questions}
    best, best_recall = 1, -1.0
    for k in range(1, up_to + 1):
        values = [attempt_recall(by_id[qid], Attempt(tuple(r[:k]))) for qid, r in ranked.items()]
        values = [v for v in values if v is not None]
        recall = sum(values) / len(values) if values else 0.0
        if recall > best_recall + 1e-12:
            best, best_recall = k, recall
    scores = _no_model(f"echo best ≤ {up_to} (k={best})", questions, lambda q: ranked[q.id][:best])
    return scores


def entity_scope(index, question) -> str:
    """`"[entity] "` when the question's entity label names documents of the index, else ""."""
    entity = (question.entity or "").strip()
    return f"[{entity}] " if entity and index.documents_named(entity) else ""


def scoped_echo(index, questions: Sequence, teacher, k: int) -> PolicyScores:
    """The question within its entity's documents, k hits."""
    return _no_model(
        f"scoped echo@{k}",
        questions,
        lambda q: [
            h.chunk_id
            for h in index.search(entity_scope(index, q) + q.question, k, question=q.question)
        ],
    )


def teacher_searches(index, questions: Sequence, teacher, k: int) -> PolicyScores:
    """The scripted teacher's searches for each question, `k` hits shared between them (the
    first search gets the remainder), each showing only chunks not shown before."""
    from engine.agent.protocol import searched_query
    from engine.agent.tool import new_hits

    def shown(question) -> list[str]:
        queries = teacher.drilled_searches(question)[:k]
        seen: list[str] = []
        for i, query in enumerate(queries):
            hits = k // len(queries) + (1 if i < k % len(queries) else 0)
            query = searched_query(query, question.question)
            found = new_hits(index, query, hits, set(seen), question.question)
            seen.extend(h.chunk_id for h in found)
        return seen

    return _no_model(f"teacher's searches@{k}", questions, shown)


def no_model_teacher(index, questions: Sequence, config: Mapping | None = None):
    """The scripted teacher as a policy without answers: every search it would write without
    looking at the golden chunks (see the module's note), with a run's settings if given.
    Its section search is left out too: it finds the phrase naming the part of the document
    by matching the question against the golden page's heading (`ScriptedTeacher.section`)."""
    from engine.training.teacher import ScriptedTeacher

    # The run's teacher settings (its scope's conventions among them) by their shared names.
    taken = {f.name for f in dataclasses.fields(ScriptedTeacher) if f.init} - {"index"}
    settings = {key: value for key, value in (config or {}).items() if key in taken}
    teacher = ScriptedTeacher(
        index,
        **settings | {"heading_search": False, "refine_always": True, "section_search": False},
    )
    teacher.learn_boilerplate(list(questions))
    return teacher


# A yes/no question's prior: a set whose yes/no questions mostly say "No" is answered right that
# often by a model that learnt to say "No" and reads nothing (python-reference: 27 of 124).
CONSTANT_ANSWERS = ("Yes", "No")


def constant_answer(questions: Sequence, judge) -> PolicyScores:
    """The better of "Yes" and "No" given to every question, judged as the agent is: the
    accuracy a model earns with no search and no reading. Chosen on these very questions,
    so it is the highest such a prior can score here."""
    rows = []
    for said in CONSTANT_ANSWERS:
        correct = {}
        for q in questions:
            try:
                correct[q.id] = float(bool(judge.judge(q.question, q.answer, said).correct))
            except JudgeError:
                correct[q.id] = 0.0
        rows.append(
            PolicyScores(
                f'"{said}" to every question, no model',
                correct=correct,
                chunks={q.id: 0 for q in questions},
            )
        )
    return max(rows, key=lambda row: sum(row.correct.values()))


def baselines(index, questions: Sequence, k: int, teacher) -> list[PolicyScores]:
    """The no-model rows at chunk count k."""
    return [
        echo(index, questions, k),
        echo_best(index, questions, k),
        scoped_echo(index, questions, teacher, k),
        teacher_searches(index, questions, teacher, k),
    ]


def scoped_by_label(teacher, questions: Sequence) -> int:
    """Questions scoped echo scopes by a label the question does not write: it knows what
    the question file knows and a model reading the question does not (the teacher, like the
    student, scopes only by what the question names)."""
    return sum(
        1 for q in questions if entity_scope(teacher.index, q) and not teacher.entity_mention(q)
    )


# The report.


def _interval(values: Mapping[str, float], seed: int) -> Interval | None:
    # Resampled in question-id order, as `_paired` is: the same records give the same interval
    # whatever order the runs were named in.
    return bootstrap_mean([values[q] for q in sorted(values)], seed=seed) if values else None


def _paired(a: Mapping[str, float], b: Mapping[str, float], seed: int) -> Interval | None:
    common = sorted(set(a) & set(b))
    if not common:
        return None
    return paired_difference([a[q] for q in common], [b[q] for q in common], seed=seed)


def section_report(
    chunks: int, rows: Sequence[PolicyScores], *, reference: str | None = None, seed: int = 0
) -> dict[str, Any]:
    """One table: every row's intervals; every row against `reference` (echo@chunks by
    default) on recall, the rows with a model against each other on recall and accuracy, and
    against every other search without a model on recall (is the agent past the teacher's
    searches, past the scoped question?)."""
    report_rows = []
    for row in rows:
        recall = _interval(row.recall, seed)
        accuracy = _interval(row.correct, seed) if row.correct else None
        report_rows.append(
            {
                "policy": row.name,
                "chunks": round(sum(row.chunks.values()) / len(row.chunks), 2)
                if row.chunks
                else None,
                "recall": recall.to_dict() if recall else None,
                "accuracy": accuracy.to_dict() if accuracy else None,
                "n": len(row.chunks),
                "has_model": row.has_model,
                "note": row.note,
                "judge_errors": row.judge_errors,
            }
        )
    named = reference or f"echo@{chunks}"
    base = next((row for row in rows if row.name == named), None)
    pairs = [(row, base) for row in rows if base and row is not base and row.recall]
    models = [row for row in rows if row.has_model and row.correct]
    pairs += [(a, b) for i, a in enumerate(models) for b in models[i + 1 :]]
    searches = [row for row in rows if not row.has_model and row.recall and row is not base]
    pairs += [(a, b) for a in models if a.recall for b in searches]
    paired = []
    for a, b in pairs:
        recall = _paired(a.recall, b.recall, seed)
        accuracy = _paired(a.correct, b.correct, seed) if a.correct and b.correct else None
        if recall is None and accuracy is None:
            continue
        paired.append(
            {
                "policies": [a.name, b.name],
                "recall": recall.to_dict() if recall else None,
                "recall_excludes_zero": recall.excludes(0) if recall else None,
                "accuracy": accuracy.to_dict() if accuracy else None,
                "accuracy_excludes_zero": accuracy.excludes(0) if accuracy else None,
            }
        )
    return {"chunks": chunks, "rows": report_rows, "paired": paired}


def _cell(interval: dict | None, *, note: str = "", n: int | None = None) -> str:
    if interval is None:
        return note or "—"
    text = f"{interval['mean']:.3f} [{interval['low']:.3f}, {interval['high']:.3f}]"
    return text if n is None or interval["n"] == n else f"{text} (n={interval['n']})"


def format_markdown(report: Mapping[str, Any]) -> str:
    """Every section as a Markdown table of the rows, then one of the paired differences."""
    out = []
    for section in report["sections"]:
        out.append(f"### At {section['chunks']} chunks per question\n")
        out.append("| policy | golden recall [95 %] | accuracy [95 %] | chunks / question | n |")
        out.append("|---|---|---|---|---|")
        for row in section["rows"]:
            accuracy = _cell(row["accuracy"], note=row["note"] if row["has_model"] else "—")
            chunks = "—" if row["chunks"] is None else f"{row['chunks']:.2f}"
            out.append(
                f"| {row['policy']} | {_cell(row['recall'], note=row['note'], n=row['n'])} | "
                f"{accuracy} | {chunks} | {row['n'] or '—'} |"
            )
        if section["paired"]:
            out.append("")
            out.append("| paired difference | Δ golden recall [95 %] | Δ accuracy [95 %] |")
            out.append("|---|---|---|")
            for pair in section["paired"]:
                a, b = pair["policies"]
                out.append(
                    f"| {a} − {b} | {_held(pair['recall'], pair['recall_excludes_zero'])} | "
                    f"{_held(pair['accuracy'], pair['accuracy_excludes_zero'])} |"
                )
        out.append("")
    if labelled := report.get("scoped_by_label"):
        out.append(
            f"Scoped echo: {labelled} of {report['questions']} questions do not name their "
            "entity, and are scoped by its label from the question file, which a model reading "
            "the question does not have (the teacher's searches scope only what it names)."
        )
    return "\n".join(out).rstrip() + "\n"


def _held(interval: dict | None, holds: bool | None) -> str:
    if interval is None:
        return "—"
    return _cell(interval) + (" **excludes 0**" if holds else "")
