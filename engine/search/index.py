"""The BM25 index the agent searches (bm25s, English stemming and stopwords).

Search is deterministic: ties are broken by chunk id, because chunks are stored in
chunk-id order and equal scores keep index order. Scores are computed for every chunk
(a sparse sum, well under a millisecond on tens of thousands of chunks), so filters are
exact masks rather than post-filtering a truncated top-k.

An index folder holds `bm25/` (bm25s's own files), `chunks.jsonl` and `index.json`
(format version and build parameters).

A query may begin with a scope in square brackets, "[3M 2018] capital expenditure": it
searches only the documents whose name or entity has every scope word as the start of one
of its words ("3M_2018_10K"). When no document has them all, the longest leading part of
the scope that names documents is used ("[3M 2019]" without a 2019 filing searches 3M's);
a scope that names no document searches everything. Within a scope, each word's IDF is
counted among the scoped chunks: a word all of them share ("3M" in 3M's filings) tells
nothing there, however rare it is elsewhere.

Words after a "|" in the brackets name the page: "[3M 2018 | cash flows] capital
expenditure" searches only the pages whose heading (a section's title and the page's first
`HEADING_CHARS` characters, where a filing page names its statement; a letter a PDF split
off a word, "Balance Shee t", joined back) holds every one of them. A page filter that no
page in scope passes is dropped, as a scope that names nothing is. It is what a search for a
statement's name cannot do: the prose pages that mention "the consolidated statements of
cash flows" outrank the statement itself, mostly numbers, while the statement's heading
names it and the prose's does not. The pages a heading line titles (a line of the heading
holding every filter word and at most `TITLE_WORDS` words, stopwords aside, or the filter's
words and one more) come first, then the rest the filter keeps: a filter written short ("|
cash flow" for "the cash flow statement") keeps the prose pages that open on cash flows as
well as the statement, and the query's words would rank the prose first. A filter is read as
written; a pack may read it in other ways too (`reading_filters`: the filings pack reads a
financial statement's name under its other names, "the P&L" for "Statements of Operations").

Every chunk is indexed with its page's heading (`HEADING_WEIGHT` times), so the words that
name a page find all of it, not only its first chunk: a question about "the cash flow
statement" reaches the statement's later rows, and within one company's filing (where the
scope leaves a few hundred pages alike) the heading is the best sign of what a page is.
Figures ("5,363", "27.2") are not words: split into "5" and "363" they matched nothing a
question asks and made a statement's pages, rows of them, long to BM25 and so rank low.
Whole numbers ("2018", "404") stay words, and since format 3 a word of letters and digits
is read as its runs ("FY2019" as "fy 2019", "Q2" as "q 2"): questions write periods that way,
filings and document names ("3M_2018_10K") write the year alone.

Scope words are read as a person writes a company's name: each must start a word of the
document's name or entity ("jpm" for JPMorgan); failing that, a word of four letters or more
may abbreviate the entity by the starts of its words ("amex": American Express), or be one
typo away from a name word ("ultra": Ulta). A student model misspells a name it copies, and a
scope that names nothing searches everything; numbers are always read exactly.

A scope's year is read exactly too, but not alone: where the scope names one, the same names'
documents of the later years the query's own words name are searched beside its documents
(`documents_scoped`). A student copies a year digit by digit and writes a year it has seen
often for one it reads ("[Pepsico 2022] As of May 26, 2023, …"); the question it copies after
the scope still holds the year asked about. Later years only: a filing reports its year beside
earlier ones, so "[Walmart 2020] … FY2018 - FY2020 …" is read in the 2020 filing, where
searching the 2018 one beside it showed the 2018 filing's pages first.

A search made for a question (`search(..., question=...)`, as the agent's every search is)
reads a scope naming several companies in the light of it: only those of them the question
names are searched, where it names any (`companies_asked`). A student shortens a name it
copies, and the short form can name two companies: a student wrote "[AMER 2022]" for
American Express, which names American Water Works too, and found the other's pages.
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

import bm25s
import numpy as np
import Stemmer
from bm25s.stopwords import STOPWORDS_EN

from engine.documents.chunking import Chunk

FORMAT_VERSION = 3  # 2: page headings with every chunk, figures not words; 3: "FY2019" as "fy 2019"
# Older formats differ only in what was indexed and how words are read, so their builds still
# load and search, queries read as they were built: the agents published on them keep working.
READABLE_FORMATS = (1, 2, 3)
HEADING_CHARS = 120  # a filing page's heading: its company, statement and period lines
HEADING_WEIGHT = 3  # a heading's words count as often in each chunk of its page
# A heading line of at most this many stems (stopwords and figures aside) is a title:
# "Consolidated Statements of Cash Flows", "Cash Flows:"; a longer one is the page's prose.
TITLE_WORDS = 4
FILTER_FIELDS = ("doc", "entity", "page")

# Words are runs of letters/digits; "_" and punctuation separate them, so a file name
# like "3M_2018_10K" yields the words a question uses ("3m", "2018", "10k").
_WORD = re.compile(r"[^\W_]+")
# A word written as a name is: a capital or a digit in it ("Block", "AMEX", "3M", "eBay").
_WRITTEN_AS_NAME = re.compile(r"[A-Z0-9]")
# A figure: digits grouped by commas, or with a decimal part.
_FIGURE = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.\d+")
# Where letters meet digits inside a word ("fy|2019", "q|2", "10|k").
_LETTERS_DIGITS = re.compile(r"(?<=[^\W\d_])(?=\d)|(?<=\d)(?=[^\W\d_])")
_SCOPE = re.compile(r"^\s*\[([^\]]*)\]\s*")
# A year as people write it: alone, in "FY2023" or in "2023-05-30".
YEAR = re.compile(r"(?<!\d)(?:19|20)\d\d(?!\d)")
# A PDF's text layer sometimes splits a word's last letter off ("Consolidated Balance Shee t",
# "Cash Flow s"): a lone lowercase letter that ends words, after a word of three or more;
# never one that stands alone ("a", "Plan b", "Note x", "c)").
_SPLIT_LETTER = re.compile(r"(?<=[a-z]{3}) (?=[deghklmnrsty](?![\w').]))")
_STOPWORDS = frozenset(STOPWORDS_EN)
_stemmer = Stemmer.Stemmer("english")


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    return _stemmer.stemWord(word)


def tokenize(text: str, format_version: int = FORMAT_VERSION) -> list[str]:
    """The words BM25 sees: lowercased, figures and stopwords dropped, runs of letters and of
    digits apart (format 3 on), Snowball-stemmed. `format_version` reads words as an
    index of that format was built."""
    text = _FIGURE.sub(" ", text.lower())
    if format_version >= 3:
        text = _LETTERS_DIGITS.sub(" ", text)
    return [_stem(w) for w in _WORD.findall(text) if w not in _STOPWORDS]


def names_word(word: str, names: list[str], entity: list[str], exact: bool = True) -> bool:
    """Whether a scope word names a document, whose name and entity have the words `names`
    (`entity`: the entity's words, in order): it starts one of them; else, unless `exact`,
    a word of four letters or more abbreviates the entity ("amex") or is one typo away from
    a name word ("ultra" for "ulta")."""
    if any(name.startswith(word) for name in names):
        return True
    if exact or len(word) < 4 or not word.isalpha():
        return False
    return abbreviates(word, entity) or any(
        len(name) >= 4 and one_edit_apart(word, name) for name in names
    )


def abbreviates(word: str, entity: list[str]) -> bool:
    """Whether `word` is the starts of two or more consecutive words of `entity`, in order
    ("amex": "am" + "ex" of "american express")."""

    def from_word(rest: str, i: int, used: int) -> bool:
        if not rest:
            return used >= 2
        if i == len(entity):
            return False
        return any(
            entity[i].startswith(rest[:j]) and from_word(rest[j:], i + 1, used + 1)
            for j in range(1, min(len(rest), len(entity[i])) + 1)
        )

    return any(from_word(word, i, 0) for i in range(len(entity)))


def one_edit_apart(a: str, b: str) -> bool:
    """Whether one letter inserted, deleted, replaced or two swapped turns `a` into `b`."""
    if a == b or abs(len(a) - len(b)) > 1:
        return a == b
    if len(a) > len(b):
        a, b = b, a
    i = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), len(a))
    if len(a) < len(b):
        return a[i:] == b[i + 1 :]
    swapped = i + 1 < len(a) and a[i] == b[i + 1] and a[i + 1] == b[i]
    return a[i + 1 :] == b[i + 1 :] or (swapped and a[i + 2 :] == b[i + 2 :])


def split_scope(query: str) -> tuple[str, str]:
    """`"[3M 2018] capex"` -> `("3M 2018", "capex")`; a query without a scope -> `("", query)`."""
    match = _SCOPE.match(query)
    if not match:
        return "", query
    return match.group(1).strip(), query[match.end() :]


def split_where(scope: str) -> tuple[str, str]:
    """`"3M 2018 | cash flows"` -> `("3M 2018", "cash flows")`: documents, then page heading."""
    names, _, heading = scope.partition("|")
    return names.strip(), heading.strip()


def as_written(stems: list[str]) -> list[frozenset[str]]:
    """A page filter's one reading: its own stems (`SearchIndex.reading_filters`)."""
    return [frozenset(stems)]


def page_of(chunk: Chunk) -> tuple:
    """The page (or section) a chunk is on: its chunk id less the position
    ("3M_2018_10K:p47")."""
    return (chunk.doc, chunk.page, chunk.id.rpartition(":")[0])


def page_headings(chunks: list[Chunk]) -> dict[tuple, str]:
    """Each page's heading: its section's title and its first chunk's `HEADING_CHARS`
    characters, where a filing page names its company, statement and period. `chunks` are
    in id order, so a page's first chunk comes first."""
    headings: dict[tuple, str] = {}
    for c in chunks:
        headings.setdefault(page_of(c), f"{c.section or ''} {c.text[:HEADING_CHARS]}")
    return headings


def mend_split_letters(text: str) -> str:
    """`text` with the letters a PDF split off its words joined back ("Balance Shee t" ->
    "Balance Sheet")."""
    return _SPLIT_LETTER.sub("", text)


def filter_heading_lines(chunk: Chunk) -> list[str]:
    """A page's heading as a page filter reads it, from the page's first chunk, line by line:
    the section's title, then the page's first `HEADING_CHARS` characters, split letters
    joined back (`mend_split_letters`); what BM25 indexed is left as it was built."""
    opening = mend_split_letters(chunk.text[:HEADING_CHARS])
    return [mend_split_letters(chunk.section or ""), *opening.splitlines()]


def indexed_text(chunk: Chunk, heading: str = "") -> str:
    """What BM25 matches against: the chunk plus the names that locate it (entity and
    document), which questions mention but pages often do not, and its page's heading."""
    headed = f"{heading}\n" * HEADING_WEIGHT if heading.strip() else ""
    return f"{chunk.entity or ''} {chunk.doc}\n{headed}{chunk.text}"


@dataclass(frozen=True)
class SearchHit:
    chunk_id: str
    score: float
    doc: str
    page: int | None
    entity: str | None
    text: str


def naming_text(question: str, names_company) -> str:
    """The part of `question` that may name a company: its words written as a name is, with
    a capital or a digit ("Block", "AMEX", "3M"), where one of them names a company
    (`names_company(word)`); else the whole question, so that one typed in lower case still
    names "jpm". Questions use company names as common words: "to the best of your
    abilities" names no Best Buy beside "Block", nor "selling, general and administrative"
    General Mills beside "Boeing's"."""
    written = " ".join(w for w in question.split() if _WRITTEN_AS_NAME.search(w))
    if any(names_company(word) for word in name_candidates(written)):
        return written
    return question


def name_candidates(text: str) -> set[str]:
    """The words of `text`, lowercased, that could name a company: two characters or more,
    not digits alone."""
    return {w for w in _WORD.findall(text.lower()) if len(w) > 1 and not w.isdigit()}


class SearchIndex:
    def __init__(self, chunks: list[Chunk], retriever: bm25s.BM25, params: dict):
        self._chunks = chunks
        self._retriever = retriever
        self._vocab: dict[str, int] = retriever.vocab_dict
        self._by_id = {c.id: i for i, c in enumerate(chunks)}
        self.params = params
        self._columns = {
            name: np.array([_key(getattr(c, name)) for c in chunks], dtype=object)
            for name in FILTER_FIELDS
        }
        self._mask_cache: dict[tuple, np.ndarray] = {}
        self._doc_freq: np.ndarray | None = None
        self._headed: dict[str, np.ndarray] | None = None
        self._title_lines: list[list[frozenset[str]]] = []  # by chunk, with `_headed`
        self._format = params.get("format_version", 1)
        self._doc_words: dict[str, list[str]] = {}
        self._entity_words: dict[str, list[str]] = {}
        self._company: dict[str, str] = {}  # by document: its entity, else itself
        for c in chunks:
            if c.doc not in self._doc_words:
                self._doc_words[c.doc] = _WORD.findall(f"{c.entity or ''} {c.doc}".lower())
                self._entity_words[c.doc] = _WORD.findall((c.entity or "").lower())
                self._company[c.doc] = c.entity or c.doc
        self._entity_word_lists = sorted({tuple(w) for w in self._entity_words.values() if w})
        self._names_company: dict[str, bool] = {}
        self._companies_asked: dict[str, frozenset[str]] = {}
        self._filter_readings: Callable[[list[str]], list[frozenset[str]]] = as_written

    def reading_filters(self, readings: Callable[[list[str]], list[frozenset[str]]]) -> SearchIndex:
        """This index with its page filters read in each of the ways `readings(stems)` gives
        (a pack's other names of a page), sharing its chunks, scores and caches."""
        self._read_headings()  # shared, not read again by each reader
        reader = copy.copy(self)
        reader._filter_readings = readings
        return reader

    @classmethod
    def build(cls, chunks: list[Chunk], k1: float = 1.5, b: float = 0.75) -> SearchIndex:
        if not chunks:
            raise ValueError("cannot build an index from zero chunks")
        ordered = sorted(chunks, key=lambda c: c.id)
        for a, b_ in zip(ordered, ordered[1:], strict=False):
            if a.id == b_.id:
                raise ValueError(f"duplicate chunk id {a.id!r}")
        retriever = bm25s.BM25(k1=k1, b=b, method="lucene")  # scores_within assumes it
        headings = page_headings(ordered)
        texts = [indexed_text(c, headings[page_of(c)]) for c in ordered]
        retriever.index([tokenize(text) for text in texts], show_progress=False)
        params = {"format_version": FORMAT_VERSION, "k1": k1, "b": b, "stemmer": "english"}
        return cls(ordered, retriever, params)

    def __len__(self) -> int:
        return len(self._chunks)

    @property
    def chunks(self) -> list[Chunk]:
        return list(self._chunks)

    def chunk(self, chunk_id: str) -> Chunk:
        return self._chunks[self._by_id[chunk_id]]

    def document_frequency(self, stem: str) -> int:
        """How many chunks contain a (stemmed) word, read off the BM25 matrix."""
        if self._doc_freq is None:
            indptr = self._retriever.scores["indptr"]
            self._doc_freq = np.diff(indptr, append=len(self._retriever.scores["data"]))
        token = self._vocab.get(stem)
        return 0 if token is None else int(self._doc_freq[token])

    def tokenize(self, text: str) -> list[str]:
        """`text`'s words as this index was built to read them."""
        return tokenize(text, self._format)

    def documents_named(self, scope: str) -> list[str]:
        """The documents a scope names: each scope word starts a word of the document's
        name or entity ("jpm 2021" names "JPMORGAN_2021Q1_10Q"), else names it loosely
        (`names_word`: "amex 2022", "ultra beauty"); else those its longest leading part
        names ("jpm 2019" names JPMorgan's); else none."""
        words = _WORD.findall(scope.lower())
        for n in range(len(words), 0, -1):
            for exact in (True, False):
                named = sorted(
                    doc
                    for doc, names in self._doc_words.items()
                    if all(names_word(w, names, self._entity_words[doc], exact) for w in words[:n])
                )
                if named:
                    return named
        return []

    def names_company(self, word: str) -> bool:
        """Whether a scope word names a company of this index as `documents_named` reads it
        (the start of a word of an entity, or loosely: "amex", "ultra"); document names
        ("10k", "2018") are no company."""
        word = word.lower()
        if word not in self._names_company:  # asked for each question word while decoding
            self._names_company[word] = any(
                names_word(word, words, words, exact)
                for exact in (True, False)
                for words in self._entity_word_lists
            )
        return self._names_company[word]

    def companies_asked(self, question: str) -> frozenset[str]:
        """The companies (entities) a question names, most narrowly: those each of its words
        written as a name (`naming_text`) names as a scope word would (`names_company`,
        `documents_named`), less those of a word that names more than another does
        ("american" names American Express and American Water Works; "express" says which)."""
        if question not in self._companies_asked:
            if len(self._companies_asked) >= 4096:  # a served agent's questions never end
                self._companies_asked.clear()
            words = name_candidates(naming_text(question, self.names_company))
            named = {
                frozenset(self._company[doc] for doc in self.documents_named(word))
                for word in words
                if self.names_company(word)
            } - {frozenset()}
            narrowest = (c for c in named if not any(other < c for other in named))
            self._companies_asked[question] = frozenset().union(*narrowest)
        return self._companies_asked[question]

    def documents_scoped(self, names: str, text: str, question: str = "") -> list[str]:
        """The documents a scope's `names` name (`documents_named`), and where they name a
        year, the same names' documents of the later years the query's `text` names; where
        they are several companies', those of the companies the `question` names, if any
        (see the module's note)."""
        docs = set(self.documents_named(names))
        if named_years := set(YEAR.findall(names)):
            rest = YEAR.sub(" ", names)
            for year in sorted(set(YEAR.findall(text))):
                if year > max(named_years):
                    docs.update(self.documents_named(f"{rest} {year}"))
        if question and len({self._company[doc] for doc in docs}) > 1:
            asked = self.companies_asked(question)
            docs = {doc for doc in docs if self._company[doc] in asked} or docs
        return sorted(docs)

    def search(
        self, query: str, k: int = 5, filters: dict | None = None, question: str = ""
    ) -> list[SearchHit]:
        """The top k chunks for a query (see the module's note on a `[scope]`, and on the
        `question` the search is made for); `filters` maps doc/entity/page to a value or a
        list of accepted values. Without a page filter, chunks that share no word with the
        query never appear."""
        scope, query = split_scope(query)
        names, heading = split_where(scope)
        ids = [self._vocab[t] for t in self.tokenize(query) if t in self._vocab]
        docs = self.documents_scoped(names, query, question) if names else []
        within = self._mask({"doc": docs}) if docs else None
        paged = False  # a page filter that some page passes
        if heading_stems := self.tokenize(heading):
            pages = self._pages_headed(heading_stems)
            pages = pages & within if within is not None else pages
            if paged := bool(pages.any()):
                within = pages
        if k <= 0 or not (ids or paged):
            return []
        if within is not None:
            scores = scores_within(self._retriever.scores, ids, within)
        else:
            scores = self._retriever.get_scores_from_ids(ids)
        if filters:
            scores = scores * self._mask(filters)
            within = within & self._mask(filters) if within is not None else None
        n = len(scores)
        if paged:
            # The pages a filter picked are what was asked for, the query's words only rank
            # them: a statement's page may share none ("purchases of property" for capex).
            candidates = np.flatnonzero(within)
        else:
            # Everything scoring at least the k-th best score (ties included, zero never).
            kth = np.partition(scores, n - k)[n - k] if n > k else 0.0
            candidates = np.flatnonzero(scores >= kth) if kth > 0 else np.flatnonzero(scores > 0)
        # An exact sort on (-score, position): equal scores come out in chunk-id order; the
        # pages a heading line titles before the rest a page filter keeps.
        keys = (candidates, -scores[candidates])
        if paged:
            keys += (~self._titled(heading_stems, candidates),)
        order = np.lexsort(keys)[:k]
        return [self._hit(int(i), float(scores[i])) for i in candidates[order]]

    def _pages_headed(self, stems: list[str]) -> np.ndarray:
        """The chunks on pages whose heading holds every one of `stems`, in one of the ways
        the filter may be read (`reading_filters`)."""
        self._read_headings()
        found = np.zeros(len(self._chunks), dtype=bool)
        for reading in self._filter_readings(stems):
            mask = np.ones(len(self._chunks), dtype=bool)
            for stem in reading:
                holding = np.zeros(len(self._chunks), dtype=bool)
                holding[self._headed.get(stem, [])] = True
                mask &= holding
            found |= mask
        return found

    def _titled(self, stems: list[str], ids: np.ndarray) -> np.ndarray:
        """Of the chunks `ids`, those on pages a line of whose heading holds every one of
        `stems` (in one of its readings) and is a title: at most `TITLE_WORDS` stems, or the
        reading's and one more."""
        self._read_headings()
        readings = [
            (wanted, max(TITLE_WORDS, len(wanted) + 1)) for wanted in self._filter_readings(stems)
        ]
        return np.array(
            [
                any(
                    wanted <= line and len(line) <= longest
                    for line in self._title_lines[i]
                    for wanted, longest in readings
                )
                for i in ids
            ],
            dtype=bool,
        )

    def _read_headings(self) -> None:
        """Each page's heading as a filter reads it (`filter_heading_lines`): stem -> the
        chunks whose page heading holds it, and each chunk's page's heading lines, as stems."""
        if self._headed is not None:
            return
        lines_of: dict[tuple, list[frozenset[str]]] = {}
        for c in self._chunks:  # in id order: a page's first chunk comes first
            if page_of(c) not in lines_of:
                lines = filter_heading_lines(c)
                lines_of[page_of(c)] = [frozenset(self.tokenize(line)) for line in lines]
        self._title_lines = [lines_of[page_of(c)] for c in self._chunks]
        postings: dict[str, list[int]] = {}
        for i, lines in enumerate(self._title_lines):
            for stem in frozenset().union(*lines):
                postings.setdefault(stem, []).append(i)
        self._headed = {stem: np.array(ids) for stem, ids in postings.items()}

    def _hit(self, i: int, score: float) -> SearchHit:
        c = self._chunks[i]
        return SearchHit(c.id, round(score, 4), c.doc, c.page, c.entity, c.text)

    def _mask(self, filters: dict) -> np.ndarray:
        key = tuple(sorted((name, _key_tuple(v)) for name, v in filters.items()))
        mask = self._mask_cache.get(key)
        if mask is None:
            mask = np.ones(len(self._chunks), dtype=bool)
            for name, value in filters.items():
                if name not in self._columns:
                    raise ValueError(f"unknown filter {name!r}; use one of {FILTER_FIELDS}")
                accepted = list(_key_tuple(value))
                mask &= np.isin(self._columns[name], accepted)
            if len(self._mask_cache) > 256:
                self._mask_cache.clear()
            self._mask_cache[key] = mask
        return mask

    def save(self, directory: str | Path) -> Path:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self._retriever.save(str(directory / "bm25"))
        with open(directory / "chunks.jsonl", "w", encoding="utf-8") as out:
            for c in self._chunks:
                out.write(json.dumps(asdict(c), ensure_ascii=False) + "\n")
        meta = self.params | {"chunk_count": len(self._chunks)}
        (directory / "index.json").write_text(json.dumps(meta, indent=2) + "\n")
        return directory

    @classmethod
    def load(cls, directory: str | Path) -> SearchIndex:
        directory = Path(directory)
        meta_path = directory / "index.json"
        if not meta_path.is_file():
            raise FileNotFoundError(f"{directory} is not a search index (no index.json)")
        params = json.loads(meta_path.read_text())
        if params.get("format_version") not in READABLE_FORMATS:
            raise ValueError(
                f"{directory}: index format {params.get('format_version')} is not one this "
                f"release reads ({', '.join(map(str, READABLE_FORMATS))}); rebuild it with "
                "`sleuth index`"
            )
        with open(directory / "chunks.jsonl", encoding="utf-8") as f:
            chunks = [Chunk(**json.loads(line)) for line in f]
        retriever = bm25s.BM25.load(str(directory / "bm25"))
        params.pop("chunk_count", None)
        return cls(chunks, retriever, params)


def scores_within(matrix: dict, ids: list[int], scope: np.ndarray) -> np.ndarray:
    """BM25 scores of the chunks in `scope` (a boolean mask; others score 0) with each word's
    IDF counted among them. bm25s stores, per word and chunk, IDF times the term-frequency
    part (Lucene's IDF, its default method, which `build` uses), so rescaling a word's
    stored scores by scoped IDF / whole-index IDF gives BM25 over the scoped chunks alone."""
    data, indices, indptr = matrix["data"], matrix["indices"], matrix["indptr"]
    n_all, n_scoped = len(scope), int(scope.sum())
    scores = np.zeros(n_all, dtype=np.float32)
    for token in ids:
        chunks = indices[indptr[token] : indptr[token + 1]]
        inside = scope[chunks]
        df_scoped = int(inside.sum())
        if df_scoped:
            weight = _idf(df_scoped, n_scoped) / _idf(len(chunks), n_all)
            scores[chunks[inside]] += data[indptr[token] : indptr[token + 1]][inside] * weight
    return scores


def _idf(df: int, n: int) -> float:
    """Lucene's BM25 IDF, as bm25s computes it."""
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


def _key(value) -> str:
    return "" if value is None else str(value)


def _key_tuple(value) -> tuple[str, ...]:
    if isinstance(value, (list, tuple, set, frozenset)):
        return tuple(sorted(_key(v) for v in value))
    return (_key(value),)
