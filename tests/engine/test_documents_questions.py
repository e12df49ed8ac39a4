"""Question files: formats, validation of the whole file, and the entity split."""

import json

import pytest

from engine.documents.questions import (
    QuestionFileError,
    SealedQuestionsError,
    load_questions,
    save_questions,
    split_by_entity,
)


def write_jsonl(path, records):
    path.write_text("\n".join(json.dumps(r) if isinstance(r, dict) else r for r in records) + "\n")
    return path


def test_financebench_format_loads_as_is_with_company_as_entity_and_1_based_pages(tmp_path):
    path = write_jsonl(
        tmp_path / "fb.jsonl",
        [
            {
                "id": "fb_1",
                "company": "3M",
                "doc": "3M_2018_10K",
                "question": "Q?",
                "answer": "$1577.00",
                "evidence": [
                    {"text": "Purchases of PP&E (1,577)", "doc": "3M_2018_10K", "page": 59}
                ],
            }
        ],
    )
    [q] = load_questions(path)
    assert (q.id, q.entity, q.answer) == ("fb_1", "3M", "$1577.00")
    assert (q.evidence[0].doc, q.evidence[0].page) == ("3M_2018_10K", 60)


def test_generic_jsonl_keeps_1_based_pages_and_gives_stable_ids(tmp_path):
    records = [
        {
            "question": "What was X in 2020?",
            "answer": "5",
            "entity": "Acme",
            "evidence": [{"text": "X was 5", "page": 3}],
        }
    ]
    first = load_questions(write_jsonl(tmp_path / "a.jsonl", records))
    again = load_questions(write_jsonl(tmp_path / "b.jsonl", records))
    assert first[0].evidence[0].page == 3
    assert first[0].id == again[0].id


def test_csv_with_evidence_column(tmp_path):
    path = tmp_path / "q.csv"
    path.write_text("question,answer,entity,evidence\nWhat was X in 2020?,5,Acme,X was 5\n")
    [q] = load_questions(path)
    assert (q.question, q.answer, q.entity, q.evidence[0].text) == (
        "What was X in 2020?",
        "5",
        "Acme",
        "X was 5",
    )


def test_every_bad_line_is_reported_with_its_number_and_nothing_is_loaded(tmp_path):
    path = write_jsonl(
        tmp_path / "bad.jsonl",
        [
            {"question": "fine?", "answer": "yes"},
            {"question": "no answer here?"},
            "{not json",
            {"question": "bad page?", "answer": "1", "evidence": [{"text": "t", "page": "x"}]},
        ],
    )
    with pytest.raises(QuestionFileError) as caught:
        load_questions(path)
    problems = dict(caught.value.problems)
    assert sorted(problems) == [2, 3, 4]
    assert "no answer" in problems[2]
    assert "not valid JSON" in problems[3]
    assert "not a number" in problems[4]


def test_csv_without_answer_column_is_rejected(tmp_path):
    path = tmp_path / "q.csv"
    path.write_text("question,entity\nWhat?,Acme\n")
    with pytest.raises(QuestionFileError, match="answer"):
        load_questions(path)


def test_saved_questions_load_back_identically(tmp_path):
    path = write_jsonl(
        tmp_path / "q.jsonl",
        [
            {
                "id": "a",
                "question": "Q?",
                "answer": "1",
                "entity": "E",
                "evidence": [{"text": "t", "page": 2}],
            }
        ],
    )
    questions = load_questions(path)
    save_questions(questions, tmp_path / "out.jsonl")
    assert load_questions(tmp_path / "out.jsonl") == questions


def make_questions(tmp_path, entities):
    records = [
        {"id": f"q{i}", "question": f"Q{i}?", "answer": "1", "entity": e}
        for i, e in enumerate(entities)
    ]
    return load_questions(write_jsonl(tmp_path / "q.jsonl", records))


def test_split_by_entity_never_puts_an_entity_on_both_sides(tmp_path):
    questions = make_questions(tmp_path, [e for e in "ABCDEFGH" for _ in range(3)])
    train, val = split_by_entity(questions, val_fraction=0.25, seed=0)
    assert {q.entity for q in train}.isdisjoint({q.entity for q in val})
    assert len(train) + len(val) == len(questions)
    assert len(val) >= 0.25 * len(questions)


def test_split_by_entity_is_deterministic_for_a_seed(tmp_path):
    questions = make_questions(tmp_path, [e for e in "ABCDEFGH" for _ in range(2)])
    first = split_by_entity(questions, seed=3)
    assert split_by_entity(questions, seed=3) == first


def test_a_sealed_question_file_is_loaded_only_when_its_folder_is_named(tmp_path, monkeypatch):
    folder = tmp_path / "held-back"
    folder.mkdir()
    path = folder / "questions.jsonl"
    path.write_text(json.dumps({"question": "How long?", "answer": "30 days"}) + "\n")
    assert load_questions(path)[0].answer == "30 days"  # no seal: loads
    (folder / "SEALED").write_text("scored once, for a frozen preset\n")
    monkeypatch.delenv("SLEUTH_UNSEAL", raising=False)
    with pytest.raises(SealedQuestionsError, match="SLEUTH_UNSEAL=held-back") as error:
        load_questions(path)
    assert isinstance(error.value, QuestionFileError)  # every command already reports these
    monkeypatch.setenv("SLEUTH_UNSEAL", "another-set")
    with pytest.raises(SealedQuestionsError):
        load_questions(path)
    monkeypatch.setenv("SLEUTH_UNSEAL", "another-set,held-back")
    assert load_questions(path)[0].answer == "30 days"


def test_a_problem_of_the_whole_file_names_no_line(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes('{"question": "Caf\xe9?", "answer": "x"}\n'.encode("latin-1"))

    for path, said in ((empty, "the file holds no questions"), (latin, "not UTF-8 text")):
        with pytest.raises(QuestionFileError) as refused:
            load_questions(path)
        assert said in str(refused.value) and "line 0" not in str(refused.value)
