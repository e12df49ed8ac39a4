"""bench/paired_runs.py: two settings, each pooled over its runs, compared question by question;
a side given as groups (one setting each, e.g. a seed recorded in another form) pooled across."""

import json

import pytest

from bench.paired_runs import main
from engine.evaluation.pooled import RunFolderError
from tests.helpers.recorded_runs import corpus_files, write_run

RIGHT = {"a1": "$5 million", "a2": "$2 million", "b1": "$9 million", "g1": "$4 million"}
FOLDS = (("a1", "a2"), ("b1", "g1"))  # the questions each fold holds out, whatever the seed


def answers(right: set[str]) -> list[dict]:
    """Per fold, its questions' attempts: the true answer for those in `right`, else a wrong one."""
    return [
        {qid: ([], RIGHT[qid] if qid in right else "$1 billion") for qid in fold} for fold in FOLDS
    ]


def runs(folder, trained, *, seed, steps, cold_start=None):
    folder.mkdir(exist_ok=True)
    return [
        write_run(
            folder / f"f{fold}-s{seed}",
            trained[fold],
            seed=seed,
            fold=fold,
            steps=steps,
            cold_start=cold_start[fold] if cold_start else None,
        )
        for fold in (0, 1)
    ]


def accuracy(capsys, *argv) -> dict:
    capsys.readouterr()
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)["accuracy"]


def test_groups_of_a_side_are_pooled_question_by_question_cold_starts_read_as_recorded(
    tmp_path, capsys
):
    index, questions = corpus_files(tmp_path)
    # Seed 0: RL runs whose final evaluation recorded the cold start beside the agent.
    seed0 = runs(
        tmp_path,
        answers(set()),  # the RL agents: all wrong, and not what --a-cold-start reads
        seed=0,
        steps=24,
        cold_start=answers({"a1", "b1"}),
    )
    # Seed 1: runs with no RL step, their final agents their cold starts.
    seed1 = runs(tmp_path, answers({"a2", "b1", "g1"}), seed=1, steps=0)
    everything = runs(tmp_path / "b", answers(set(RIGHT)), seed=0, steps=0)
    common = ["--index", index, "--questions", questions, "--b", *everything]

    row = accuracy(capsys, *common, "--a", *seed0, "--a", *seed1, "--a-cold-start")
    # a1: 1 and 0; a2: 0 and 1; b1: 1 and 1; g1: 0 and 1 → 0.5, 0.5, 1, 0.5 (seed 0 alone
    # 0.5, seed 1 alone 0.75).
    assert row["n"] == 4
    assert row["a"]["mean"] == pytest.approx(0.625)
    assert row["b_minus_a"]["mean"] == pytest.approx(0.375)
    # Seed 0 alone: its cold starts, not its RL agents (which answered nothing right).
    assert accuracy(capsys, *common, "--a", *seed0, "--a-cold-start")["a"]["mean"] == 0.5
    assert accuracy(capsys, *common, "--a", *seed0)["a"]["mean"] == 0.0


def test_runs_of_two_settings_in_one_group_are_refused(tmp_path):
    index, questions = corpus_files(tmp_path)
    rl = runs(tmp_path, answers(set()), seed=0, steps=24)
    bare = runs(tmp_path, answers(set()), seed=1, steps=0)
    with pytest.raises(RunFolderError, match="differ in steps"):
        main(["--index", index, "--questions", questions, "--a", rl[0], bare[1], "--b", *rl])


def test_by_kind_splits_accuracy_by_what_the_truth_asks_read_yes_no_or_other(tmp_path, capsys):
    from tests.helpers.recorded_runs import QUESTIONS, question

    index, questions = corpus_files(tmp_path)
    more = [
        question("a3", "Acme", "Did Acme have more than 30 employees?", "Yes", "ACME_2020", 3,
                 "Acme employees numbered 40 people."),
        question("a4", "Acme", "How many employees did Acme have?", "Forty", "ACME_2020", 3,
                 "Acme employees numbered 40 people."),
    ]  # fmt: skip
    with open(questions, "w") as file:
        file.writelines(json.dumps(q) + "\n" for q in [*QUESTIONS, *more])
    RIGHT.update(a3="Yes", a4="Forty")
    folds = (("a1", "a2", "a3", "a4"), ("b1", "g1"))

    def answered(right):
        return [{q: ([], RIGHT[q] if q in right else "No") for q in fold} for fold in folds]

    try:
        a = runs(tmp_path / "a", answered({"a1", "a4"}), seed=0, steps=0)
        b = runs(tmp_path / "b", answered({"a1", "a2", "b1", "a3"}), seed=0, steps=0)
    finally:
        del RIGHT["a3"], RIGHT["a4"]
    capsys.readouterr()
    common = ["--index", index, "--questions", questions, "--a", *a, "--b", *b]
    assert main([*common, "--by-kind", "--json"]) == 0
    kinds = json.loads(capsys.readouterr().out)["by_kind"]
    # Figures the pages spell are read (a2's "$2 million" has no sound swap on these pages);
    # "Yes" decides one truth; "Forty" no page spells.
    assert {kind: sorted(row["questions"]) for kind, row in kinds.items()} == {
        "read, with a sound swap": ["a1", "b1", "g1"],
        "yes/no": ["a3"],
        "other open": ["a2", "a4"],
    }
    read = kinds["read, with a sound swap"]
    assert (read["a"]["mean"], read["b"]["mean"]) == (0.3333, 0.6667)  # rounded as reported
    assert (read["gained"], read["lost"]) == (1, 0)
    assert (kinds["yes/no"]["gained"], kinds["yes/no"]["lost"]) == (1, 0)
    other = kinds["other open"]
    assert (other["b_minus_a"]["mean"], other["gained"], other["lost"]) == (0.0, 1, 1)
    assert main([*common, "--by-kind"]) == 0
    assert "| yes/no | 0.000 [0.000, 0.000] | 1.000 [1.000, 1.000] |" in capsys.readouterr().out
