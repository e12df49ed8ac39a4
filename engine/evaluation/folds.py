"""Entity folds: every question held out exactly once, by a model that never trained on its entity.

One validation split of 21-25 questions moves by 0.04-0.05 with a single question, too coarse to
choose a setting with. k folds evaluate every question of the development set once (each by the
run that held its fold out), so pooled over the folds the whole set counts, with an interval.

An entity's questions stay in one fold (the same rule as `split_by_entity`): a fold's run never
saw the entity's documents through its questions. Folds are filled largest entity first, each
into the fold holding fewest questions, so they are balanced by question count (they differ by
at most the largest entity's questions); which of equally sized entities goes where follows
`seed`, so a different seed gives different folds.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TypeVar

from engine.documents.questions import entity_key, split_by_entity

Q = TypeVar("Q")


def entity_folds(questions: Sequence[Q], k: int, seed: int = 0) -> list[list[Q]]:
    """`questions` in `k` folds, each in the file's order; see the module's note.

    Raises ValueError when k is below 2 or above the number of entities (a fold would be
    empty)."""
    groups: dict[str, list[Q]] = {}
    for q in questions:
        groups.setdefault(entity_key(q), []).append(q)
    if k < 2:
        raise ValueError(f"folds must be at least 2, not {k}")
    if k > len(groups):
        raise ValueError(
            f"{k} folds need at least {k} entities; the questions name {len(groups)}: "
            "use fewer folds"
        )
    keys = sorted(groups)
    random.Random(seed).shuffle(keys)
    # Stable sort: equal sizes keep the shuffled order.
    keys.sort(key=lambda key: -len(groups[key]))
    fold_of: dict[str, int] = {}
    sizes = [0] * k
    for key in keys:
        fold = min(range(k), key=lambda i: (sizes[i], i))
        fold_of[key] = fold
        sizes[fold] += len(groups[key])
    folds: list[list[Q]] = [[] for _ in range(k)]
    for q in questions:
        folds[fold_of[entity_key(q)]].append(q)
    return folds


def fold_split(
    questions: Sequence[Q], folds: int, fold: int, seed: int = 0
) -> tuple[list[Q], list[Q]]:
    """(train, val): fold `fold` (0-based) of `folds` held out, the other folds trained on."""
    if not 0 <= fold < folds:
        raise ValueError(f"fold must be from 0 to {folds - 1} (of {folds} folds), not {fold}")
    held = entity_folds(questions, folds, seed)[fold]
    held_ids = {id(q) for q in held}
    return [q for q in questions if id(q) not in held_ids], held


def train_val_split(
    questions: Sequence[Q],
    *,
    val_fraction: float,
    seed: int,
    folds: int = 0,
    fold: int = 0,
) -> tuple[list[Q], list[Q]]:
    """A run's (train, val): fold `fold` of `folds` held out when `folds` is set, else whole
    entities making up `val_fraction` of the questions (`split_by_entity`)."""
    if folds:
        return fold_split(questions, folds, fold, seed)
    return split_by_entity(list(questions), val_fraction, seed)


def sample_questions(questions: Sequence[Q], n: int, seed: int = 0) -> list[Q]:
    """A fixed random sample of `n` questions, in their order (all of them when `n` is 0 or
    covers them): a large validation set evaluated within a run's clock, the rest after it."""
    if not n or n >= len(questions):
        return list(questions)
    chosen = set(random.Random(seed).sample(range(len(questions)), n))
    return [q for i, q in enumerate(questions) if i in chosen]
