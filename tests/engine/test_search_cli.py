"""`sleuth index`, `sleuth search` and `sleuth retrieval-eval` from the command line."""

import json

from engine.cli import main

PAGES = [
    {
        "doc": "ACME_2020_10K",
        "page": 1,
        "company": "Acme",
        "text": "Acme revenue in 2020 was $5 million.",
    },
    {
        "doc": "ACME_2020_10K",
        "page": 2,
        "company": "Acme",
        "text": "Purchases of equipment were $2 million.",
    },
    {
        "doc": "BETA_2020_10K",
        "page": 1,
        "company": "Beta",
        "text": "Beta revenue in 2020 was $9 million.",
    },
]
QUESTIONS = [
    {
        "id": "q1",
        "company": "Acme",
        "question": "What was Acme revenue in 2020?",
        "answer": "$5 million",
        "evidence": [
            {"text": "Acme revenue in 2020 was $5 million.", "doc": "ACME_2020_10K", "page": 0}
        ],
    },
    {
        "id": "q2",
        "company": "Acme",
        "question": "How much did Acme spend on capex in 2020?",
        "answer": "$2 million",
        "evidence": [
            {"text": "Purchases of equipment were $2 million.", "doc": "ACME_2020_10K", "page": 1}
        ],
    },
]


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


def test_index_then_search_then_echo_baseline(tmp_path, capsys):
    pages = write_jsonl(tmp_path / "pages.jsonl", PAGES)
    questions = write_jsonl(tmp_path / "questions.jsonl", QUESTIONS)
    assert main(["index", "--docs", pages, "--out", str(tmp_path / "idx")]) == 0
    assert "3 chunks" in capsys.readouterr().out

    assert main(["search", "--index", str(tmp_path / "idx"), "Beta revenue", "-k", "1"]) == 0
    assert capsys.readouterr().out.startswith("[BETA_2020_10K:p1:c0] BETA_2020_10K | page 1")

    assert (
        main(
            [
                "retrieval-eval",
                "--index",
                str(tmp_path / "idx"),
                "--questions",
                questions,
                "--k",
                "1,3",
                "--json",
            ]
        )
        == 0
    )
    result = json.loads(capsys.readouterr().out)
    # q1 echoes its evidence; q2 says "capex" where the page says "purchases of equipment",
    # so its page only comes up on the entity's name, behind q1's.
    assert result["recall@1"] == 0.5 and result["recall@3"] == 1.0
    assert result["evidence_mapped"] == 1.0


def test_missing_index_is_a_clear_user_error(tmp_path, capsys):
    assert main(["search", "--index", str(tmp_path / "nope"), "revenue"]) == 2
    err = capsys.readouterr().err
    assert "not a search index" in err and "Traceback" not in err


def test_a_filter_naming_nothing_in_the_index_is_said_so_with_the_names_nearby(tmp_path, capsys):
    pages = write_jsonl(tmp_path / "pages.jsonl", PAGES)
    main(["index", "--docs", pages, "--out", str(tmp_path / "idx")])
    capsys.readouterr()
    index = str(tmp_path / "idx")

    assert main(["search", "--index", index, "revenue", "--entity", "Acm"]) == 2
    err = capsys.readouterr().err
    assert "no entity named 'Acm'" in err and "did you mean 'Acme'" in err
    assert main(["search", "--index", index, "revenue", "--doc", "BETA_2020"]) == 2
    err = capsys.readouterr().err
    assert "no doc named 'BETA_2020'" in err and "did you mean 'BETA_2020_10K'" in err
    # A name the index holds filters as before.
    assert main(["search", "--index", index, "revenue", "--entity", "Beta", "-k", "3"]) == 0
    assert capsys.readouterr().out.startswith("[BETA_2020_10K:p1:c0]")


def test_bad_question_file_is_a_clear_user_error(tmp_path, capsys):
    pages = write_jsonl(tmp_path / "pages.jsonl", PAGES)
    main(["index", "--docs", pages, "--out", str(tmp_path / "idx")])
    bad = write_jsonl(tmp_path / "q.jsonl", [{"question": "no answer?"}])
    code = main(["retrieval-eval", "--index", str(tmp_path / "idx"), "--questions", bad, "--json"])
    assert code == 2
    assert "line 1: no answer" in capsys.readouterr().err


def test_a_reader_that_stops_early_is_no_error(tmp_path):
    # `sleuth search … | head` printed a BrokenPipeError traceback: the output outgrew the
    # pipe's buffer after the reader had gone.
    import subprocess
    import sys
    from pathlib import Path

    pages = tmp_path / "pages.jsonl"
    text = "Acme revenue grew again this year. " * 20
    pages.write_text(
        "".join(json.dumps({"doc": f"D{i}", "page": 1, "text": text}) + "\n" for i in range(300))
    )
    assert main(["index", "--docs", str(pages), "--out", str(tmp_path / "idx")]) == 0
    search = subprocess.Popen(
        [sys.executable, "-m", "engine.cli", "search", "--index", str(tmp_path / "idx"),
         "revenue", "-k", "300"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=Path(__file__).parents[2],
    )  # fmt: skip
    assert search.stdout.readline()  # the reader takes one line, then stops reading
    search.stdout.close()
    error = search.stderr.read().decode()
    assert search.wait(timeout=120) == 0, error
    assert "Traceback" not in error
