"""Search-index cases that the engine and the published bundle must search alike
(tests/engine/test_search_index.py, test_publishing_folder.py)."""

from engine.documents.chunking import Chunk


def chunk(cid, text, doc="d1", page=1, entity="Acme"):
    return Chunk(id=cid, doc=doc, page=page, entity=entity, text=text)


AMERICANS = [
    chunk(
        "ax",
        "debt securities registered",
        doc="AMERICANEXPRESS_2022_10K",
        entity="American Express",
    ),
    chunk(
        "aw",
        "debt securities registered",
        doc="AMERICANWATERWORKS_2022_10K",
        entity="American Water Works",
    ),
    chunk("am", "debt securities registered", doc="AMCOR_2022_10K", entity="Amcor"),
]
