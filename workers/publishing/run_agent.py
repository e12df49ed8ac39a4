"""Run a published Sleuth search agent on one question, locally.

    python agent/run_agent.py "your question" [--model FOLDER] [--index FOLDER]

Standalone: it needs transformers, torch, bm25s and PyStemmer, not Sleuth. The model
writes <search>query</search> (or <search>[3M 2018] query</search>, searching only the
documents whose names have words starting with those, or
<search>[3M 2018 | cash flow] query</search>, only their pages whose heading holds those
words, those it titles first; the brackets alone search the question itself there); this script
runs the query on the bundled BM25 index and appends the hits between <results> and </results>,
until the model writes <answer>…</answer> or a limit is reached. Prints the answer (or the whole
transcript with --verbose). This file is copied into every published folder as
agent/run_agent.py.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
_WORD = re.compile(r"[^\W_]+")
_SCOPE = re.compile(r"^\s*\[([^\]]*)\]\s*")
_YEAR = re.compile(r"(?<!\d)(?:19|20)\d\d(?!\d)")
_SPLIT_LETTER = re.compile(r"(?<=[a-z]{3}) (?=[deghklmnrsty](?![\w').]))")  # "Balance Shee t"
_FIGURE = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.\d+")
_LETTERS_DIGITS = re.compile(r"(?<=[^\W\d_])(?=\d)|(?<=\d)(?=[^\W\d_])")
HEADING_CHARS = 120
TITLE_WORDS = 4  # a heading line this short is a title ("Consolidated Balance Sheets")
# The names questions and filings give the same financial statement: a page filter naming one
# finds the pages headed by any ("statement of financial position": "Balance Sheets").
STATEMENT_NAMES = (
    ("balance sheet", "statement of financial position", "statement of financial condition"),
    (
        "income statement",
        "statement of income",
        "statement of operations",
        "statement of earnings",
        "profit and loss",
        "p&l",
    ),
)
_PUNCTUATION = "\"'“”‘’()[]{},.;:?!"


class Index:
    """The bundled bm25s index, searched exactly as during training."""

    def __init__(self, folder: Path):
        import bm25s
        import Stemmer
        from bm25s.stopwords import STOPWORDS_EN

        self.retriever = bm25s.BM25.load(str(folder / "bm25"))
        with open(folder / "chunks.jsonl", encoding="utf-8") as f:
            self.chunks = [json.loads(line) for line in f]
        self.stopwords = frozenset(STOPWORDS_EN)
        meta = folder / "index.json"
        self.format = json.loads(meta.read_text()).get("format_version", 1) if meta.is_file() else 1
        self.doc_names = {
            c["doc"]: _WORD.findall(f"{c.get('entity') or ''} {c['doc']}".lower())
            for c in self.chunks
        }
        self.entity_words = {
            c["doc"]: _WORD.findall((c.get("entity") or "").lower()) for c in self.chunks
        }
        # Each company's name words once, for `names_company` (asked for every question word).
        self.entities = sorted({tuple(w) for w in self.entity_words.values() if w})
        self.chunk_docs = [c["doc"] for c in self.chunks]
        self.company = {c["doc"]: c.get("entity") or c["doc"] for c in self.chunks}
        self.stemmer = Stemmer.Stemmer("english")
        self.headings: list[frozenset[str]] | None = None  # by chunk: its page's heading
        self.title_lines: list[list[frozenset[str]]] = []  # and its lines, with `headings`

    def tokenize(self, text: str) -> list[str]:
        """Lowercased words, figures ("5,363", "27.2") and stopwords dropped, runs of letters
        and of digits apart ("FY2019": "fy 2019", from index format 3 on), stemmed."""
        text = _FIGURE.sub(" ", text.lower())
        if self.format >= 3:
            text = _LETTERS_DIGITS.sub(" ", text)
        return [self.stemmer.stemWord(w) for w in _WORD.findall(text) if w not in self.stopwords]

    def readings(self, stems: list[str]) -> list[frozenset[str]]:
        """A page filter's stems, and where they name a financial statement (STATEMENT_NAMES),
        each with that name swapped for the statement's others."""
        readings = [frozenset(stems)]
        for names in STATEMENT_NAMES:
            group = [frozenset(self.tokenize(name)) for name in names]
            named = next((name for name in group if name <= readings[0]), None)
            if named is not None:
                readings = [r - named | other for r in readings for other in group]
        return list(dict.fromkeys(readings))

    def pages_headed(self, stems: list[str]):
        """A mask of the chunks on pages whose heading holds every one of `stems` (in one of
        their readings): the section's title and the first HEADING_CHARS characters of the
        page's first chunk, line by line, a letter a PDF split off a word joined back."""
        import numpy as np

        if self.headings is None:
            first: dict[tuple, list[frozenset[str]]] = {}
            self.headings, self.title_lines = [], []
            for c in self.chunks:
                page = (c["doc"], c.get("page"), c["id"].rpartition(":")[0])
                if page not in first:
                    opening = _SPLIT_LETTER.sub("", c["text"][:HEADING_CHARS])
                    section = _SPLIT_LETTER.sub("", c.get("section") or "")
                    first[page] = [
                        frozenset(self.tokenize(x)) for x in [section, *opening.splitlines()]
                    ]
                self.title_lines.append(first[page])
                self.headings.append(frozenset().union(*first[page]))
        readings = self.readings(stems)
        return np.array([any(r <= heading for r in readings) for heading in self.headings])

    def titled(self, stems: list[str], found) -> list[bool]:
        """Of the chunks `found`, whether a line of their page's heading holds every one of
        `stems` (in one of their readings) and is a title: at most TITLE_WORDS stems, or the
        reading's and one more."""
        readings = [(r, max(TITLE_WORDS, len(r) + 1)) for r in self.readings(stems)]
        return [
            any(
                wanted <= line and len(line) <= longest
                for line in self.title_lines[int(i)]
                for wanted, longest in readings
            )
            for i in found
        ]

    def documents_named(self, scope: str) -> set[str]:
        """Documents whose name or entity has a word starting with each scope word, else
        named loosely by each (an abbreviation, "amex", or one typo, "ultra"), else by each
        word of the scope's longest leading part that names any."""
        words = _WORD.findall(scope.lower())
        for n in range(len(words), 0, -1):
            for exact in (True, False):
                named = {
                    doc
                    for doc, names in self.doc_names.items()
                    if all(_names_word(w, names, self.entity_words[doc], exact) for w in words[:n])
                }
                if named:
                    return named
        return set()

    def documents_scoped(self, names: str, text: str, question: str = "") -> set[str]:
        """The documents the scope names, and where it names a year, the same names'
        documents of the later years the query's text names (a filing reports its year beside
        earlier ones); where they are several
        companies', those of the companies the question names, if any ("[AMER 2022]" for
        American Express names American Water Works too)."""
        docs = self.documents_named(names)
        if named_years := set(_YEAR.findall(names)):
            rest = _YEAR.sub(" ", names)
            for year in sorted(set(_YEAR.findall(text))):
                if year > max(named_years):
                    docs |= self.documents_named(f"{rest} {year}")
        if question and len({self.company[doc] for doc in docs}) > 1:
            asked = self.companies_asked(question)
            docs = {doc for doc in docs if self.company[doc] in asked} or docs
        return docs

    def names_company(self, word: str) -> bool:
        """Whether a scope word names a company of the index: starts a word of its name, or
        names it loosely ("amex")."""
        return any(
            _names_word(word, list(w), list(w), exact)
            for exact in (True, False)
            for w in self.entities
        )

    def companies_asked(self, question: str) -> frozenset:
        """The companies a question names, most narrowly: those each of its words written as
        a name (`naming_text`) names as a scope word would, less those of a word naming more
        than another does ("american" of "American Express")."""
        named = set()
        for word in name_candidates(naming_text(question, self.names_company)):
            if self.names_company(word):
                named.add(frozenset(self.company[doc] for doc in self.documents_named(word)))
        named.discard(frozenset())
        return frozenset().union(*(c for c in named if not any(other < c for other in named)))

    def scores_within(self, ids: list[int], scope):
        """BM25 over the scoped chunks alone: each word's stored score (Lucene IDF times its
        term-frequency part) rescaled by its IDF among the scoped chunks / in the whole index."""
        import numpy as np

        matrix = self.retriever.scores
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

    def search(self, query: str, k: int, question: str = "") -> list[dict]:
        """A leading "[3M 2018]" limits the search to the documents it names, if any (where
        they are several companies', to the `question`'s); "[3M 2018 | cash flows]" to their
        pages whose heading holds those words, if any, the pages a line of the heading titles
        first."""
        import numpy as np

        scope = _SCOPE.match(query)
        names, _, heading = (scope.group(1) if scope else "").partition("|")
        if scope:
            query = query[scope.end() :]
        vocab = self.retriever.vocab_dict
        ids = [vocab[t] for t in self.tokenize(query) if t in vocab]
        docs = self.documents_scoped(names, query, question) if names.strip() else set()
        within = np.array([doc in docs for doc in self.chunk_docs]) if docs else None
        paged = False  # a page filter that some page (in scope) passes
        if stems := self.tokenize(heading):
            pages = self.pages_headed(stems)
            pages = pages & within if within is not None else pages
            if paged := bool(pages.any()):
                within = pages
        if k <= 0 or not (ids or paged):
            return []
        if within is not None:
            scores = self.scores_within(ids, within)
        else:
            scores = self.retriever.get_scores_from_ids(ids)
        # The pages a filter picked are what was asked for; the words only rank them, after
        # the pages a heading line titles.
        found = np.flatnonzero(within) if paged else np.flatnonzero(scores > 0)
        keys = (found, -scores[found])
        if paged:
            keys += (~np.array(self.titled(stems, found), dtype=bool),)
        order = np.lexsort(keys)[:k]
        return [self.chunks[int(i)] for i in found[order]]


def _names_word(word: str, names: list[str], entity: list[str], exact: bool) -> bool:
    """A scope word names a document if it starts one of its name words; else, unless
    `exact`, if it has four letters or more and abbreviates the entity by the starts of two
    or more consecutive words, or is one typo from a name word of four letters or more."""
    if any(name.startswith(word) for name in names):
        return True
    if exact or len(word) < 4 or not word.isalpha():
        return False
    return _abbreviates(word, entity) or any(
        len(name) >= 4 and _one_edit_apart(word, name) for name in names
    )


def _abbreviates(word: str, entity: list[str]) -> bool:
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


def _one_edit_apart(a: str, b: str) -> bool:
    if a == b or abs(len(a) - len(b)) > 1:
        return a == b
    if len(a) > len(b):
        a, b = b, a
    i = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), len(a))
    if len(a) < len(b):
        return a[i:] == b[i + 1 :]
    swapped = i + 1 < len(a) and a[i] == b[i + 1] and a[i + 1] == b[i]
    return a[i + 1 :] == b[i + 1 :] or (swapped and a[i + 2 :] == b[i + 2 :])


def _idf(df: int, n: int) -> float:
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


def searched_query(query: str, question: str) -> str:
    """The query a search runs: a scope alone ("[3M 2018]") searches the question itself
    within it, as in training (protocol 6)."""
    scope = _SCOPE.match(query)
    if scope and scope.group(1).strip() and not query[scope.end() :].strip():
        return f"{query.strip()} {question.strip()}"
    return query


def new_hits(index: Index, query: str, k: int, shown: set[str], question: str = "") -> list[dict]:
    """The top k hits of `query`, searched for `question`, not shown before in this
    conversation, as the engine the agent was trained with gives them (a second search shows
    the next results)."""
    hits = index.search(query, k + len(shown), question)
    return [hit for hit in hits if hit["id"] not in shown][:k]


def fit_hits(hits: list[dict], room: int, encode, query: str = "", tokenize=None):
    """The results as the agent saw them in training, and the ids of the hits whose id was
    shown: every hit gets an equal share of the token budget (a long first hit cannot push
    the others out), and a hit longer than its share shows its lines that hold the most of
    the query's words (`excerpt`)."""
    if not hits:
        text = "No results. Try other words: the documents may name it differently."
        return encode(text)[:room], []
    separator = encode("\n\n")
    share = max((room - len(separator) * (len(hits) - 1)) // len(hits), 0)
    body, shown = [], []
    for i, hit in enumerate(hits):
        page = f" | page {hit['page']}" if hit.get("page") is not None else ""
        header = f"[{hit['id']}] {hit['doc']}{page}\n"
        ids = encode(header + hit["text"])
        if len(ids) > share:

            def fits(text: str, header: str = header) -> bool:
                return len(encode(header + text)) <= share

            ids = encode(header + excerpt(hit["text"], query, fits, tokenize or str.split))
        if len(ids[:share]) >= len(encode(f"[{hit['id']}]")):
            shown.append(hit["id"])
        body += (separator if i else []) + ids[:share]
    return body, shown


def excerpt(text: str, query: str, fits, tokenize) -> str:
    """The hit's first line, then its lines by how many of the query's words (after any
    "[scope]") they hold, then the rest, as many as fit, in the page's order, "…" for gaps."""
    lines = text.split("\n")
    scope = _SCOPE.match(query)
    wanted = set(tokenize(query[scope.end() :] if scope else query))
    held = [len(wanted.intersection(tokenize(line))) for line in lines]
    chosen: list[int] = []
    for i in sorted(range(len(lines)), key=lambda i: (i > 0, -held[i], i)):
        if fits(_joined(lines, sorted([*chosen, i]))):
            chosen = sorted([*chosen, i])
    return _joined(lines, chosen) if chosen else text


def _joined(lines: list[str], chosen: list[int]) -> str:
    parts = []
    for before, i in zip([-1, *chosen], chosen, strict=False):
        if i != before + 1:
            parts.append("…")
        parts.append(lines[i])
    if chosen and chosen[-1] != len(lines) - 1:
        parts.append("…")
    return "\n".join(parts)


def _closing_tag(text: str) -> str:
    """The tag closing the <search> or <answer> that `text` opened last and left open."""
    search, answer = text.rfind("<search>"), text.rfind("<answer>")
    if search > answer and "</search>" not in text[search:]:
        return "</search>"
    if answer > search and "</answer>" not in text[answer:]:
        return "</answer>"
    return ""


class _StopAfterTag:
    """Stops generation once the new text holds </search> or </answer> (transformers'
    stop_strings needs a byte-level vocabulary; this works with any tokenizer)."""

    def __init__(self, tokenizer, start: int):
        self.tokenizer, self.start = tokenizer, start

    def __call__(self, input_ids, scores, **kwargs):
        import torch

        text = self.tokenizer.decode(input_ids[0, self.start :])
        done = "</search>" in text or "</answer>" in text
        return torch.tensor([done], dtype=torch.bool, device=input_ids.device)


_FIGURE_RUN = re.compile(r"\d[\d,.]*")  # a figure as a grounded answer reads one
_OPEN_FIGURE = re.compile(r"\d[\d,.]*$")


def shown_figures(text: str) -> tuple[set[str], set[str]]:
    """The figures `text` shows (as written and without thousands separators), and every
    start of one: what a grounded answer may write (`grounded_figures` in agent.json)."""
    figures = set()
    for match in _FIGURE_RUN.finditer(text):
        figure = match.group().rstrip(",.")
        figures.update((figure, figure.replace(",", "")))
    return figures, {f[:i] for f in figures for i in range(1, len(f) + 1)}


def banned_tokens(answer: str, shown: tuple[set[str], set[str]], texts: dict[int, str]):
    """The token ids that may not follow the answer written so far: those writing a figure
    not shown, and, while a figure is unfinished, every token that would end it. `texts`
    maps the ids holding a digit or starting with "," or "." to their text; None: any may."""
    figures, starts = shown
    open_figure = _OPEN_FIGURE.search(answer)
    current = open_figure.group() if open_figure else ""

    def fits(token: str) -> bool:
        figure = current
        for char in token:
            if char.isdigit() or (figure and char in ",."):
                figure += char
            elif figure:
                if figure.rstrip(",.") not in figures:
                    return False
                figure = ""
        return not figure or figure in starts or figure.rstrip(",.") in figures

    candidates = [i for i, t in texts.items() if current or _has_digit(t)]
    banned = {i for i in candidates if not fits(texts[i])}
    ends_banned = bool(current) and current.rstrip(",.") not in figures
    if not banned and not ends_banned:
        return None
    return banned, ends_banned


def _has_digit(text: str) -> bool:
    return any(c.isdigit() for c in text)


# A table row's trailing values, as `documents.synthesis` reads them: "(1,577)", "$236,495", "—".
_ROW_VALUE = re.compile(r"\(?-?\$?\(?\d[\d,]*(?:\.\d+)?\)?%?\)?|[—–-]")
_LABEL_WORD = re.compile(r"[a-z]+")


def result_rows(text: str) -> list[tuple[tuple[str, ...], str]]:
    """The table rows results show: each label's words and its first figure (`row_figures`
    in agent.json: an answer that begins with a row's label writes that row's first figure)."""
    rows = []
    for line in text.splitlines():
        tokens = line.split()
        values: list[str] = []
        while tokens and _ROW_VALUE.fullmatch(tokens[-1]):
            values.insert(0, tokens.pop())
        label = " ".join(tokens).rstrip(" :—-$")
        first = next((f for v in values for f in _FIGURE_RUN.findall(v)), None)
        words = tuple(_LABEL_WORD.findall(label.lower()))
        # Not a sentence that ends with a figure ("… compared with 2021"): no digit, short.
        row = re.match(r"[A-Za-z]", label) and not _has_digit(label) and len(label) <= 80
        if row and first and words:
            rows.append((words, first.rstrip(",.")))
    return rows


def _same_word(a: str, b: str) -> bool:
    short, long = sorted((a, b), key=len)
    return a == b or (len(short) >= 4 and long.startswith(short))


def quoted_row(answer: str, rows: list) -> tuple[set[str], set[str]] | None:
    """What the answer's first figure may be, as `shown_figures` gives it: the first figure of
    the rows whose label its words before it begin or are begun by (at least two words, or a
    whole one-word label; an equal label first); None when it quotes no row or that figure is
    written and closed."""
    first = _FIGURE_RUN.search(answer)
    if first and first.end() < len(answer):
        return None
    words = tuple(_LABEL_WORD.findall((answer[: first.start()] if first else answer).lower()))
    best, figures = (0, False), set()
    for label, figure in rows:
        shared = 0
        while shared < min(len(words), len(label)) and _same_word(words[shared], label[shared]):
            shared += 1
        whole = shared == len(words) == len(label)
        if shared < min(len(words), len(label)) or not (shared >= 2 or whole):
            continue
        if (shared, whole) > best:
            best, figures = (shared, whole), set()
        if (shared, whole) == best:
            figures.add(figure)
    return shown_figures(" ".join(figures)) if figures else None


class _GroundedFigures:
    """A logits processor: inside <answer>, only figures the question or results showed
    (`shown_text`, None: any), and after a row's label that row's first figure (`rows`)."""

    def __init__(self, tokenizer, start: int, shown_text, rows, texts: dict[int, str]):
        self.tokenizer, self.start, self.texts = tokenizer, start, texts
        self.shown = shown_figures(shown_text) if shown_text is not None else None
        self.rows = rows

    @staticmethod
    def figure_tokens(tokenizer) -> dict[int, str]:
        """The ids whose text holds a digit or starts with "," or ".", and their text."""
        texts = {i: tokenizer.decode([i]) for i in range(len(tokenizer))}
        return {i: t for i, t in texts.items() if _has_digit(t) or t.startswith((",", "."))}

    def __call__(self, input_ids, scores):
        text = self.tokenizer.decode(input_ids[0, self.start :])
        opened = text.rfind("<answer>")
        if opened < 0:
            return scores
        answer = text[opened + len("<answer>") :]
        allowed = quoted_row(answer, self.rows) if self.rows else None
        allowed = allowed or self.shown
        ruled = banned_tokens(answer, allowed, self.texts) if allowed else None
        if ruled is None:
            return scores
        banned, ends_banned = ruled
        mask = scores.new_zeros(scores.shape[-1], dtype=bool)
        if ends_banned:
            mask[:] = True
            mask[list(self.texts)] = False
        mask[list(banned)] = True
        if bool(mask.all()):
            return scores
        return scores.masked_fill(mask, float("-inf"))


# As `workers.agent.greedy_rules`: a rule looks far down the ranking before it gives up.
LOOP_RUN_WORDS, LOOP_REPEATS, RULE_CANDIDATES = 4, 3, 4096


def ends_in_loop(text: str) -> bool:
    """Whether `text` ends with one run of 1-4 words written three times in a row
    ("amount amount amount"), or with a word of no letters longer than any figure (20
    characters or 15 digits, a tag before it aside: "-111111122222221122222"), or with a word
    that repeats the same 1-8 characters three times over 8 or more, zeros and separators aside
    ("1.1.1.1.", not "1,000,000,000"): a greedy loop (`loop_guard` in agent.json)."""
    words = text.split()
    if words and not text[-1].isspace():
        last = words[-1].rsplit(">", 1)[-1]
        if not any(c.isalpha() for c in last) and (
            len(last) > 20 or sum(c.isdigit() for c in last) > 15
        ):
            return True
        looped = re.search(r"(\S{1,8}?)\1{2,}$", last)
        if looped and len(looped[0]) >= 8 and looped[0].strip("0,."):
            return True
    for n in range(1, LOOP_RUN_WORDS + 1):
        tail = words[-n * LOOP_REPEATS :]
        if len(tail) < n * LOOP_REPEATS:
            break
        if all(word == tail[i % n] for i, word in enumerate(tail)):
            return True
    return False


def scope_uncopied(segment: str, question: str, companies: frozenset = frozenset()) -> bool:
    """Whether a search turn's text so far opens a `[scope]` with a word that is no piece of
    the question's words, case aside (`grounded_scope` in agent.json): a word written whole
    is a question word, or its start or end (two letters on); one still being written is
    inside one. A question's words are taken without the punctuation around them, and the
    runs of letters and digits inside them, of letters alone and of digits alone count as
    words too ("2023" of "FY2023Q1"). With `companies` (the question's pieces that name a
    company of the index, `companies_named`), the scope's names (before any "|") must begin
    with a start of one of them ("PepsiCo" or "Pepsi", not "FY2022")."""
    start = segment.rfind("<search>")
    if start < 0:
        return False
    opened = re.match(r"\s*\[", segment[start + len("<search>") :])
    if not opened:
        return False
    scope, closed, _ = segment[start + len("<search>") + opened.end() :].partition("]")
    if companies and _names_no_company(scope, bool(closed), companies):
        return True
    words = scope.replace("|", " ").lower().split()
    if not words:
        return False
    pieces = question_pieces(question)
    *written, last = words
    if closed or scope[-1] in "| \t\n":
        written.append(last)
    elif not any(last in piece for piece in pieces):
        return True
    return not all(
        word in pieces
        or (len(word) > 1 and any(p.startswith(word) or p.endswith(word) for p in pieces))
        for word in written
    )


def scope_year_not_latest(segment: str, question: str) -> bool:
    """Whether a search turn's text so far opens a `[scope]` writing a year, or three digits
    or more on their way to one, other than the latest the question names ("2020" of "FY2018 -
    FY2020"; `latest_year_scope` in agent.json)."""
    start = segment.rfind("<search>")
    if start < 0:
        return False
    opened = re.match(r"\s*\[", segment[start + len("<search>") :])
    latest = max(_YEAR.findall(question), default=None)
    if not opened or not latest:
        return False
    scope, closed, _ = segment[start + len("<search>") + opened.end() :].partition("]")
    for run in re.finditer(r"(?<!\d)(?:19|20)\d+", scope):
        ended = bool(closed) or run.end() < len(scope)
        if len(run[0]) > 2 and not (run[0] == latest if ended else latest.startswith(run[0])):
            return True
    return False


def terms_uncopied(segment: str, question: str) -> bool:
    """Whether a search turn's text so far writes, after its `[scope]` (the whole query where
    it opens none), a word that is none of the question's, or one it wrote before, case aside,
    or a sign the question has not (`grounded_terms` in agent.json): a word is a run of
    letters and digits of any script; one still being written has to begin one of the
    question's it has not written."""
    start = segment.rfind("<search>")
    if start < 0:
        return False
    query = segment[start + len("<search>") :]
    if re.match(r"\s*\[", query):
        _, closed, query = query.partition("]")
        if not closed:
            return False
    terms, closing, tag = query.partition("<")
    tag, terms = closing + tag, terms.lower()
    if tag and not (tag.startswith("</search>") or "</search>".startswith(tag)):
        return True  # a tag but its own closing: "risk\n<search>"
    if any(not c.isspace() and c not in question for c in _WORD.sub(" ", terms)):
        return True
    words = _WORD.findall(terms)
    if not words:
        return False
    asked = set(_WORD.findall(question.lower()))
    *written, last = words
    if tag or not terms[-1].isalnum():
        written.append(last)
    elif not any(word.startswith(last) for word in asked - set(written)):
        return True
    return not set(written) <= asked or len(set(written)) < len(written)


def question_pieces(question: str) -> set[str]:
    lowered = question.lower()
    pieces = {w.strip(_PUNCTUATION) for w in lowered.split()} - {""}
    return pieces | set(re.findall(r"[a-z0-9]+", lowered) + re.findall(r"[a-z]+|[0-9]+", lowered))


def naming_text(question: str, names_company) -> str:
    """The question's words written as a name is (a capital or a digit: "Block", "AMEX",
    "3M") where one of them names a company, else the whole question: "to the best of your
    abilities" names no Best Buy beside "Block"."""
    written = " ".join(w for w in question.split() if re.search(r"[A-Z0-9]", w))
    if any(names_company(word) for word in name_candidates(written)):
        return written
    return question


def name_candidates(text: str) -> set:
    return {w for w in _WORD.findall(text.lower()) if len(w) > 1 and not w.isdigit()}


def companies_named(question: str, index: Index) -> frozenset:
    """The pieces of the question's words written as a name (`naming_text`), two letters or
    more, not digits alone, that start a word of a company's name in the index, or name one
    loosely ("amex")."""
    return frozenset(
        piece
        for piece in question_pieces(naming_text(question, index.names_company))
        if len(piece) > 1 and not piece.isdigit() and index.names_company(piece)
    )


def _names_no_company(scope: str, closed: bool, companies: frozenset) -> bool:
    """Whether a scope's names begin with no start of a company the question names: once
    their first word is written whole, or when they end without one."""
    names, piped, _ = scope.partition("|")
    words = names.lower().split()
    if not words:
        return bool(piped) or closed
    first = words[0].strip(_PUNCTUATION)
    if len(words) > 1 or piped or closed or names[-1].isspace():
        return len(first) < 2 or not any(
            company.startswith(first) or first.startswith(company) for company in companies
        )
    return not any(company.startswith(first) for company in companies)


_AUXILIARY = r"(?:is|are|was|were|do|does|did|has|have|had|can|could|will|would|should)\b"
_PREPOSITION = r"(?:(?:by|in|of|for|to|from|at|on)\s+)?"
_QUESTION_WORD = _PREPOSITION + r"(?:what|which|why|who|whom|whose|how|where|when)\b"
_RELATIVE = _PREPOSITION + r"(?:which|who|whom|whose|where|when)\b"


def asking_clause(question: str) -> str:
    """The clause of the question's first sentence that asks: the first to open with an
    auxiliary verb or a question word, after any opening phrases ("Among operations,
    investing, and financing activities, which…"); a relative word's clause gives way to a
    later auxiliary verb's ("For 3M, which sells tape, did revenue grow?"); "" where none."""
    first = question.strip().split("?")[0]
    clauses = [c.strip() for c in re.split(r"[,:;]|\.\s", first)]
    asking = [c for c in clauses if re.match(_AUXILIARY + "|" + _QUESTION_WORD, c, re.I)]
    auxiliary = [c for c in asking if re.match(_AUXILIARY, c, re.I)]
    if asking and re.match(_RELATIVE, asking[0], re.I) and auxiliary:
        return auxiliary[0]
    return asking[0] if asking else ""


def asks_yes_no(question: str) -> bool:
    """Whether the question's first sentence asks yes or no: its asking clause opens with an
    auxiliary verb ("Is 3M…", "Looking at VaR, did…"), and it offers no choice ("… increase
    or decrease")."""
    first = question.strip().split("?")[0]
    opens = re.match(_AUXILIARY, asking_clause(question), re.I)
    return bool(opens) and not re.search(r"\bor\b", first, re.I)


def answer_not_yes_no(segment: str) -> bool:
    """Whether the answer the segment writes begins with a word that is not "Yes" or "No"
    (case aside), or with letters that cannot become one."""
    start = segment.rfind("<answer>")
    if start < 0:
        return False
    written = segment[start + len("<answer>") :].lstrip()
    first = re.match(r"[^\W\d_]*", written).group().lower()
    if len(first) < len(written):
        return first not in ("yes", "no")
    return not ("yes".startswith(first) or "no".startswith(first))


def offered_options(question: str):
    """The two words a question opening as a yes-or-no one asks to choose between with
    "A or B" ("… increase or decrease…?" -> ("increase", "decrease")), else None."""
    first = question.strip().split("?")[0]
    opens = re.match(_AUXILIARY, asking_clause(question), re.I)
    offered = re.search(r"\b([a-z]+)\s+or\s+([a-z]+)\b", first, re.I) if opens else None
    return (offered[1].lower(), offered[2].lower()) if offered else None


# A question asking what drove a change, or why (the engine's `synthesis.asks_cause`).
_ASKS_CAUSE = (
    r"\bwhat drove\b|\bwhy (?:did|do|does|has|have|is|are|was|were)\b"
    r"|\bwhat (?:was|were) the (?:main )?(?:reason|driver)"
)


def asks_what(question: str) -> bool:
    """Whether the question's asking clause opens with a question word (what, which, how…)."""
    return bool(re.match(_QUESTION_WORD, asking_clause(question), re.I))


def answer_tag_off(segment: str) -> bool:
    """Whether the answer the segment writes writes a tag other than its closing "</answer>"
    (`answer_tag` in agent.json)."""
    start = segment.find("<answer>")
    if start < 0:
        return False
    written = segment[start + len("<answer>") :]
    tag = written[written.find("<") :] if "<" in written else ""
    return bool(tag) and not (tag.startswith("</answer>") or "</answer>".startswith(tag))


def answer_off_form(segment: str, question: str) -> bool:
    """Whether the answer the segment writes is not of the form the question asks
    (`answer_form` in agent.json): for a choice, its first word is no form of an option
    ("increased", "increasing"); for a question asking what drove a change, or why, it opens
    as a figure does; for a question opening with a question word, it is "Yes" or "No" so far."""
    start = segment.find("<answer>")
    if start < 0:
        return False
    written = segment[start + len("<answer>") :].lstrip()
    opens_figure = written[:1].isdigit() or written[:1] in tuple("-+$€£¥(.,%")
    if opens_figure and re.search(_ASKS_CAUSE, question, re.I):
        return True
    first = re.match(r"[^\W\d_]*", written).group().lower()
    options = offered_options(question)
    if options and written:
        forms = set()
        for option in options:
            stem = re.sub(r"(?:ing|ed|es|e|d|s)$", "", option)
            stem = stem if len(stem) >= 3 else option
            forms |= {option, option + "s", *(stem + end for end in ("e", "es", "ed", "ing"))}
        if len(first) < len(written):
            return first not in forms or written[len(first)].isdigit()
        return not any(form.startswith(first) for form in forms)
    if not asks_what(question):
        return False
    return first in ("yes", "no")


_STATEMENT_NAMED = re.compile(
    r"\b(?:balance sheets?|statements? of financial (?:position|condition)|income statements?"
    r"|statements? of (?:income|operations|earnings|cash flows?)|profit (?:and|&) loss"
    r"|p&l|cash flows? statements?)",
    re.I,
)
_STATEMENT_LINKS = frozenset({"statement", "statements", "of", "and", "&"})


def statement_words(question: str) -> frozenset:
    """The words of the financial statements the question names, lowercased."""
    return frozenset(
        w for named in _STATEMENT_NAMED.findall(question) for w in named.lower().split()
    )


def statement_left(segment: str, question: str) -> bool:
    """Whether a later search's text so far scopes its pages with anything but words of the
    statements the question names (`statement_filter` in agent.json): its scope ends with no
    "|", or writes after it a word none of their names has (a plural's "s" may go), or only
    "statement", "of"…; a word still being written only has to begin one."""
    named = statement_words(question)
    start = segment.rfind("<search>")
    if not named or start < 0:
        return False
    opened = re.match(r"\s*\[", segment[start + len("<search>") :])
    if not opened:
        return False
    scope, closed, _ = segment[start + len("<search>") + opened.end() :].partition("]")
    _, piped, heading = scope.partition("|")
    if not piped:
        return bool(closed)
    words = heading.lower().split()
    whole = {*named, *(word[:-1] for word in named if word.endswith("s"))}
    if closed:
        return not set(words) - _STATEMENT_LINKS or not set(words) <= whole
    if heading[-1:].isspace():
        return not set(words) <= whole
    *written, last = words or [""]
    return not (set(written) <= whole and any(word.startswith(last) for word in named))


class _GreedyRules:
    """A logits processor for greedy decoding: the likeliest token whose turn (the tokens
    from `start`) breaks none of the rules `limits` (agent.json's) turns on: no word loop
    (`loop_guard`), no scope word the question lacks (`grounded_scope`; `companies`: those the
    question names), no search term it lacks or written twice (`grounded_terms`), an answer
    closed by its own tag (`answer_tag`); and the filings pack's: no scope year but the
    latest the question names (`latest_year_scope`), a yes-or-no question answered Yes or No
    first (`yes_no_answers`), a search after the first (`searched` of them run) within the
    statement the question names (`statement_filter`), an answer of the form the question
    asks (`answer_form`)."""

    def __init__(self, tokenizer, start, question, limits: dict, companies=frozenset(), searched=0):
        self.tokenizer, self.start, self.question = tokenizer, start, question
        self.loops, self.scope = bool(limits.get("loop_guard")), bool(limits.get("grounded_scope"))
        self.terms = bool(limits.get("grounded_terms"))
        self.tag = bool(limits.get("answer_tag"))
        self.year = bool(limits.get("latest_year_scope"))
        self.yes_no = bool(limits.get("yes_no_answers")) and asks_yes_no(question)
        self.statement = bool(limits.get("statement_filter")) and searched > 0
        self.form = bool(limits.get("answer_form"))
        self.companies = companies

    def broken(self, text: str) -> bool:
        return (
            (self.loops and ends_in_loop(text))
            or (self.scope and scope_uncopied(text, self.question, self.companies))
            or (self.terms and terms_uncopied(text, self.question))
            or (self.tag and answer_tag_off(text))
            or (self.year and scope_year_not_latest(text, self.question))
            or (self.yes_no and answer_not_yes_no(text))
            or (self.statement and statement_left(text, self.question))
            or (self.form and answer_off_form(text, self.question))
        )

    def __call__(self, input_ids, scores):
        ids = input_ids[0, self.start :].tolist()
        passed = []  # the likelier tokens, each breaking a rule
        for token in _ranked(scores[0]):
            if not self.broken(self.tokenizer.decode([*ids, token])):
                if passed:
                    scores = scores.clone()
                    scores[0, passed] = float("-inf")
                return scores
            passed.append(token)
        return scores  # no token keeps to the rules: the model's own


def _ranked(row):
    """The tokens of a row of scores, likeliest first: the `RULE_CANDIDATES` likeliest, then
    the rest, ranked only when asked for (a word of the question may go on with a token the
    model ranks past 15,000th)."""
    top = row.topk(min(RULE_CANDIDATES, row.shape[-1])).indices.tolist()
    yield from top
    if len(top) < row.shape[-1]:
        yield from row.argsort(descending=True)[len(top) :].tolist()


def run(question: str, model_dir: Path, index_dir: Path, settings: dict) -> dict:
    """The agent loop; returns {"answer", "searches", "transcript"}."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    index = Index(index_dir)
    limits = stored_limits(settings["limits"])
    system = settings["system_prompt"]

    def encode(text: str) -> list[int]:
        return tokenizer.encode(text, add_special_tokens=False)

    if getattr(tokenizer, "chat_template", None):
        messages = [{"role": "system", "content": system}, {"role": "user", "content": question}]
        prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    else:
        prompt = f"{system}\n\nQuestion: {question}\n\n"
    ids = encode(prompt)
    transcript, searches, generated = "", [], 0
    seen = question  # the question and every result so far: the figures an answer may write
    results = ""  # every result so far: the rows an answer may quote
    # the companies a scope may begin with (`grounded_scope`), read once
    companies = companies_named(question, index) if limits.get("grounded_scope") else frozenset()
    figure_tokens: dict[int, str] = {}
    shown: set[str] = set()  # the chunk ids the results have shown so far
    for _turn in range(limits["max_turns"] + 1):
        budget = limits["max_new_tokens"] - generated
        if budget <= 0:
            break
        turn = limits.get("max_turn_tokens") or 0  # absent in agents saved before it existed
        cut_turn = 0 < turn <= budget
        if cut_turn:
            budget = turn
        rules = []  # per-token rules of decoding; each absent in agents saved before it
        if limits.get("grounded_figures") or limits.get("row_figures"):
            figure_tokens = figure_tokens or _GroundedFigures.figure_tokens(tokenizer)
            grounded = seen if limits.get("grounded_figures") else None
            rows = result_rows(results) if limits.get("row_figures") else None
            rules.append(_GroundedFigures(tokenizer, len(ids), grounded, rows, figure_tokens))
        if any(limits.get(rule) for rule in GREEDY_RULES):
            rules.append(
                _GreedyRules(tokenizer, len(ids), question, limits, companies, len(searches))
            )
        with torch.no_grad():
            out = model.generate(
                torch.tensor([ids]),
                max_new_tokens=budget,
                do_sample=False,
                stopping_criteria=[_StopAfterTag(tokenizer, len(ids))],
                logits_processor=rules or None,
                pad_token_id=tokenizer.pad_token_id or tokenizer.eos_token_id,
            )
        new = out[0, len(ids) :].tolist()
        if new and new[-1] == tokenizer.eos_token_id:
            new = new[:-1]
        generated += len(new)
        ids += new
        text = tokenizer.decode(new)
        transcript += text
        if cut_turn and len(new) >= turn and (close := _closing_tag(text)):
            # The turn limit cut it: close the tag it left open, as the engine it was
            # trained with does.
            ids += encode(close)
            text += close
            transcript += close
        answer = re.search(r"<answer>(.*?)</answer>", text, re.S)
        if answer:
            return {
                "answer": answer.group(1).strip(),
                "searches": searches,
                "transcript": transcript,
            }
        query = re.search(r"<search>(.*?)</search>", text, re.S)
        if not query or len(searches) >= limits["max_turns"]:
            break
        searches.append(searched_query(query.group(1).strip(), question))
        head, tail = encode("\n<results>\n"), encode("\n</results>\n")
        hits = new_hits(index, searches[-1], hits_for(limits, len(searches) - 1), shown, question)
        room = max(limits["max_result_tokens"] - len(head) - len(tail), 0)
        body, ids_shown = fit_hits(hits, room, encode, searches[-1], index.tokenize)
        shown.update(ids_shown)
        ids += head + body + tail
        transcript += tokenizer.decode(head + body + tail)
        results += "\n" + tokenizer.decode(head + body + tail)
        seen += "\n" + tokenizer.decode(head + body + tail)
    return {"answer": None, "searches": searches, "transcript": transcript}


# The switches of `_GreedyRules`, as the engine's `greedy_rules.RULES`.
GREEDY_RULES = (
    "loop_guard",
    "grounded_scope",
    "grounded_terms",
    "answer_tag",
    "latest_year_scope",
    "yes_no_answers",
    "statement_filter",
    "answer_form",
)


def stored_limits(limits: dict) -> dict:
    """agent.json's limits, as the engine's `Limits.stored` reads them: saved before two rules
    were split, the scope rule held the latest year too, the answer-form rule the closing tag."""
    limits = dict(limits)
    limits.setdefault("latest_year_scope", bool(limits.get("grounded_scope")))
    limits.setdefault("answer_tag", bool(limits.get("answer_form")))
    return limits


def hits_for(limits: dict, searches_run: int) -> int:
    """Hits shown by a search after `searches_run` searches, as the engine's `Limits`: the
    first search's own number where set (absent in agents saved before it existed)."""
    first = limits.get("first_results_per_search") or 0
    return first if not searches_run and first else limits["results_per_search"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("question")
    parser.add_argument("--model", default=str(HERE.parent), help="the model folder")
    parser.add_argument("--index", default=str(HERE / "index"), help="the index folder")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--verbose", action="store_true", help="print the whole transcript")
    args = parser.parse_args(argv)
    settings = json.loads((HERE / "agent.json").read_text())
    result = run(args.question, Path(args.model), Path(args.index), settings)
    if args.json:
        print(json.dumps(result))
    else:
        if args.verbose:
            print(result["transcript"], file=sys.stderr)
        print(result["answer"] if result["answer"] is not None else "(no answer)")
    return 0 if result["answer"] is not None else 1


if __name__ == "__main__":
    sys.exit(main())
