"""Counterfactual questions: RL asks a question against results whose answer words are
swapped for others of the same shape, so that only reading the results is rewarded."""

import random
from dataclasses import dataclass

from engine.documents.questions import Evidence, Question
from engine.search.index import SearchHit
from engine.training import rl
from engine.training.counterfactual import (
    SwappedResults,
    choose_swaps,
    counterfactual,
    stand_ins,
    swap_text,
    swappable_words,
    vocabulary,
)
from tests.helpers.toy import FACTS, config, run_training


def ask(question: str, answer: str, evidence: str, qid: str = "q") -> Question:
    return Question(qid, question, answer, None, [Evidence(evidence)])


MANUAL = [
    ask(
        "Which exception does a failed assert raise?",
        "AssertionError",
        "A failed assert statement raises AssertionError.",
        "assert",
    ),
    ask(
        "What does dividing by zero raise?",
        "ZeroDivisionError",
        "Division by zero raises ZeroDivisionError; an unknown name raises NameError.",
        "zero",
    ),
    ask(
        "How many bolts hold the bracket?",
        "4 bolts",
        "The bracket is held by 4 bolts of 1,250 mm, torqued to 3.5 Nm.",
        "bolts",
    ),
    ask("Is the bracket made of steel?", "No, aluminium", "The bracket is aluminium.", "yn"),
]


def test_the_words_read_are_the_truths_that_its_evidence_holds_and_the_question_does_not():
    assert swappable_words(MANUAL[0]) == ["AssertionError"]
    assert swappable_words(MANUAL[2]) == ["4"]  # "bolts" is in the question: nothing to read
    # A truth decided by yes or no is not swapped: no result spells its decisive word.
    assert swappable_words(MANUAL[3]) == []
    # Nor a word the evidence does not hold whole ("3" is inside "3.5").
    assert swappable_words(ask("Torque?", "3 Nm", "torqued to 3.5 Nm")) == []


def test_a_stand_in_has_the_words_shape_and_a_figure_keeps_its_separators():
    pool = vocabulary(MANUAL)
    rng = random.Random(0)
    pairs = stand_ins(MANUAL[0], ["AssertionError"], pool, rng)
    # another ...Error the question, truth and evidence do not hold
    assert pairs == [("AssertionError", "ZeroDivisionError")] or pairs == [
        ("AssertionError", "NameError")
    ]
    figure = stand_ins(ask("Span?", "1,250 mm", "a span of 1,250 mm"), ["1,250"], pool, rng)
    ((old, new),) = figure
    assert old == "1,250" and new != old and len(new) == 5 and new[1] == "," and new[0] != "0"


def test_a_swap_replaces_whole_words_at_once():
    text = "raises ValueError (not ValueErrors); 4 of 14 bolts, 4.5 Nm"
    pairs = [("ValueError", "TypeError"), ("4", "7"), ("TypeError", "KeyError")]
    assert swap_text(text, pairs) == "raises TypeError (not ValueErrors); 7 of 14 bolts, 4.5 Nm"


def test_the_counterfactual_question_says_the_stand_in_in_its_truth_and_evidence():
    posed = counterfactual(MANUAL[2], [("4", "9")])
    assert posed.answer == "9 bolts" and posed.question == MANUAL[2].question
    assert posed.evidence[0].text.startswith("The bracket is held by 9 bolts of 1,250 mm")
    assert posed.meta["swapped"] == [["4", "9"]] and MANUAL[2].answer == "4 bolts"


def test_the_share_chooses_the_questions_asked_counterfactually():
    pool = vocabulary(MANUAL)
    assert choose_swaps(MANUAL, 0.0, pool, seed=1) == {}
    every = choose_swaps(MANUAL, 1.0, pool, seed=1)
    assert set(every) == {"assert", "zero", "bolts"}  # the yes/no question has nothing to swap
    assert choose_swaps(MANUAL, 1.0, pool, seed=1) == every  # seeded: every rank agrees


@dataclass
class Hits:
    hits: list
    names_company = staticmethod(lambda word: word == "acme")

    def search(self, query, k=5, question=""):
        return self.hits[:k]


def test_the_tool_swaps_the_results_of_the_questions_named_only():
    hit = SearchHit("c1", 1.0, "manual", 1, None, "raises AssertionError here")
    tool = SwappedResults(Hits([hit]), {"Q1?": [("AssertionError", "NameError")]})
    assert [h.text for h in tool.search("assert", 3, question="Q1?")] == ["raises NameError here"]
    assert tool.search("assert", 3, question="Q2?") == [hit]
    assert hit.text == "raises AssertionError here"  # the index's own hit is untouched
    assert tool.names_company("acme")  # what else the tool has is the wrapped tool's
    assert not hasattr(tool, "reading_filters")


def test_rl_asks_every_group_against_swapped_results_and_rewards_the_stand_in(
    tmp_path, monkeypatch
):
    scored, shown = [], {}
    real_score, real_rollouts = rl.score, rl.rollout_share

    def rollout_share(engine, questions, sampling, ranks):
        for text in questions:  # what the engine's tool shows while the step samples
            shown[text] = {h.chunk_id: h.text for h in engine.tool.search(text, 8, question=text)}
        return real_rollouts(engine, questions, sampling, ranks)

    def score(trajectories, questions, cfg, judge):  # the round just sampled, and its truths
        scored.extend((q, shown[q.question][q.golden_chunk_ids[0]].split()) for q in questions)
        return real_score(trajectories, questions, cfg, judge)

    monkeypatch.setattr(rl, "score", score)
    monkeypatch.setattr(rl, "rollout_share", rollout_share)
    cfg = config(steps=3, questions_per_step=2, group_size=2, counterfactual_share=1.0)
    _, metrics = run_training(tmp_path, cfg)

    assert [m["counterfactual_groups"] for m in metrics] == [2, 2, 2]
    assert all(m["dgpo_groups"] == 0 for m in metrics)  # the teacher's truth is the real one
    assert len(scored) == 12
    for question, golden in scored:
        real_value = FACTS[question.id][2]
        ((old, new),) = question.meta["swapped"]
        assert old == real_value and question.answer == new != real_value
        assert new in golden and real_value not in golden


def test_without_the_share_rl_asks_the_questions_as_they_are(tmp_path, monkeypatch):
    scored = []
    real = rl.score

    def score(trajectories, questions, cfg, judge):
        scored.extend(questions)
        return real(trajectories, questions, cfg, judge)

    monkeypatch.setattr(rl, "score", score)
    _, metrics = run_training(tmp_path, config(steps=2))
    assert {m["counterfactual_groups"] for m in metrics} == {0}
    assert scored and all(q.answer == FACTS[q.id][2] and not q.meta for q in scored)
