"""Entity folds and bootstrap intervals: the ruler that pooled evaluation is read with."""

from collections import Counter

import numpy as np
import pytest

from engine.documents.questions import Question
from engine.evaluation.folds import entity_folds, fold_split, train_val_split
from engine.evaluation.stats import bootstrap_mean, paired_difference, pool_seeds


def questions_of(sizes: dict[str | None, int]) -> list[Question]:
    out = []
    for entity, n in sizes.items():
        for i in range(n):
            qid = f"{entity}-{i}"
            out.append(
                Question(id=qid, question=f"q {qid}", answer="1", entity=entity, evidence=[])
            )
    return out


SIZES = {"A": 9, "B": 7, "C": 6, "D": 5, "E": 5, "F": 4, "G": 4, "H": 3, "I": 2, "J": 1, None: 3}


def test_every_question_is_in_exactly_one_fold():
    questions = questions_of(SIZES)
    folds = entity_folds(questions, 4, seed=0)
    ids = Counter(q.id for fold in folds for q in fold)
    assert set(ids) == {q.id for q in questions}
    assert set(ids.values()) == {1}


def test_an_entity_is_never_split_across_folds():
    folds = entity_folds(questions_of(SIZES), 4, seed=1)
    for entity in "ABCDEFGHIJ":
        holding = [i for i, fold in enumerate(folds) if any(q.entity == entity for q in fold)]
        assert len(holding) == 1, entity


def test_folds_are_balanced_by_question_count():
    folds = entity_folds(questions_of(SIZES), 4, seed=2)
    sizes = [len(fold) for fold in folds]
    # 49 questions in 4 folds: greedy largest-first keeps them within the largest entity
    assert max(sizes) - min(sizes) <= max(SIZES.values())
    assert max(sizes) - min(sizes) <= 2  # and here, much closer
    assert sum(sizes) == sum(SIZES.values())


def test_folds_are_deterministic_for_a_seed_and_change_with_it():
    questions = questions_of(SIZES)
    first = [[q.id for q in fold] for fold in entity_folds(questions, 3, seed=5)]
    assert first == [[q.id for q in fold] for fold in entity_folds(questions, 3, seed=5)]
    others = {
        tuple(tuple(q.id for q in fold) for fold in entity_folds(questions, 3, seed=s))
        for s in range(6)
    }
    assert len(others) > 1


def test_more_folds_than_entities_is_refused_with_a_reason():
    with pytest.raises(ValueError, match="need at least 3 entities"):
        entity_folds(questions_of({"A": 4, "B": 4}), 3)
    with pytest.raises(ValueError, match="at least 2"):
        entity_folds(questions_of({"A": 4, "B": 4}), 1)


def test_fold_split_holds_out_one_fold_and_trains_on_the_rest():
    questions = questions_of(SIZES)
    folds = entity_folds(questions, 4, seed=0)
    held = set()
    for i in range(4):
        train, val = fold_split(questions, 4, i, seed=0)
        assert [q.id for q in val] == [q.id for q in folds[i]]
        assert not {q.entity for q in train if q.entity} & {q.entity for q in val if q.entity}
        assert len(train) + len(val) == len(questions)
        held |= {q.id for q in val}
    assert held == {q.id for q in questions}
    with pytest.raises(ValueError, match="fold must be from 0 to 3"):
        fold_split(questions, 4, 4)


def test_without_folds_the_run_split_is_the_usual_entity_split():
    from engine.documents.questions import split_by_entity

    questions = questions_of(SIZES)
    assert train_val_split(questions, val_fraction=0.25, seed=3) == split_by_entity(
        questions, 0.25, 3
    )


def test_a_constant_score_has_a_zero_width_interval():
    interval = bootstrap_mean([1.0] * 40)
    assert (interval.mean, interval.low, interval.high, interval.n) == (1.0, 1.0, 1.0, 40)


def test_identical_policies_differ_by_exactly_zero():
    scores = np.random.default_rng(0).random(50)
    interval = paired_difference(scores, scores)
    assert (interval.mean, interval.low, interval.high) == (0.0, 0.0, 0.0)
    assert not interval.excludes(0)


def test_a_half_right_set_of_a_hundred_has_the_normal_interval():
    # mean 0.5, standard error 0.05: about 0.5 ± 0.098
    interval = bootstrap_mean([1.0, 0.0] * 50)
    assert interval.mean == 0.5
    assert interval.low == pytest.approx(0.402, abs=0.015)
    assert interval.high == pytest.approx(0.598, abs=0.015)


def test_the_interval_narrows_with_more_questions():
    widths = []
    for n in (20, 80, 320):
        interval = bootstrap_mean([1.0, 0.0, 0.0, 0.0] * (n // 4))
        widths.append(interval.high - interval.low)
    assert widths[0] > widths[1] > widths[2]
    assert widths[0] / widths[2] == pytest.approx(4, rel=0.2)  # as 1/sqrt(n)


def test_a_paired_difference_is_narrower_than_the_unpaired_intervals():
    rng = np.random.default_rng(1)
    hardness = rng.random(60)  # what the questions share
    a = (hardness + 0.10 > 0.5).astype(float)
    b = (hardness > 0.5).astype(float)
    diff = paired_difference(a, b)
    assert diff.mean == pytest.approx(a.mean() - b.mean())
    alone = bootstrap_mean(a)
    assert diff.high - diff.low < alone.high - alone.low
    assert diff.excludes(0)  # a gains on 6 questions and loses on none


def test_the_same_scores_give_the_same_interval():
    scores = np.random.default_rng(2).random(30)
    assert bootstrap_mean(scores, seed=4) == bootstrap_mean(scores, seed=4)


def test_paired_scores_must_be_on_the_same_questions():
    with pytest.raises(ValueError, match="same questions"):
        paired_difference([1.0, 0.0], [1.0])


def test_seeds_are_averaged_per_question_before_resampling():
    pooled = pool_seeds([{"q1": 1.0, "q2": 0.0}, {"q1": 0.0, "q3": 1.0}])
    assert pooled == {"q1": 0.5, "q2": 0.0, "q3": 1.0}
