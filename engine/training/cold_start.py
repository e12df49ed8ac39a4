"""The cold start: what the student imitates before RL, and the imitation itself.

The scripted teacher (`training.teacher`) writes a correct trajectory for every training
question its searches reach; a synthetic curriculum adds questions read off the training
entities' own documents (never a validation entity's); search drills add first searches for
the questions it could not answer, and with a pack's say, scoped copies on made-up names.
The student is fine-tuned on them (`sft`) for `sft_epochs`, or until the cold start's share
of the run's clock is spent (DGPO, Kotoge et al. 2025: a 0.1B student gets no reward to learn
from otherwise). The same teacher trajectories are DGPO's targets in the RL loop (`rl`).
"""

import dataclasses
import random
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from engine.agent.trajectory import Trajectory
from engine.documents.questions import Question
from engine.documents.synthesis import READING_KINDS
from engine.packs import synthesis_kinds, synthesized_questions
from engine.rewards.text import polarity
from engine.search.index import SearchIndex
from engine.training.config import TrainConfig
from engine.training.counterfactual import Counterfactuals, counterfactual, results_swapped
from engine.training.distributed import SINGLE, Ranks
from engine.training.sft import sft
from engine.training.teacher import (
    ScriptedTeacher,
    name_sections,
    scope_drills,
    section_phrases,
    teacher_trajectories,
)


def synthetic_curriculum(
    index: SearchIndex,
    train_questions: Sequence[Question],
    config: TrainConfig,
    n: int | None = None,
) -> list[Question]:
    """`n` questions (default `config.synthetic_questions`) from the training entities'
    documents only: a validation entity's documents never feed training. The generic kinds,
    and the run's pack's in the mix of the customer's own questions (a filing's yes/no and
    "what drove" questions as often as theirs: the question kinds, and the answers a student
    cannot yet read the reason for, are the customer's)."""
    n = config.synthetic_questions if n is None else n
    if not n:
        return []
    entities = {q.entity for q in train_questions if q.entity}
    chunks = [c for c in index.chunks if c.entity in entities]
    return synthesized_questions(
        config.pack,
        chunks,
        n,
        config.seed,
        # The reading kind too, if asked for.
        kinds=synthesis_kinds(config.pack) + (READING_KINDS if config.completion_questions else ()),
        asked=train_questions,
    )


def rl_own_questions(
    index: SearchIndex,
    train_questions: Sequence[Question],
    config: TrainConfig,
    imitated: Sequence[Question],
) -> list[Question]:
    """`config.rl_synthetic_questions` more synthetic questions, none of them the cold
    start's (`imitated`), marked `rl_only`: RL's samples on questions the student has never
    been shown, so that what it learns is to read the results, not the answers of the few
    questions it sees again and again. A larger draw of the same synthesis holds the smaller
    one, so the cold start's questions stay the same with or without these."""
    if not config.rl_synthetic_questions:
        return []
    shown = {q.id for q in imitated} | {q.question for q in imitated}
    drawn = synthetic_curriculum(
        index, train_questions, config, n=config.synthetic_questions + config.rl_synthetic_questions
    )
    fresh = [q for q in drawn if q.id not in shown and q.question not in shown]
    return [dataclasses.replace(q, meta={**q.meta, "rl_only": True}) for q in fresh]


def teacher_data(
    engine, index: SearchIndex, train_questions: Sequence[Question], config: TrainConfig, log
) -> tuple[ScriptedTeacher, dict[str, Trajectory], dict[str, Question]]:
    """The scripted teacher, its correct trajectory for every question it reaches (the
    cold start's data and DGPO's target), and the questions RL samples from by id: the
    training questions and the synthetic ones the teacher reaches (RL's own among them,
    `rl_only` in their meta, which the cold start leaves out)."""
    teacher = ScriptedTeacher(
        index,
        results_per_search=config.limits.results_per_search,
        first_results_per_search=config.limits.first_results_per_search,
        heading_search=config.heading_search,
        refine_search=config.refine_search,
        refine_always=config.refine_always,
        refine_terms=config.refine_terms,
        scoped_first_search=config.scoped_first_search,
        section_search=config.section_search,
        quoted_answers=config.quoted_answers,
        scope_years=config.scope_years,
        statement_names=config.statement_names,
    )
    synthetic = synthetic_curriculum(index, train_questions, config)
    rl_own = rl_own_questions(index, train_questions, config, synthetic)
    if (synthetic or rl_own) and config.synthetic_sections and config.section_search:
        phrases = section_phrases(teacher, train_questions)
        synthetic = name_sections(teacher, synthetic, phrases, seed=config.seed)
        rl_own = name_sections(teacher, rl_own, phrases, seed=config.seed)
        log(
            f"section phrases: {len(phrases)} from the training questions, given to "
            f"{sum('section_phrase' in q.meta for q in [*synthetic, *rl_own])} synthetic questions"
        )
    # From what the cold start imitates only: with or without RL's own questions, the same.
    teacher.learn_boilerplate([*train_questions, *synthetic])
    teacher_for = teacher_trajectories(engine, teacher, train_questions)
    log(
        f"scripted teacher: correct trajectories for {len(teacher_for)}/{len(train_questions)} "
        "training questions"
    )
    by_id = {q.id: q for q in train_questions}
    if synthetic:
        taught = teacher_trajectories(engine, teacher, synthetic, readable_answers=True)
        # Only questions the teacher reaches, and reads the answer of: near-impossible ones
        # teach shortcuts.
        synthetic = [q for q in synthetic if q.id in taught]
        teacher_for |= taught
        by_id |= {q.id: q for q in synthetic}
        kinds = Counter(q.meta.get("source", "?").removeprefix("offline-") for q in synthetic)
        log(
            f"synthetic curriculum: {len(synthetic)} questions the teacher answers from the "
            f"training entities' documents (by kind: {dict(sorted(kinds.items()))}; "
            f"{sum(bool(polarity(q.answer)) for q in synthetic)} yes/no), "
            f"{sum(len(t.valid_searches) > 1 for t in taught.values())} of them taught with "
            "a second, refined search"
        )
    if rl_own:
        # Checked as the cold start's are (the teacher reaches them and reads their answer),
        # never imitated: `rl_only` in their meta keeps them out of the cold start.
        reached = teacher_trajectories(engine, teacher, rl_own, readable_answers=True)
        rl_own = [q for q in rl_own if q.id in reached]
        teacher_for |= reached
        by_id |= {q.id: q for q in rl_own}
        log(f"RL's own synthetic questions: {len(rl_own)} the teacher answers, never imitated")
    return teacher, teacher_for, by_id


def cold_start_set(
    engine,
    teacher: ScriptedTeacher,
    teacher_for: dict[str, Trajectory],
    by_id: dict[str, Question],
    train_questions: Sequence[Question],
    config: TrainConfig,
    log,
) -> list[Trajectory]:
    """What the cold start imitates: the teacher's whole trajectories and its scope drills,
    first searches (a question set whose evidence its searches never reach still teaches
    the search)."""
    drills = scope_drills(  # the synthetic questions name the training companies too
        engine,
        teacher,
        list(by_id.values()),
        per_question=config.scope_drills,
        seed=config.seed,
        taught=frozenset(teacher_for),
    )
    drills += scope_drills(  # made-up names only: the real ones are above
        engine,
        teacher,
        train_questions,
        per_question=config.customer_scope_drills,
        seed=config.seed + 1,
        taught=frozenset(q.id for q in train_questions),
    )
    if drills:
        asked = {q.question for q in by_id.values()}
        made_up = sum(d.question not in asked for d in drills)
        log(
            f"search drills: {len(drills)}, {made_up} of them on made-up names, "
            f"{sum(bool(d.searches) for d in drills)} going on to a second "
            "search (the part of the document the question names, else the key terms "
            f"{'always' if config.refine_always else 'after a miss'})"
        )
    copies = counterfactual_copies(
        engine,
        teacher,
        [by_id[qid] for qid in teacher_for],
        config.cold_start_counterfactuals,
        seed=config.seed,
    )
    if copies:
        log(
            f"counterfactual copies: {len(copies)} of the {len(teacher_for)} taught questions "
            "taught again against results with their answer's words swapped"
        )
    repeats = []
    if config.cold_start_counterfactual_repeats and copies:
        unread = answers_not_read(teacher.index, [by_id[qid] for qid in teacher_for])
        repeats = [teacher_for[q.id] for q in drawn(unread, len(copies), config.seed)]
        log(
            f"beside them, {len(repeats)} taught again as they are, of the {len(unread)} "
            "whose answer no word of their results spells"
        )
    return [*teacher_for.values(), *drills, *copies, *repeats]


def counterfactual_copies(
    engine, teacher: ScriptedTeacher, taught: Sequence[Question], share: float, seed: int
) -> list[Trajectory]:
    """The teacher's trajectory again for `share` of the `taught` questions with a sound swap
    (training.counterfactual), its results and its answer saying the stand-ins: the same
    question now has two answers, told apart only by what the results say. Imitated three
    epochs over, a question's answer is otherwise learnt as its question's, which no held-out
    question shares."""
    if not share:
        return []
    swaps = Counterfactuals(taught, teacher.index).choose(taught, share, seed)
    posed = [counterfactual(q, swaps[q.id]) for q in taught if q.id in swaps]
    with results_swapped(engine, {q.question: swaps[q.id] for q in posed}):
        return list(teacher_trajectories(engine, teacher, posed).values())


def answers_not_read(index: SearchIndex, taught: Sequence[Question]) -> list[Question]:
    """The `taught` questions whose truth has no word to read in their golden chunks (a
    verdict, a count said in words, a sentence: `Counterfactuals.words_read`). Taught again
    beside the copies (`TrainConfig.cold_start_counterfactual_repeats`), they keep the share of
    answers that must be inferred as it was: the copies alone double the answers read, and a
    student then wrote a word of its results where the answer was not one."""
    swaps = Counterfactuals(taught, index)
    return [q for q in taught if not swaps.words_read(q, swaps.text_of(q)[0])]


def drawn(questions: Sequence[Question], n: int, seed: int) -> list[Question]:
    """`n` of `questions`, seeded, each once before any is drawn twice."""
    rng = random.Random(seed)
    chosen: list[Question] = []
    while questions and len(chosen) < n:
        chosen += rng.sample(list(questions), min(len(questions), n - len(chosen)))
    return chosen


@dataclass
class ColdStartReport:
    """What the cold start ran on this machine: its micro-batches, the epochs they make and
    the seconds each took (None when nothing ran)."""

    batches: int = 0
    epochs: float = 0.0
    seconds_per_batch: float | None = None


def cold_start(
    model,
    trajectories: Sequence[Trajectory],
    config: TrainConfig,
    *,
    precision: str,
    pad_id: int,
    deadline: float | None,
    progress: bool,
    check: Callable[[], None],
    log,
    ranks: Ranks = SINGLE,
) -> ColdStartReport:
    """SFT on the teacher's trajectories for `config.sft_epochs`, or until `deadline` (the
    cold start's share of the training budget)."""
    if not trajectories:
        return ColdStartReport()
    started = time.monotonic()
    taught = []  # trajectories in each micro-batch
    losses = sft(
        model,
        trajectories,
        epochs=config.sft_epochs,
        lr=config.sft_lr,
        warmdown=config.sft_warmdown,
        answer_weight=config.sft_answer_weight,
        max_batch_tokens=config.max_batch_tokens,
        pad_id=pad_id,
        seed=config.seed,
        progress=progress,
        deadline=deadline,
        precision=precision,
        check=check,
        on_step=lambda record: taught.append(record["trajectories"]),
        ranks=ranks,
    )
    log("cold start SFT loss per epoch: " + ", ".join(f"{x:.3f}" for x in losses))
    if not taught:
        return ColdStartReport()
    return ColdStartReport(
        batches=len(taught),
        epochs=sum(taught) / len(trajectories),
        seconds_per_batch=(time.monotonic() - started) / len(taught),
    )
