"""Evidence mapping: golden passages to the chunks that contain them."""

from engine.documents.chunking import Section, chunk_sections
from engine.documents.evidence import map_evidence
from engine.documents.questions import Evidence, Question

PAGE_1 = "\n".join(
    f"Paragraph {i}: the company sold {i * 7} widgets in region {i}." for i in range(40)
)
PAGE_2 = "Consolidated Statement of Cash Flows\nPurchases of property, plant and equipment (1,577)"


def chunks():
    return chunk_sections(
        "ACME_2018_10K",
        [Section(PAGE_1, page=1), Section(PAGE_2, page=2)],
        entity="Acme",
        max_tokens=64,
        overlap_tokens=8,
    )


def question(*evidence):
    return Question(id="q", question="?", answer="1", entity="Acme", evidence=list(evidence))


def test_passage_with_pdf_whitespace_noise_maps_to_its_chunk():
    noisy = (
        "Consolidated Statement of Cash Flow s\n \n"
        "Purchases of property, plant and\nequipment\n \n(1,577)"
    )
    q = question(Evidence(noisy, doc="ACME_2018_10K.pdf", page=2))
    report = map_evidence([q], chunks())
    assert report.mapped == 1
    assert q.golden_chunk_ids == ["ACME_2018_10K:p2:c0"]


def test_page_long_passage_maps_to_every_chunk_of_the_page():
    q = question(Evidence(PAGE_1, doc="ACME_2018_10K", page=1))
    map_evidence([q], chunks())
    assert q.golden_chunk_ids == sorted(c.id for c in chunks() if c.page == 1)


def test_passage_found_without_doc_or_page():
    q = question(Evidence("the company sold 119 widgets in region 17"))
    map_evidence([q], chunks())
    assert q.golden_chunk_ids and all(c.startswith("ACME_2018_10K:p1:") for c in q.golden_chunk_ids)


def test_a_wrong_page_number_is_tolerated():
    q = question(Evidence(PAGE_2, doc="ACME_2018_10K", page=1))
    map_evidence([q], chunks())
    assert q.golden_chunk_ids == ["ACME_2018_10K:p2:c0"]


def test_unmappable_passages_are_reported_not_dropped():
    q = question(
        Evidence("Goodwill impairment of the Zeta segment was 42"),
        Evidence("text", doc="OTHER_DOC", page=1),
    )
    report = map_evidence([q], chunks())
    assert (report.total, report.mapped) == (2, 0)
    assert [u.evidence_index for u in report.unmapped] == [0, 1]
    assert "OTHER_DOC" in report.unmapped[1].reason


def test_a_document_named_with_a_version_is_not_read_as_an_extension():
    # "LGPL-2.1" and "LGPL-2" are two documents; "ACME_2018_10K.pdf" is "ACME_2018_10K".
    sections = {
        "LGPL-2": "the written offer must be valid for at least three years to every user",
        "LGPL-2.1": "the written offer must be valid for at least three years to every user",
    }
    corpus = [
        c
        for doc, text in sections.items()
        for c in chunk_sections(
            doc, [Section(text, page=1)], entity="LGPL", max_tokens=64, overlap_tokens=8
        )
    ]
    q = Question(
        "q", "How long?", "three years", "LGPL", [Evidence(sections["LGPL-2"], "LGPL-2", 1)]
    )
    pdf = Question(
        "p", "How long?", "three years", "LGPL", [Evidence(sections["LGPL-2"], "LGPL-2.txt", 1)]
    )
    map_evidence([q, pdf], corpus)
    doc_of = {c.id: c.doc for c in corpus}
    assert {doc_of[c] for c in q.golden_chunk_ids} == {"LGPL-2"}
    assert {doc_of[c] for c in pdf.golden_chunk_ids} == {"LGPL-2"}
