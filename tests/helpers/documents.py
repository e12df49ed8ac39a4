"""Documents uploaded as pages JSONL (tests/platform/test_project_search.py,
test_question_generation.py, test_index_cap.py, tests/browser/test_question_review_page.py,
test_issue15_walk.py)."""

import json

from django.core.files.uploadedfile import SimpleUploadedFile

from corpora.models import Document, Project
from corpora.services import document_parse, document_upload


def pages_file(doc: str, entity: str, pages: list[str]) -> SimpleUploadedFile:
    lines = [
        json.dumps({"doc": doc, "page": number, "text": text, "entity": entity})
        for number, text in enumerate(pages, start=1)
    ]
    return SimpleUploadedFile(f"{doc}.jsonl", ("\n".join(lines) + "\n").encode())


def parsed(project: Project, doc: str, entity: str, pages: list[str]) -> Document:
    document = document_upload(project=project, file=pages_file(doc, entity, pages))
    return document_parse(document_id=document.pk)


STATEMENTS = {
    "Acme": """Acme Corp, Form 10-K for the fiscal year 2018
Consolidated Statement of Cash Flows
(Millions) 2018 2017
Net income $5,363 $4,869
Purchases of property, plant and equipment (1,577) (1,373)
Dividends paid (3,193) (2,803)
""",
    "Globex": """Globex Inc, Form 10-K for the fiscal year 2019
Consolidated Statement of Operations
(Millions) 2019 2018
Total revenue $12,410 $11,902
Operating income 2,114 1,980
Research and development expense 845 790
""",
}


def filing_file(entity: str, text: str) -> SimpleUploadedFile:
    """`entity`'s filing as a pages JSONL upload: one page holding `text`."""
    line = json.dumps({"doc": f"{entity.upper()}_10K", "page": 60, "text": text, "entity": entity})
    return SimpleUploadedFile(f"{entity.upper()}_10K.jsonl", (line + "\n").encode())
