"""Accuracy, the share of answers judged correct, reported apart from the reward's
partial-credit answer_score."""

from dataclasses import dataclass, field

from engine.agent.trajectory import Trajectory
from engine.evaluation.metrics import summarize
from engine.rewards.judge import JudgeError, OfflineJudge, Verdict

QUESTION = "What is the FY2018 capital expenditure amount (in USD millions) for 3M?"


@dataclass
class Question:
    question: str = QUESTION
    answer: str = "$1577.00"
    golden_chunk_ids: list = field(default_factory=list)
    id: str = "q1"


def answered(answer: str | None) -> Trajectory:
    return Trajectory(
        question=QUESTION, answer=answer, finish_reason="answer" if answer else "no_answer"
    )


class PartialJudge:
    """A judge that gives every wrong answer half credit, as a reward's shaping may."""

    def judge(self, question: str, ground_truth: str, answer: str) -> Verdict:
        right = answer == "$1,577 million"
        return Verdict(correct=right, score=1.0 if right else 0.5, reason="", prompt_id="p")


class FailingJudge:
    def judge(self, question: str, ground_truth: str, answer: str) -> Verdict:
        raise JudgeError("unreachable")


def test_accuracy_counts_correct_verdicts_not_partial_credit():
    questions = [Question(), Question(id="q2"), Question(id="q3"), Question(id="q4")]
    samples = [[answered("$1,577 million")], [answered("$1,600 million")], [answered("12")], []]
    samples[3] = [answered(None)]
    metrics = summarize(questions, samples, PartialJudge(), len)
    assert metrics["accuracy"] == 0.25
    assert metrics["answer_score"] == round((1.0 + 0.5 + 0.5 + 0.0) / 4, 4)


def test_an_answer_the_judge_could_not_score_is_not_correct():
    metrics = summarize([Question()], [[answered("$1,577 million")]], FailingJudge(), len)
    assert (metrics["accuracy"], metrics["judge_errors"]) == (0.0, 1)


def test_eval_trajectories_keep_the_verdict():
    right, wrong = answered("$1,577 million"), answered("Total capex 1,577 1,373 1,420")
    summarize([Question(), Question(id="q2")], [[right], [wrong]], OfflineJudge(), len)
    assert (right.to_dict()["correct"], wrong.to_dict()["correct"]) == (True, False)
