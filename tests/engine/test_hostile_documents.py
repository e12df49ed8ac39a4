"""Hostile documents, each parsed the way a worker parses an upload (sandbox.parse_files, in
a process of its own standing in for the worker): a zip-bomb DOCX, PDFs of 100,000 pages,
text that inflates 1000× or more (a merged table cell, entity expansion, a PDF page's packed
content), NUL bytes, a truncated PDF and an encrypted one. Each gives a clear per-document
error or bounded, clean text; the worker lives on and parses the next file; and the parser
child's peak memory stays under CHILD_RSS_BOUND_MB (or, for the one file that needs more,
its cap kills the child).

The files are made by the tests in tmp_path; nothing large is kept in the repository."""

import io
import json
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path

import pytest

# The parser child's peak resident memory on any of these files (it needs about 120 MB for
# the largest, the NUL bytes). Its address space is capped at ParseLimits.memory_mb (4 GB in
# production); only the PDF whose page inflates to 300 MB of text reaches the cap, which
# kills the child: that one is parsed under a 1 GB cap, so the test needs no more memory.
CHILD_RSS_BOUND_MB = 256
MEMORY_MB = 4096
DEFLATE_BOMB_MEMORY_MB = 1024
# What the worker (the parent) holds: it only reads the child's answers (about 20 MB).
PARENT_RSS_BOUND_MB = 128
ROOT = Path(__file__).resolve().parents[2]

# The worker: parses the hostile file, then a good one, as one batch under the production
# limits (a shorter time limit, so that a hang fails quickly), and reports what it got, the
# parser child's peak memory and its own. The child's peak (RUSAGE_CHILDREN) counts the
# worker's own at the moment it started the child too: an upper bound.
WORKER = """
import json, resource, sys
from engine.documents.parsing import ParseLimits
from engine.documents.sandbox import parse_files

limits = ParseLimits(timeout_s=60, memory_mb=int(sys.argv[1]))
hostile, good = parse_files(sys.argv[2:], limits)
text = "\\n".join(s.text for s in hostile.sections)
peak = [line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM")]
print(json.dumps({
    "error": hostile.error,
    "text": text[:10_000],
    "chars": len(text),
    "good_after": good.error is None and good.sections[0].text == "Revenue was 5 million.",
    "child_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
    "parent_rss_mb": int(peak[0]) / 1024,
}))
"""


def parse_in_a_worker(path: Path, memory_mb: int) -> dict:
    good = path.with_name("good.txt")
    good.write_text("Revenue was 5 million.")
    done = subprocess.run(
        [sys.executable, "-c", WORKER, str(memory_mb), str(path), str(good)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, f"the worker died: {done.stderr[-2000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


# --- the hostile files --------------------------------------------------------------------


def pdf(page_texts: list[str], *, count: int | None = None, encrypted: bool = False) -> bytes:
    """A minimal hand-written PDF with one line of Helvetica per page. `count` pages that
    all share the first page's object: a small file with a huge page count. `encrypted`
    adds a Standard security handler whose user password is not empty."""
    objects = ["<< /Type /Catalog /Pages 2 0 R >>", "", "<< /Type /Font /Subtype /Type1 "]
    objects[2] += "/BaseFont /Helvetica >>"
    kids = []
    for text in page_texts:
        stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET"
        objects.append(f"<< /Length {len(stream)} >>\nstream\n{stream}\nendstream")
        objects.append(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {len(objects)} 0 R >>"
        )
        kids.append(f"{len(objects)} 0 R")
    if count is not None:
        kids = [kids[0]] * count
    objects[1] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {len(kids)} >>"
    encrypt = ""
    if encrypted:
        objects.append(f"<< /Filter /Standard /V 1 /R 2 /P -4 /O <{'ab' * 32}> /U <{'cd' * 32}> >>")
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
    trailer = f"<< /Size {len(objects) + 1} /Root 1 0 R{encrypt} >>"
    out.write(f"trailer\n{trailer}\nstartxref\n{xref}\n%%EOF\n".encode())
    return out.getvalue()


def deflate_bomb_pdf(path: Path) -> Path:
    """One page whose content stream, 1 MB packed, inflates to 300 MB of text to show."""
    shows = b"(Revenue was 5 million, revenue was 5 million) Tj " * (6 << 20)
    packed = zlib.compress(b"BT /F1 12 Tf 72 720 Td " + shows + b"ET", 9)
    head = pdf(["x"]).split(b"4 0 obj\n", 1)[0]  # the catalog, page tree and font as above
    out = io.BytesIO(head)
    out.seek(0, io.SEEK_END)
    offsets = [head.index(f"{n} 0 obj".encode()) for n in (1, 2, 3)]
    offsets.append(out.tell())
    out.write(b"4 0 obj\n<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(packed))
    out.write(packed + b"\nendstream\nendobj\n")
    offsets.append(out.tell())
    out.write(
        b"5 0 obj\n<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Resources << /Font << /F1 3 0 R >> >> /Contents 4 0 R >>\nendobj\n"
    )
    xref = out.tell()
    out.write(b"xref\n0 6\n0000000000 65535 f \n")
    out.write(b"".join(b"%010d 00000 n \n" % o for o in offsets))
    out.write(b"trailer\n<< /Size 6 /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % xref)
    path.write_bytes(out.getvalue())
    return path


W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
CONTENT_TYPES = (
    '<?xml version="1.0" encoding="UTF-8"?>'
    '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="rels" ContentType="application/'
    'vnd.openxmlformats-package.relationships+xml"/>'
    '<Default Extension="xml" ContentType="application/xml"/>'
    '<Override PartName="/word/document.xml" ContentType="application/'
    'vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>'
)
RELS = (
    '<?xml version="1.0" encoding="UTF-8"?>'
    '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    '<Relationship Id="rId1" Target="word/document.xml" Type="http://schemas.openxmlformats.org/'
    'officeDocument/2006/relationships/officeDocument"/></Relationships>'
)


def docx(path: Path, body_chunks, head: str = "") -> Path:
    """A DOCX whose word/document.xml is `head`, then the body written chunk by chunk."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as package:
        package.writestr("[Content_Types].xml", CONTENT_TYPES)
        package.writestr("_rels/.rels", RELS)
        with package.open("word/document.xml", "w", force_zip64=True) as part:
            part.write(f'<?xml version="1.0" encoding="UTF-8"?>{head}'.encode())
            part.write(f"<w:document {W}><w:body>".encode())
            for chunk in body_chunks:
                part.write(chunk)
            part.write(b"</w:body></w:document>")
    return path


def zip_bomb_docx(path: Path) -> Path:
    """1 GB of paragraphs, about 1 MB packed: a thousand times its size once unpacked."""
    paragraph = b"<w:p><w:r><w:t>A</w:t></w:r></w:p>"
    block = paragraph * (1024 * 1024 // len(paragraph))
    return docx(path, (block for _ in range(1024)))


def merged_cell_docx(path: Path) -> Path:
    """One table cell spanning a million grid columns: a reader that repeats a merged
    cell's text once per column it spans writes its text a million times."""
    cell = (
        '<w:tbl><w:tblGrid><w:gridCol w:w="10"/></w:tblGrid><w:tr><w:tc><w:tcPr>'
        '<w:gridSpan w:val="1000000"/></w:tcPr><w:p><w:r><w:t>Revenue was 5 million</w:t>'
        "</w:r></w:p></w:tc></w:tr></w:tbl>"
    )
    return docx(path, [cell.encode()])


def entity_expansion_docx(path: Path) -> Path:
    """The billion laughs: ten nested entities, each ten of the one below."""
    entities = '<!ENTITY lol0 "lol">' + "".join(
        f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, 10)
    )
    body = b"<w:p><w:r><w:t>&lol9;</w:t></w:r></w:p>"
    return docx(path, [body], head=f"<!DOCTYPE w:document [{entities}]>")


def entity_expansion_html(path: Path) -> Path:
    entities = '<!ENTITY lol0 "lol">' + "".join(
        f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, 10)
    )
    path.write_text(f"<!DOCTYPE html [{entities}]><html><body><p>Revenue &lol9;</p></body></html>")
    return path


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


HOSTILE = {
    "zip-bomb.docx": zip_bomb_docx,
    "merged-cell.docx": merged_cell_docx,
    "billion-laughs.docx": entity_expansion_docx,
    "billion-laughs.html": entity_expansion_html,
    # 100,000 entries in the page tree, all the same page object: a 600 kB file.
    "100k-pages.pdf": lambda p: write(p, pdf(["page one"], count=100_000)),
    "100k-distinct-pages.pdf": lambda p: write(p, pdf(["page"] * 100_000)),
    "deflate-bomb.pdf": deflate_bomb_pdf,
    "truncated.pdf": lambda p: write(p, pdf([f"page {i}" for i in range(50)])[:3000]),
    "encrypted.pdf": lambda p: write(p, pdf(["secret"], encrypted=True)),
    # Text, then 50 MB of NUL bytes (past the head that sniffing reads).
    "nul-bytes.txt": lambda p: write(p, b"Revenue was 5 million.\n" * 400 + bytes(50 << 20)),
    "all-nul.txt": lambda p: write(p, bytes(10 << 20)),
}


@pytest.fixture(scope="module")
def parsed(tmp_path_factory) -> dict:
    """Every hostile file, each parsed by a worker of its own (each is made, parsed, and
    deleted in turn, so that no more than one lies on disk)."""
    results = {}
    for name, make in HOSTILE.items():
        path = make(tmp_path_factory.mktemp("hostile") / name)
        memory_mb = DEFLATE_BOMB_MEMORY_MB if name == "deflate-bomb.pdf" else MEMORY_MB
        results[name] = parse_in_a_worker(path, memory_mb)
        path.unlink()
    return results


def test_a_zip_bomb_docx_is_refused_before_it_is_unpacked(parsed):
    assert parsed["zip-bomb.docx"]["error"] == (
        "the DOCX unpacks to 1074 MB (limit 210 MB): split it into smaller documents"
    )


def test_a_table_cell_spanning_a_million_columns_is_read_once(parsed):
    result = parsed["merged-cell.docx"]

    assert result["error"] is None and result["text"] == "Revenue was 5 million"


def test_entities_that_expand_a_billion_times_are_refused_or_left_unexpanded(parsed):
    assert "not a readable DOCX" in parsed["billion-laughs.docx"]["error"]
    assert parsed["billion-laughs.html"]["chars"] < 100


@pytest.mark.parametrize("name", ["100k-pages.pdf", "100k-distinct-pages.pdf"])
def test_a_pdf_of_100k_pages_is_refused_by_its_page_count(parsed, name):
    assert parsed[name]["error"] == "too many pages (100000; limit 5000)"


def test_a_pdf_page_that_inflates_past_the_memory_cap_stops_the_child_not_the_worker(parsed):
    result = parsed["deflate-bomb.pdf"]

    assert result["error"] == (
        "the parser crashed on this file: it may be damaged, or need more than "
        f"{DEFLATE_BOMB_MEMORY_MB} MB of memory"
    )
    assert result["good_after"] and result["child_rss_mb"] <= DEFLATE_BOMB_MEMORY_MB


def test_a_truncated_pdf_is_reported_damaged(parsed):
    assert "not a readable PDF (damaged or truncated)" in parsed["truncated.pdf"]["error"]


def test_an_encrypted_pdf_asks_for_a_copy_without_its_password(parsed):
    assert parsed["encrypted.pdf"]["error"] == (
        "password-protected PDF: upload a copy without a password"
    )


def test_nul_bytes_are_dropped_and_the_text_around_them_kept(parsed):
    result = parsed["nul-bytes.txt"]

    assert result["error"] is None
    assert result["chars"] == len("Revenue was 5 million.\n") * 400 and "\x00" not in result["text"]


def test_a_file_of_nul_bytes_is_refused_as_binary_data(parsed):
    assert parsed["all-nul.txt"]["error"] == "unsupported type: binary data, not a document"


@pytest.mark.parametrize("name", HOSTILE)
def test_the_worker_goes_on_to_the_next_file(parsed, name):
    assert parsed[name]["good_after"]


@pytest.mark.parametrize("name", [name for name in HOSTILE if name != "deflate-bomb.pdf"])
def test_the_parser_child_stays_under_its_memory_bound(parsed, name):
    assert parsed[name]["child_rss_mb"] < CHILD_RSS_BOUND_MB, parsed[name]


@pytest.mark.parametrize("name", HOSTILE)
def test_the_worker_stays_under_its_memory_bound(parsed, name):
    assert parsed[name]["parent_rss_mb"] < PARENT_RSS_BOUND_MB, parsed[name]
