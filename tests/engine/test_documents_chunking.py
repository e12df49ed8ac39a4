"""Chunking: page-aware, token-bounded, overlapping, readable tables, stable ids."""

from engine.documents.chunking import Section, chunk_sections, count_tokens, tidy_text
from engine.documents.corpus import infer_entity

PROSE = "\n".join(f"Line {i} says something about revenue and margins." for i in range(60))


def test_chunks_never_cross_pages_and_keep_their_page():
    chunks = chunk_sections(
        "doc", [Section(PROSE, page=1), Section(PROSE, page=2)], max_tokens=64, overlap_tokens=8
    )
    assert {c.page for c in chunks} == {1, 2}
    assert all(c.text.startswith("Line") for c in chunks)
    assert chunks[0].id == "doc:p1:c0"


def test_chunks_stay_within_the_token_budget_and_overlap():
    chunks = chunk_sections("doc", [Section(PROSE, page=1)], max_tokens=64, overlap_tokens=16)
    assert len(chunks) > 3
    assert all(count_tokens(c.text) <= 64 for c in chunks)
    first_lines = chunks[0].text.splitlines()
    assert chunks[1].text.splitlines()[0] in first_lines


def test_same_input_gives_the_same_chunk_ids():
    run = lambda: [c.id for c in chunk_sections("My Report.pdf", [Section(PROSE, page=4)])]  # noqa: E731
    assert run() == run()
    assert run()[0] == "My_Report.pdf:p4:c0"


def test_number_cells_are_joined_onto_their_table_row():
    extracted = "Net income\n \n$\n5,363 \n$\n4,869 \nDepreciation and amortization\n1,488\n(370)\n"
    assert tidy_text(extracted).splitlines() == [
        "Net income $5,363 $4,869",
        "Depreciation and amortization 1,488 (370)",
    ]


def test_a_line_longer_than_the_budget_is_cut():
    long_line = " ".join(["word"] * 500)
    chunks = chunk_sections("doc", [Section(long_line)], max_tokens=100, overlap_tokens=0)
    assert len(chunks) == 5
    assert chunks[0].page is None and chunks[0].id == "doc:s0:c0"


def test_entity_is_inferred_from_the_file_name():
    assert infer_entity("3M_2018_10K") == "3M"
    assert infer_entity("AMCOR_2023Q4_EARNINGS.pdf") == "AMCOR"
    assert infer_entity("Foot Locker 10-K 2022.pdf") == "Foot Locker"
    # Documents of any kind: a hyphen joins words and a year to a name; a name opening with
    # a year or period is its own entity, not none; a version is no file extension.
    assert infer_entity("charset-normalizer.md") == "charset normalizer"
    assert infer_entity("k8s-guide-2024.md") == "k8s guide"
    assert infer_entity("2024-handbook.md") == "2024-handbook"
    assert infer_entity("Q3-plan.md") == "Q3-plan"
    assert infer_entity("GFDL-1.2") != infer_entity("GFDL-1.3")
    assert infer_entity("MPL-2.0.txt") == "MPL-2.0"


def test_chunks_carry_no_nul_control_characters_or_lone_surrogates():
    """Sections stored before parsing cleaned them still reach the index (and Postgres) clean."""
    section = Section(text="Net\x00 income\x07 was $5\ud800 million", page=3, title="Res\x00ults")

    (chunk,) = chunk_sections("10-K", [section])

    assert chunk.text == "Net income was $5\ufffd million"
    assert chunk.section == "Results"
    chunk.text.encode("utf-8")  # a lone surrogate would raise here
