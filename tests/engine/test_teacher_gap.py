"""bench/teacher_gap.py: the held-out questions where the teacher's searches find what the
agent's do not, sorted by what the agent wrote as its second search."""

import json

import pytest

from bench.teacher_gap import main
from engine.cli import main as sleuth

PAGES = [
    {
        "doc": "ACME_2020",
        "page": 1,
        "entity": "Acme",
        "text": "Acme revenue in 2020 was $5 million.",
    },
    {
        "doc": "ACME_2020",
        "page": 2,
        "entity": "Acme",
        "text": "Acme spent $2 million on equipment.",
    },
    {
        "doc": "BETA_2020",
        "page": 1,
        "entity": "Beta",
        "text": "Beta spent $3 million on equipment.",
    },
    {"doc": "GAMMA_2020", "page": 1, "entity": "Gamma", "text": "Gamma revenue was $4 million."},
]


def question(qid, entity, text, doc, page, evidence):
    return {"id": qid, "entity": entity, "question": text, "answer": "x",
            "evidence": [{"text": evidence, "doc": doc, "page": page}]}  # fmt: skip


QUESTIONS = [
    question("a1", "Acme", "What was Acme revenue in 2020?", "ACME_2020", 1,
             "Acme revenue in 2020 was $5 million."),
    question("a2", "Acme", "How much did Acme spend on equipment?", "ACME_2020", 2,
             "Acme spent $2 million on equipment."),
    question("b1", "Beta", "How much did Beta spend on equipment?", "BETA_2020", 1,
             "Beta spent $3 million on equipment."),
    question("g1", "Gamma", "What was Gamma revenue?", "GAMMA_2020", 1,
             "Gamma revenue was $4 million."),
]  # fmt: skip

# What the agent wrote and was shown, one chunk a question. a2: Beta's page, then the
# question again with no scope (nothing new); b1: its evidence, then Beta's scope.
SEARCHES = {
    "a1": [("What was Acme revenue in 2020?", ["ACME_2020:p1:c0"])],
    "a2": [
        ("How much did Acme spend on equipment?", ["BETA_2020:p1:c0"]),
        ("How much did Acme spend on equipment?", []),
    ],
    "b1": [
        ("How much did Beta spend on equipment?", ["BETA_2020:p1:c0"]),
        ("[Beta] How much did Beta spend on equipment?", []),
    ],
    "g1": [("What was Gamma revenue?", ["GAMMA_2020:p1:c0"])],
}


def write_run(folder, fold):
    folder.mkdir()
    config = {"seed": 0, "split_seed": None, "folds": 2, "fold": fold, "model": "default"}
    (folder / "config.json").write_text(json.dumps(config))
    records = [
        {
            "policy": "trained",
            "question_id": qid,
            "searches": [{"query": q, "chunk_ids": ids, "malformed": None} for q, ids in s],
            "answer": "x",
        }
        for qid, s in SEARCHES.items()
    ]
    (folder / "eval_trajectories.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(folder)


@pytest.fixture
def recorded(tmp_path) -> list[str]:
    """The index, question file and two fold runs, as `--index`, `--questions` and `--runs`."""
    pages, questions = tmp_path / "pages.jsonl", tmp_path / "questions.jsonl"
    pages.write_text("".join(json.dumps(p) + "\n" for p in PAGES))
    questions.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    assert sleuth(["index", "--docs", str(pages), "--out", str(tmp_path / "idx")]) == 0
    runs = [write_run(tmp_path / f"run-f{fold}", fold) for fold in (0, 1)]
    return ["--index", str(tmp_path / "idx"), "--questions", str(questions), "--runs", *runs]


def test_the_questions_only_the_teacher_finds_are_sorted_by_the_agents_second_search(
    recorded, capsys
):
    capsys.readouterr()

    assert main(recorded) == 0

    differ, every = capsys.readouterr().out.split("\n\n")
    # a2 alone: the teacher's first search, "[Acme] How much …", finds Acme's page; the agent
    # searched without the scope the question names. Every other question: both found it.
    assert differ.splitlines()[2:] == ["| teacher | scoped | no scope | 1 |"]
    # The held-out questions, whatever the fold: a1 and g1 searched once; a2 without the
    # scope; b1 with the teacher's own.
    assert every.splitlines()[2:] == [
        "| scoped | no scope | 1 |",
        "| scoped | no second search | 2 |",
        "| scoped | the teacher's scope | 1 |",
    ]


def test_the_weights_on_their_training_questions_are_counted_beside_the_held_out_ones(
    tmp_path, recorded, capsys
):
    # `sleuth eval --trajectories` of one checkpoint on questions it trained on: a2 now with
    # the teacher's scope; echo's rows are not the agent's and are left out.
    seen = tmp_path / "seen.jsonl"
    searched = [("How much did Acme spend on equipment?", []), ("[Acme]", [])]
    seen.write_text(
        "".join(
            json.dumps({"policy": policy, "question_id": "a2", "answer": "x", "searches": [
                {"query": q, "chunk_ids": ids, "malformed": None} for q, ids in searched
            ]}) + "\n"
            for policy in ("runs/x/final", "echo@5")
        )
    )  # fmt: skip
    capsys.readouterr()

    assert main([*recorded, "--seen", str(seen)]) == 0

    every = capsys.readouterr().out.split("\n\n")[1]
    assert every.splitlines()[2:] == [
        "| scoped | no scope | 1 | 0 |",
        "| scoped | no second search | 2 | 0 |",
        "| scoped | the teacher's scope | 1 | 1 |",
    ]


def test_a_file_of_several_checkpoints_is_refused(tmp_path):
    from bench.teacher_gap import seen_queries

    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(
        "".join(
            json.dumps({"policy": p, "question_id": "a1", "searches": []}) + "\n"
            for p in ("runs/a/final", "runs/b/final", "base")
        )
    )
    with pytest.raises(SystemExit, match="runs/a/final.*runs/b/final"):
        seen_queries(str(mixed))
