"""Parsing: every format to sections, a clear error per unreadable document, limits."""

import io
from pathlib import Path

import docx
import pypdfium2 as pdfium
import pytest

from engine.documents.corpus import build_corpus
from engine.documents.evidence import map_evidence
from engine.documents.parsing import ParseLimits, parse_bytes
from engine.documents.questions import load_questions
from engine.documents.sandbox import parse_files

DATA = Path(__file__).parents[2].parent / "shared" / "datasets" / "financebench-dev"


def make_pdf(pages: list[str], encrypted: bool = False) -> bytes:
    """A minimal hand-written PDF with one line of Helvetica text per page. `encrypted`
    adds a Standard security handler whose user password is not empty."""
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        None,
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    kids = []
    for text in pages:
        stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET"
        objects.append(f"<< /Length {len(stream)} >>\nstream\n{stream}\nendstream")
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {len(objects)} 0 R >>"
        )
        kids.append(f"{len(objects)} 0 R")
    objects[1] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {len(kids)} >>"
    encrypt = ""
    if encrypted:
        objects.append(
            "<< /Filter /Standard /V 1 /R 2 /P -4 /O <" + "ab" * 32 + "> /U <" + "cd" * 32 + "> >>"
        )
        encrypt = f" /Encrypt {len(objects)} 0 R /ID [<{'01' * 16}> <{'01' * 16}>]"
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(f"{number} 0 obj\n{body}\nendobj\n".encode("latin-1"))
    xref = out.tell()
    out.write(f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode())
    out.write("".join(f"{o:010d} 00000 n \n" for o in offsets).encode())
    trailer = (
        f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R{encrypt} >>\nstartxref\n{xref}\n%%EOF\n"
    )
    out.write(trailer.encode())
    return out.getvalue()


def blank_pdf() -> bytes:
    """What a scanned filing looks like to a text extractor: pages without a text layer."""
    pdf = pdfium.PdfDocument.new()
    pdf.new_page(612, 792)
    buffer = io.BytesIO()
    pdf.save(buffer)
    return buffer.getvalue()


def test_pdf_pages_keep_their_numbers():
    parsed = parse_bytes(make_pdf(["Revenue was 5 million", "Net income was 2 million"]), "r.pdf")
    assert parsed.error is None and parsed.kind == "pdf"
    assert [(s.page, s.text.strip()) for s in parsed.sections] == [
        (1, "Revenue was 5 million"),
        (2, "Net income was 2 million"),
    ]


@pytest.mark.parametrize(
    "data, name, message",
    [
        (make_pdf(["secret"], encrypted=True), "locked.pdf", "password-protected"),
        (make_pdf(["text"])[:150], "truncated.pdf", "not a readable PDF"),
        (blank_pdf(), "scan.pdf", "no text layer"),
        (b"\x89PNG\r\n\x1a\n" + bytes(100), "report.pdf", "PNG image"),
        (b"\x00\x01\x02binary" * 50, "notes.txt", "binary data"),
        (b"   \n", "empty.txt", "empty"),
    ],
)
def test_unreadable_documents_get_a_clear_error(data, name, message):
    parsed = parse_bytes(data, name)
    assert parsed.sections == []
    assert message in parsed.error


def test_type_is_judged_by_content_not_extension():
    assert parse_bytes(make_pdf(["hello there"]), "renamed.txt").kind == "pdf"
    assert parse_bytes(b"<html><body><p>Hi there</p></body></html>", "page.txt").kind == "html"


def test_html_keeps_main_text_not_navigation_and_splits_on_headings():
    html = b"""<!doctype html><html><head><style>p{}</style><script>var x=1</script></head>
    <body><nav><a href="/">Home</a> <a href="/about">About us</a></nav>
    <main><h1>Annual report</h1><p>Revenue grew 5%.</p>
    <h2>Segments</h2><table><tr><th>Segment</th><th>Sales</th></tr>
    <tr><td>Widgets</td><td>$12</td></tr></table></main>
    <footer>Copyright</footer></body></html>"""
    parsed = parse_bytes(html, "report.html")
    assert [s.title for s in parsed.sections] == ["Annual report", "Segments"]
    text = "\n".join(s.text for s in parsed.sections)
    assert "Revenue grew 5%." in text and "Widgets | $12" in text
    assert "About us" not in text and "Copyright" not in text and "var x" not in text


def test_markdown_sections_follow_headings_but_not_inside_code():
    md = b"# Results\nRevenue grew.\n```\n# not a heading\n```\n## Outlook\nMore growth.\n"
    parsed = parse_bytes(md, "notes.md")
    assert [s.title for s in parsed.sections] == ["Results", "Outlook"]
    assert "# not a heading" in parsed.sections[0].text


def test_underlined_headings_are_headings_and_a_rule_or_list_stays_text():
    # Markdown's setext headings, as reStructuredText READMEs write theirs too: read as text,
    # "Dependencies ------------" became a sentence questions were synthesized from.
    md = (
        b"asgiref\n=======\n\nIntro.\n\nDependencies\n------------\n\n"
        b"It requires Python 3.11.\n\n---\n\nAfter a rule.\n- an item\n---\n"
        b"```\ncode\n---\n```\n"
    )
    parsed = parse_bytes(md, "README.md")
    assert [s.title for s in parsed.sections] == ["asgiref", "Dependencies"]
    dependencies = parsed.sections[1].text
    assert dependencies.startswith("Dependencies\n") and "------------" not in dependencies
    # A rule after a blank line, a list item's next line and a fenced block are no headings.
    assert "\n---\n\nAfter a rule." in dependencies and "- an item\n---" in dependencies
    assert "code\n---" in dependencies


def test_docx_headings_paragraphs_and_tables():
    document = docx.Document()
    document.add_heading("Income statement", level=1)
    document.add_paragraph("Figures in millions.")
    table = document.add_table(rows=2, cols=2)
    for (r, c), value in {(0, 0): "Revenue", (0, 1): "5", (1, 0): "Costs", (1, 1): "3"}.items():
        table.cell(r, c).text = value
    buffer = io.BytesIO()
    document.save(buffer)
    parsed = parse_bytes(buffer.getvalue(), "statement.docx")
    assert parsed.kind == "docx"
    assert parsed.sections[0].title == "Income statement"
    assert "Revenue | 5\nCosts | 3" in parsed.sections[0].text


def test_too_many_pages_is_refused():
    parsed = parse_bytes(make_pdf(["a", "b", "c"]), "long.pdf", ParseLimits(max_pages=2))
    assert "too many pages (3; limit 2)" in parsed.error


def test_guarded_parsing_reports_bad_files_and_parses_the_rest(tmp_path):
    (tmp_path / "good.pdf").write_bytes(make_pdf(["Revenue was 5 million"]))
    (tmp_path / "locked.pdf").write_bytes(make_pdf(["x"], encrypted=True))
    (tmp_path / "big.txt").write_text("word " * 1000)
    results = {
        d.doc: d
        for d in parse_files(
            [
                tmp_path / "good.pdf",
                tmp_path / "locked.pdf",
                tmp_path / "big.txt",
                tmp_path / "missing.md",
            ],
            ParseLimits(max_bytes=4000),
        )
    }
    assert results["good.pdf"].sections[0].text.strip() == "Revenue was 5 million"
    assert "password-protected" in results["locked.pdf"].error
    assert "too large" in results["big.txt"].error
    assert "cannot read" in results["missing.md"].error


def test_a_parse_over_the_time_limit_is_stopped_and_the_next_file_still_parses(tmp_path):
    # 20,000 pages cannot be read in a tenth of a second: the child is killed.
    (tmp_path / "huge.pdf").write_bytes(make_pdf(["page"] * 20_000))
    (tmp_path / "small.md").write_text("# Title\nSome text.\n")
    huge, small = parse_files(
        [tmp_path / "huge.pdf", tmp_path / "small.md"],
        ParseLimits(timeout_s=0.1, max_pages=100_000),
    )
    assert "took longer than 0.1s" in huge.error
    assert small.error is None and small.sections[0].title == "Title"


@pytest.mark.slow
@pytest.mark.skipif(
    not (DATA / "pdfs").is_dir(), reason="shared/datasets/financebench-dev is absent"
)
def test_real_filings_parse_and_their_golden_evidence_maps():
    corpus = build_corpus([DATA / "pdfs"])
    assert corpus.errors == [] and corpus.documents == 6
    assert {c.entity for c in corpus.chunks if c.doc == "3M_2018_10K.pdf"} == {"3M"}
    docs = {c.doc.removesuffix(".pdf") for c in corpus.chunks}
    questions = [q for q in load_questions(DATA / "questions.jsonl") if q.meta.get("doc") in docs]
    assert len(questions) == 13
    report = map_evidence(questions, corpus.chunks)
    assert report.mapped_share >= 0.95, report.summary()


@pytest.mark.parametrize(
    "kind, body",
    [
        ("text", "{filler}Net income\x00 was\x01 $5 million\n"),
        (
            "markdown",
            "# Results\n\n{filler}\n## Net\x00 income\n\nNet income\x00 was\x01 $5 million\n",
        ),
        (
            "html",
            "<html><body><p>{filler}</p><h1>Net\x00 income</h1>"
            "<p>Net income\x00 was\x01 $5 million</p>",
        ),
    ],
)
def test_nul_and_control_characters_past_the_sniffed_head_are_cleaned(kind, body):
    """The sniffer looks for NUL in the first 8 KB only: one further on must not reach
    Postgres (text and jsonb refuse it) through sections, chunks or samples."""
    filler = "Revenue grew this year.\n" * 500  # > 8 KB of ordinary text first
    data = body.format(filler=filler).encode()

    parsed = parse_bytes(data, f"notes.{'md' if kind == 'markdown' else kind}")

    assert parsed.error is None and parsed.kind == kind
    texts = [s.text for s in parsed.sections] + [s.title or "" for s in parsed.sections]
    assert not any(c in t for t in texts for c in "\x00\x01")
    # lxml itself turns NUL into U+FFFD, which Postgres stores
    assert any("Net income was $5 million" in t.replace("\ufffd", "") for t in texts)


def test_a_file_named_pdf_that_is_no_pdf_is_called_so(tmp_path):
    import random

    (tmp_path / "x.pdf").write_bytes(random.Random(0).randbytes(4096))
    (tmp_path / "ok.md").write_text("# Notes\nThe relay trips at 40 amps.\n")

    result = build_corpus([str(tmp_path)])

    assert [(e.doc, e.message) for e in result.errors] == [
        ("x.pdf", "named .pdf but not a PDF (no PDF header): a damaged or renamed file?")
    ]
    assert {c.doc for c in result.chunks} == {"ok.md"}
