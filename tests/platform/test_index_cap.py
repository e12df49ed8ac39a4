"""A project's index holds at most SLEUTH_INDEX_MAX_CHUNKS chunks (issue 68.6): the document
that would take it past fails with the reason, and the project's other documents are still
indexed and searchable. On the real services (Postgres, S3, Redis)."""

import pytest

from corpora import indexing
from corpora.models import Document
from corpora.services import project_create
from tests.helpers.documents import parsed

pytestmark = pytest.mark.django_db

# One short page is one chunk.
ALPHA = [f"Alpha Corp page {n}: revenue was {n} million dollars." for n in range(1, 4)]
BRAVO = [f"Bravo Inc page {n}: dividends were {n} dollars a share." for n in range(1, 5)]
CHARLIE = [f"Charlie Ltd page {n}: purchases of property were {n} million." for n in range(1, 3)]


def test_the_document_that_would_pass_the_cap_fails_and_the_others_are_indexed(alice, knob):
    knob("SLEUTH_INDEX_MAX_CHUNKS", 6)
    project = project_create(owner=alice, name="Capped")
    alpha = parsed(project, "ALPHA", "Alpha", ALPHA)
    bravo = parsed(project, "BRAVO", "Bravo", BRAVO)
    charlie = parsed(project, "CHARLIE", "Charlie", CHARLIE)

    prefix = indexing.project_index_build(project_id=project.pk)

    for document in (alpha, bravo, charlie):
        document.refresh_from_db()
    assert bravo.status == Document.Status.FAILED
    assert bravo.error == (
        "This project's index would hold 7 chunks, past the limit of 6; split the documents "
        "into another project."
    )
    assert alpha.status == charlie.status == Document.Status.INDEXED
    project.refresh_from_db()
    assert project.index_prefix == prefix  # the build of the documents kept is current
    index = indexing.load_index(prefix)
    held = {chunk.doc.split(".")[0] for chunk in index.chunks}
    assert len(index.chunks) == 5 and held == {"ALPHA", "CHARLIE"}
    assert not [hit for hit in index.search("Bravo dividends share", k=3) if "BRAVO" in hit.doc]

    # A later build (another upload) keeps the failed one out and still fits the rest.
    delta = parsed(project, "DELTA", "Delta", ["Delta page: one chunk only."])
    indexing.project_index_build(project_id=project.pk)
    delta.refresh_from_db()
    assert delta.status == Document.Status.INDEXED
    project.refresh_from_db()
    assert len(indexing.load_index(project.index_prefix).chunks) == 6


def test_a_project_whose_only_document_is_past_the_cap_has_no_index(alice, knob):
    knob("SLEUTH_INDEX_MAX_CHUNKS", 2)
    project = project_create(owner=alice, name="Too big")
    bravo = parsed(project, "BRAVO", "Bravo", BRAVO)

    with pytest.raises(indexing.IndexFailed, match="past the limit of 2"):
        indexing.project_index_build(project_id=project.pk)

    bravo.refresh_from_db()
    assert bravo.status == Document.Status.FAILED and "4 chunks" in bravo.error
    project.refresh_from_db()
    assert project.index_prefix == ""
