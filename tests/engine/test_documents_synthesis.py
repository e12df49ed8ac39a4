"""Question synthesis: offline from prose sentences (any domain; the filings pack's kinds are
tested in test_filings_questions.py), and by a teacher on an OpenAI-compatible endpoint (a
tiny local server here)."""

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import openai
import pytest

from engine.cli import main
from engine.documents.chunking import Section, chunk_sections
from engine.documents.questions import load_questions
from engine.documents.synthesis import (
    GENERIC_KINDS,
    READING_KINDS,
    is_self_contained,
    offline_questions,
    prose_questions,
    teacher_questions,
)
from engine.search.index import SearchIndex
from tests.helpers.filings import LONG_PAGES


@pytest.mark.parametrize(
    "question, ok",
    [
        ("What was Acme's revenue in FY2018?", True),
        ("What was ACME CORP revenue in Q3?", True),
        ("What was the revenue in 2018?", False),  # which company?
        ("What was Acme's revenue?", False),  # which period?
    ],
)
def test_a_question_must_name_its_entity_and_period(question, ok):
    assert is_self_contained(question, "Acme Corp") is ok


class _Teacher(BaseHTTPRequestHandler):
    replies = []

    def do_POST(self):  # noqa: N802 (http.server's naming)
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        assert "Acme" in request["messages"][0]["content"]
        content = _Teacher.replies.pop(0)
        body = json.dumps(
            {
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": request["model"],
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": content},
                    }
                ],
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def teacher_url():
    server = HTTPServer(("127.0.0.1", 0), _Teacher)
    # Polls for shutdown every 0.05 s, not the default 0.5 s each test's teardown waited.
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/v1"
    server.shutdown()


def test_teacher_questions_keep_only_self_contained_ones(teacher_url):
    _Teacher.replies = [
        '```json\n{"question": "What was Acme\'s net income in 2018?",'
        ' "answer": "$5,363 million"}\n```',
        '{"question": "What was net income?", "answer": "$5,363 million"}',  # ambiguous
        "I cannot help with that.",  # not JSON
    ]
    client = openai.OpenAI(base_url=teacher_url, api_key="test")
    pool = chunk_sections("ACME_2018_10K", LONG_PAGES, entity="Acme")
    questions, rejected = teacher_questions(pool, client, "teacher-model", n=5)
    assert [q.question for q in questions] == ["What was Acme's net income in 2018?"]
    assert rejected == 2
    assert questions[0].golden_chunk_ids and questions[0].meta["source"] == "teacher:teacher-model"


def test_a_teacher_question_on_an_undated_passage_needs_no_period(teacher_url):
    # A manual's page has no year to name; a question about it names its entity only.
    _Teacher.replies = [
        '{"question": "What does the Acme descaling program remove?", "answer": "Limescale"}',
        '{"question": "What does the descaling program remove?", "answer": "Limescale"}',
    ]
    client = openai.OpenAI(base_url=teacher_url, api_key="test")
    pool = manual(entity="Acme", text=MANUAL * 3, pages=(1, 2))
    questions, rejected = teacher_questions(pool, client, "teacher-model", n=5)
    assert [q.question for q in questions] == ["What does the Acme descaling program remove?"]
    assert rejected == 1  # names no entity


def test_cli_generates_a_question_file_that_loads_back(tmp_path, teacher_url, capsys):
    SearchIndex.build(chunk_sections("ACME_2018_10K", LONG_PAGES, entity="Acme")).save(
        tmp_path / "idx"
    )
    out = tmp_path / "q.jsonl"
    assert (
        main(
            [
                "questions",
                "generate",
                "--index",
                str(tmp_path / "idx"),
                "--out",
                str(out),
                "--n",
                "3",
                "--kinds",
                "generic,filings",
            ]
        )
        == 0
    )
    assert len(load_questions(out)) == 3

    _Teacher.replies = [
        '{"question": "How much did Acme spend on PP&E in 2017?", "answer": "$1,373 million"}'
    ] * 3
    assert (
        main(
            [
                "questions",
                "generate",
                "--index",
                str(tmp_path / "idx"),
                "--out",
                str(out),
                "--n",
                "1",
                "--teacher-base-url",
                teacher_url,
                "--teacher-model",
                "m",
            ]
        )
        == 0
    )
    [q] = load_questions(out)
    assert q.answer == "$1,373 million" and q.golden_chunk_ids
    assert "wrote 1 questions from teacher m" in capsys.readouterr().out


def test_cli_writes_yes_no_comparisons_in_the_share_asked(tmp_path, capsys):
    SearchIndex.build(chunk_sections("ACME_2018_10K", LONG_PAGES, entity="Acme")).save(
        tmp_path / "idx"
    )
    out = tmp_path / "q.jsonl"
    generate = ["questions", "generate", "--index", str(tmp_path / "idx"), "--out", str(out)]
    generate += ["--kinds", "filings"]
    assert main([*generate, "--n", "4", "--yes-no-share", "1"]) == 0
    questions = load_questions(out)
    assert questions and {q.answer for q in questions} <= {"Yes", "No"}
    assert main([*generate, "--n", "4", "--yes-no-share", "1", "--yes-share", "0"]) == 0
    assert {q.answer for q in load_questions(out)} == {"No"}
    assert main([*generate, "--yes-no-share", "1.5"]) == 2
    assert "--yes-no-share must be between 0 and 1" in capsys.readouterr().err
    assert main([*generate, "--yes-share", "-0.1"]) == 2
    assert "--yes-share must be between 0 and 1" in capsys.readouterr().err


# A product manual: no tables, no years, no companies. The generic kinds read its sentences.
MANUAL = """Cleaning the machine
The descaling program removes limescale from the boiler and the pipes.
A grinder is a unit that crushes the beans just before brewing.
There are three brewing strengths on the control panel.
It uses less water in eco mode.
This setting requires a filter.
The steam wand heats milk for cappuccino and latte drinks.
"""


def manual(doc="BREWER_X1_MANUAL", entity="Brewer X1", text=MANUAL, pages=(4,)):
    return chunk_sections(doc, [Section(text, page=p) for p in pages], entity=entity)


def by_source(questions) -> dict[str, list]:
    out: dict[str, list] = {}
    for q in questions:
        out.setdefault(q.meta["source"], []).append(q)
    return out


def test_prose_questions_ask_what_a_thing_does_answered_by_a_span_of_the_sentence():
    asked = {q.answer: q for q in prose_questions(manual(), n=20, kinds=["action"])}
    q = asked["Limescale"]
    assert "descaling program" in q.question and "remove" in q.question
    assert q.question.endswith("?") and "Limescale" not in q.question
    assert q.evidence[0].text == (
        "The descaling program removes limescale from the boiler and the pipes."
    )
    assert q.golden_chunk_ids == ["BREWER_X1_MANUAL:p4:c0"] and q.evidence[0].page == 4
    assert q.meta["source"] == "offline-action"
    assert asked["Milk"].question.count("steam wand") == 1


def test_prose_questions_read_verbs_with_a_particle_and_the_passive():
    text = (
        "The starter kit consists of a glass carafe.\n"
        "Descaling tablets are supplied by the service partner.\n"
    )
    asked = {q.answer: q.question for q in prose_questions(manual(text=text), n=5)}
    assert "starter kit consist of?" in asked["Glass carafe"]
    assert asked["Service partner"] == "By what are descaling tablets supplied?"


def test_prose_questions_ask_what_a_term_is_and_how_many_there_are():
    made = by_source(prose_questions(manual(), n=20))
    (definition,) = made["offline-definition"]
    assert "grinder" in definition.question
    assert definition.answer == "Unit that crushes the beans just before brewing"
    (count,) = made["offline-count"]
    assert "brewing strengths" in count.question and count.answer == "three"


def test_prose_questions_skip_subjects_that_name_nothing_and_headings():
    questions = prose_questions(manual(), n=20)
    assert questions
    for q in questions:
        # "It uses less water", "This setting requires a filter": whose? The heading
        # "Cleaning the machine" is no part of the sentence after it.
        assert not q.question.lower().startswith(("what does it", "what does this"))
        assert "water" not in q.answer.lower() and "filter" not in q.answer.lower()
        assert "Cleaning" not in q.question


@pytest.mark.parametrize(
    "sentence",
    [
        "The spot yield curve approach does not affect the total obligation.",  # a noun
        "Unless the context require otherwise, words in the singular include the plural.",
        "Typical uses of context managers include saving state.",  # "uses": a noun
        "Preventative measures could adversely affect our results.",
        "The manager holds a B.S. in chemistry from the university.",
    ],
)
def test_prose_questions_ask_nothing_of_a_sentence_they_would_misread(sentence):
    pool = manual(text=f"{sentence}\n")
    assert prose_questions(pool, n=5) == [], [q.question for q in prose_questions(pool, n=5)]


def test_prose_questions_name_the_entity_only_when_another_entity_says_the_same():
    x2 = "The steam wand heats milk for cappuccino and latte drinks.\n"
    pool = [*manual(), *manual("BREWER_X2_MANUAL", "Brewer X2", x2)]
    asked = {q.answer: q for q in prose_questions(pool, n=20, kinds=["action"])}
    assert "Brewer" not in asked["Limescale"].question  # only X1's manual descales
    milk = [q for q in prose_questions(pool, n=20, kinds=["action"]) if q.answer == "Milk"]
    assert milk and all(q.question.startswith(f"In {q.entity}, ") for q in milk)


def test_prose_questions_count_every_copy_of_the_sentence_as_golden():
    pool = manual(pages=(4, 9))  # the same page printed twice
    for q in prose_questions(pool, n=20):
        assert len(q.golden_chunk_ids) == 2, q.question


def test_prose_questions_are_deterministic_and_vary_their_shape():
    first = prose_questions(manual(), n=20, seed=3)
    assert [q.question for q in prose_questions(manual(), n=20, seed=3)] == [
        q.question for q in first
    ]
    shapes = {
        q.question.split("descaling")[0]
        for seed in range(12)
        for q in prose_questions(manual(), n=20, seed=seed, kinds=["action"])
        if "descaling" in q.question
    }
    assert len(shapes) >= 2, shapes


def test_offline_questions_read_prose_where_there_are_no_tables():
    # A corpus without year-column tables or filings' reasons got no questions before.
    questions = offline_questions(manual(), n=10)
    assert questions
    assert {q.meta["source"] for q in questions} <= {f"offline-{k}" for k in GENERIC_KINDS}


def test_offline_questions_refuse_an_unknown_kind():
    with pytest.raises(ValueError, match="unknown question kinds"):
        offline_questions(manual(), kinds=["tables"])


def test_cli_generates_from_prose_with_the_kinds_asked_for(tmp_path, capsys):
    SearchIndex.build(manual()).save(tmp_path / "idx")
    out = tmp_path / "q.jsonl"
    generate = ["questions", "generate", "--index", str(tmp_path / "idx"), "--out", str(out)]
    assert main(generate) == 0
    written = capsys.readouterr()
    assert load_questions(out) and "offline: action" in written.out
    # The manual holds fewer than the 100 asked for: the shortfall is said, with what makes more.
    assert f"only {len(load_questions(out))} of the 100 asked for" in written.err
    assert "--kinds generic,reading" in written.err
    assert main([*generate, "--n", "1"]) == 0 and "asked for" not in capsys.readouterr().err
    assert main([*generate, "--kinds", "definition"]) == 0
    assert {q.meta["source"] for q in load_questions(out)} == {"offline-definition"}
    assert main([*generate, "--kinds", "filings"]) == 2
    assert main([*generate, "--kinds", "tables"]) == 2
    assert "unknown kind 'tables'" in capsys.readouterr().err


def test_completion_questions_quote_a_sentence_with_its_rarest_word_blanked_out():
    pool = [*manual(), *manual("BREWER_X2_MANUAL", "Brewer X2", "The boiler heats the water.\n")]
    made = prose_questions(pool, n=50, kinds=["completion"])
    descaling = [q for q in made if "from the boiler and the pipes" in q.question]
    assert descaling, [q.question for q in made]
    for q in descaling:
        # One word of the sentence is blanked, and the sentence needs no entity named.
        quoted = q.question.split('"')[1]
        assert quoted.count("___") == 1 and not q.question.startswith("In ")
        assert quoted.replace("___", q.answer) == (
            "The descaling program removes limescale from the boiler and the pipes."
        )
        # One of the sentence's two rarest words: never "boiler", which two manuals hold.
        assert q.answer in {"descaling", "program", "removes", "limescale", "pipes"}
        assert q.golden_chunk_ids == ["BREWER_X1_MANUAL:p4:c0"]
        assert q.meta["source"] == "offline-completion"


def test_a_completion_never_blanks_the_first_word_a_repeated_word_or_a_stop_word():
    text = "Grinders grind coffee beans finely, and grinders grind them evenly too.\n"
    for seed in range(10):
        for q in prose_questions(manual(text=text), n=5, seed=seed, kinds=["completion"]):
            assert q.answer.lower() not in {"grinders", "grind", "and", "them", "too"}


def test_the_reading_kind_is_asked_for_only_by_name():
    assert not any(
        q.meta["source"] == "offline-completion" for q in offline_questions(manual(), n=50)
    )
    asked = offline_questions(manual(), n=50, kinds=GENERIC_KINDS + READING_KINDS)
    assert any(q.meta["source"] == "offline-completion" for q in asked)
