"""Question files, whatever they hold: the loader returns questions or raises
QuestionFileError naming the bad lines, nothing else (hypothesis generates the files)."""

import json

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from engine.documents.questions import Question, QuestionFileError, load_questions

# Modest, so the suite stays fast; no example database written into the checkout.
PROPERTY = settings(
    max_examples=200,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# The keys the loader reads, so that generated records reach its checks, not just "no
# question text".
KEYS = st.sampled_from(
    [
        "id",
        "question",
        "answer",
        "entity",
        "company",
        "evidence",
        "text",
        "doc",
        "page",
        "chunk_ids",
        "golden_chunk_ids",
        "meta",
        "question_type",
    ]
)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=30)
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(KEYS | st.text(max_size=8), inner, max_size=5)
    ),
    max_leaves=20,
)
RECORDS = st.dictionaries(KEYS, JSON_VALUES, max_size=8)
JSONL_LINES = st.lists(
    RECORDS.map(json.dumps) | JSON_VALUES.map(json.dumps) | st.text(max_size=60), max_size=6
)
CSV_CELLS = st.text(alphabet=st.characters(codec="utf-8"), max_size=20) | st.sampled_from(
    ['"', '""', ",", "\n", "\r", "\x00", "question", "answer", "evidence_page", "-3", "1e999"]
)
CSV_ROWS = st.lists(st.lists(CSV_CELLS, max_size=6).map(",".join), max_size=6)
# A number longer than Python converts to int by default (4,300 digits).
HUGE_NUMBER = "1" * 5000


def loads_or_says_which_lines(path) -> None:
    """The property: a list of questions, or QuestionFileError with each bad line."""
    try:
        questions = load_questions(path)
    except QuestionFileError as error:
        assert error.problems and all(isinstance(n, int) and m for n, m in error.problems)
    else:
        assert questions and all(isinstance(q, Question) for q in questions)
        assert all(q.question and q.answer and q.id for q in questions)


@PROPERTY
@given(lines=JSONL_LINES)
@example(lines=[f'{{"question": "Q?", "answer": {HUGE_NUMBER}}}'])
@example(lines=['{"question": "Q?", "answer": "A", "evidence": [{"text": "t", "page": 1e999}]}'])
@example(lines=["[" * 100_000])
@example(lines=['{"question": "Q\\ud800?", "answer": "A"}'])
def test_any_jsonl_file_loads_or_names_its_bad_lines(lines, tmp_path):
    path = tmp_path / "questions.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")

    loads_or_says_which_lines(path)


@PROPERTY
@given(
    header=st.sampled_from(["question,answer", "question,answer,evidence,evidence_page", "id"]),
    rows=CSV_ROWS,
)
@example(header="question,answer", rows=['"unclosed,quote', "x" * 200_000])
def test_any_csv_file_loads_or_names_its_bad_lines(header, rows, tmp_path):
    path = tmp_path / "questions.csv"
    path.write_text("\n".join([header, *rows]), encoding="utf-8")

    loads_or_says_which_lines(path)


@PROPERTY
@given(content=st.binary(max_size=300), suffix=st.sampled_from([".jsonl", ".csv", ".json"]))
@example(content=b'{"question": "Q?", "answer": "\xff"}\n', suffix=".jsonl")
@example(content=b"question,answer\n\xc3\x28,A\n", suffix=".csv")
def test_any_bytes_load_or_say_what_is_wrong(content, suffix, tmp_path):
    path = tmp_path / f"questions{suffix}"
    path.write_bytes(content)

    loads_or_says_which_lines(path)
