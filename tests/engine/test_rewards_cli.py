"""`sleuth reward preview`: every component per answer, in the answers' order."""

import json
from pathlib import Path

import pytest

from engine.cli import main

DATASETS = Path(__file__).parents[2].parent / "shared" / "datasets"

QUESTION = {
    "id": "q-capex",
    "company": "3M",
    "question": "What is the FY2018 capital expenditure amount (in USD millions) for 3M?",
    "answer": "$1577.00",
    "evidence": [{"text": "Purchases of property, plant and equipment (1,577)", "page": 59}],
    "golden_chunk_ids": ["3m#p60"],
}


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.fixture
def questions(tmp_path):
    return write_jsonl(tmp_path / "questions.jsonl", [QUESTION])


def preview(capsys, *args) -> tuple[int, str, str]:
    code = main(["reward", "preview", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_output_lists_each_answer_with_its_components_in_order(tmp_path, questions, capsys):
    answers = write_jsonl(
        tmp_path / "answers.jsonl",
        [
            {
                "id": "q-capex",
                "answer": "$1,577 million",
                "searches": 2,
                "retrieved_chunk_ids": ["3m#p12", "3m#p60"],
            },
            {"id": "q-capex", "answer": "$1,577 billion", "searches": 2, "retrieved_chunk_ids": []},
        ],
    )
    code, out, _ = preview(capsys, "--questions", questions, "--answers", answers, "--json")
    assert code == 0
    rows = json.loads(out)
    assert [set(r) for r in rows] == [{"id", "total", "components"}] * 2
    assert rows[0]["total"] == pytest.approx(1.0)
    assert rows[0]["components"]["golden_recall"] == 1.0
    assert rows[1]["components"]["correctness"] == 0.0
    assert rows[1]["total"] < rows[0]["total"]


def test_the_table_shows_components_and_the_judge_reason(tmp_path, questions, capsys):
    answers = write_jsonl(tmp_path / "a.jsonl", [{"id": "q-capex", "answer": "15.77"}])
    code, out, _ = preview(capsys, "--questions", questions, "--answers", answers)
    assert code == 0
    assert "correctness" in out.splitlines()[0]
    assert "figures do not match" in out


def test_missing_evidence_fields_are_named_in_the_output(tmp_path, questions, capsys):
    answers = write_jsonl(tmp_path / "a.jsonl", [{"id": "q-capex", "answer": "$1,577 million"}])
    code, out, err = preview(capsys, "--questions", questions, "--answers", answers, "--json")
    assert code == 0
    assert json.loads(out)[0]["components"]["golden_recall"] is None
    assert "no retrieved_chunk_ids" in err
    assert "no searches count" in err


def test_answers_naming_unknown_questions_are_an_error_listing_them(tmp_path, questions, capsys):
    answers = write_jsonl(
        tmp_path / "a.jsonl",
        [
            {"id": "q-capex", "answer": "1"},
            {"id": "q-nope", "answer": "2"},
            {"id": 7, "answer": "3"},
        ],
    )
    code, out, err = preview(capsys, "--questions", questions, "--answers", answers)
    assert code == 2
    assert "q-nope, 7" in err
    assert "Traceback" not in err and out == ""


def test_a_config_file_sets_the_weights(tmp_path, questions, capsys):
    config = tmp_path / "reward.json"
    config.write_text(json.dumps({"weights": {"correctness": 1.0}, "require_evidence": False}))
    answers = write_jsonl(tmp_path / "a.jsonl", [{"id": "q-capex", "answer": "$1.577 billion"}])
    code, out, _ = preview(
        capsys, "--questions", questions, "--answers", answers, "--config", config, "--json"
    )
    assert code == 0
    assert json.loads(out)[0]["total"] == 1.0


@pytest.mark.parametrize(
    "config_text, message",
    [("{not json", "not a valid reward configuration"), ('{"weights": {"speed": 1}}', "speed")],
)
def test_a_bad_config_file_is_a_clear_error(tmp_path, questions, capsys, config_text, message):
    config = tmp_path / "reward.json"
    config.write_text(config_text)
    answers = write_jsonl(tmp_path / "a.jsonl", [{"id": "q-capex", "answer": "1"}])
    code, _, err = preview(
        capsys, "--questions", questions, "--answers", answers, "--config", config
    )
    assert code == 2
    assert message in err


def test_a_malformed_answers_file_is_a_clear_error(tmp_path, questions, capsys):
    answers = tmp_path / "a.jsonl"
    answers.write_text('{"id": "q-capex", "answer": "1"}\n{"id": "q-capex"\n')
    code, _, err = preview(capsys, "--questions", questions, "--answers", answers)
    assert code == 2
    assert "line 2" in err


def test_a_bad_question_file_is_a_clear_error(tmp_path, capsys):
    questions = write_jsonl(tmp_path / "q.jsonl", [{"id": "q1", "question": "What?"}])
    answers = write_jsonl(tmp_path / "a.jsonl", [{"id": "q1", "answer": "1"}])
    code, _, err = preview(capsys, "--questions", questions, "--answers", answers)
    assert code == 2
    assert "no answer" in err and "line 1" in err


def test_the_financebench_question_file_is_read(capsys, tmp_path):
    path = DATASETS / "financebench-dev" / "questions.jsonl"
    if not path.exists():
        pytest.skip("shared datasets are not beside the clone")
    answers = write_jsonl(
        tmp_path / "a.jsonl", [{"id": "financebench_id_03029", "answer": "$1.577 billion"}]
    )
    code, out, _ = preview(capsys, "--questions", path, "--answers", answers, "--json")
    assert code == 0
    assert json.loads(out)[0]["components"]["correctness"] == 1.0


def test_a_csv_questions_answers_name_them_by_text_and_an_index_maps_their_evidence(
    tmp_path, capsys
):
    # A CSV has no ids (they are made from each question's text, which a user never sees),
    # and its evidence is text until mapped to an index's chunks.
    csv = tmp_path / "questions.csv"
    csv.write_text(
        "question,answer,evidence\n"
        "Which pin resets the board?,PIN 7,Pull PIN 7 low to reset the board.\n"
    )
    pages = write_jsonl(tmp_path / "pages.jsonl", [
        {"doc": "manual", "page": 1, "text": "Pull PIN 7 low to reset the board."},
        {"doc": "manual", "page": 2, "text": "The fan runs at 12 volts."},
    ])  # fmt: skip
    assert main(["index", "--docs", str(pages), "--out", str(tmp_path / "idx")]) == 0
    answers = write_jsonl(tmp_path / "a.jsonl", [
        {"question": "Which pin resets the board?", "answer": "PIN 7",
         "retrieved_chunk_ids": ["manual:p1:c0"], "searches": 1},
    ])  # fmt: skip
    capsys.readouterr()

    code, out, err = preview(capsys, "--questions", csv, "--answers", answers,
                             "--index", tmp_path / "idx", "--json")  # fmt: skip

    assert code == 0, err
    (row,) = json.loads(out)
    assert row["components"]["correctness"] == 1.0
    assert row["components"]["golden_recall"] == 1.0  # the evidence mapped to manual's page 1
    # Named by a text the file does not hold: the error quotes it.
    stray = write_jsonl(tmp_path / "b.jsonl", [{"question": "Which fan?", "answer": "x"}])
    code, _, err = preview(capsys, "--questions", csv, "--answers", stray)
    assert code == 2 and "Which fan?" in err
