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
agent/run_agent.py, beside the engine's rules of decoding (greedy_rules.py, grounding.py),
which the publisher writes from the engine's own source.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path
from types import SimpleNamespace

# The engine's rules of decoding, written beside this script by the publisher from the
# engine's own source (`workers/publishing/bundle.py`): decoded as in evaluation and serving.
import greedy_rules
import grounding

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
        for word in name_candidates(greedy_rules.naming_text(question, self.names_company)):
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


def name_candidates(text: str) -> set:
    """The words of `text`, lowercased, that could name a company (as the search tool's)."""
    return {w for w in _WORD.findall(text.lower()) if len(w) > 1 and not w.isdigit()}


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


class _GroundedFigures:
    """A logits processor: inside <answer>, only figures the question or results showed
    (`shown`, None: any), and after a row's label that row's first figure (`rows`), masked as
    the engine masks them (`grounding.FigureGrounding`, built once per tokenizer in `masks`)."""

    def __init__(self, tokenizer, start: int, shown, rows, masks: dict):
        self.tokenizer, self.start, self.shown, self.rows, self.masks = (
            tokenizer,
            start,
            shown,
            rows,
            masks,
        )

    def __call__(self, input_ids, scores):
        text = self.tokenizer.decode(input_ids[0, self.start :])
        opened = text.rfind("<answer>")
        if opened < 0:
            return scores
        answer = text[opened + len("<answer>") :]
        quoted = self.rows.quoted(answer) if self.rows is not None else None
        allowed = quoted if quoted is not None else self.shown
        if allowed is None:
            return scores
        width = scores.shape[-1]
        if width not in self.masks:
            self.masks[width] = grounding.FigureGrounding.for_tokenizer(self.tokenizer, width)
        banned = self.masks[width].banned(answer, allowed)
        if banned is None:
            return scores
        return scores.masked_fill(banned.to(scores.device)[None, :], float("-inf"))


class _GreedyRules:
    """A logits processor for greedy decoding: the likeliest token whose turn (the tokens
    from `start`) breaks none of the rules `limits` (agent.json's) turns on, as the engine's
    `greedy_rules.broken` reads them (`companies`: those the question names; `searched`:
    the searches run before this turn)."""

    def __init__(self, tokenizer, start, question, limits: dict, companies=frozenset(), searched=0):
        self.tokenizer, self.start, self.question = tokenizer, start, question
        self.limits = SimpleNamespace(
            **{rule: bool(limits.get(rule)) for rule in greedy_rules.RULES}
        )
        self.companies, self.searched = companies, searched

    def broken(self, text: str) -> bool:
        return greedy_rules.broken(text, self.question, self.limits, self.companies, self.searched)

    def __call__(self, input_ids, scores):
        ids = input_ids[0, self.start :].tolist()
        passed = []  # the likelier tokens, each breaking a rule
        for token in greedy_rules.ranked_tokens(scores[0]):
            if not self.broken(self.tokenizer.decode([*ids, token])):
                if passed:
                    scores = scores.clone()
                    scores[0, passed] = float("-inf")
                return scores
            passed.append(token)
        return scores  # no token keeps to the rules: the model's own


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
    companies = (
        greedy_rules.companies_named(question, index.names_company)
        if limits.get("grounded_scope")
        else frozenset()
    )
    figure_masks: dict = {}  # by vocabulary width, built at the first figure rule's use
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
            shown = grounding.ShownFigures.of(seen) if limits.get("grounded_figures") else None
            rows = grounding.ResultRows.of(results) if limits.get("row_figures") else None
            rules.append(_GroundedFigures(tokenizer, len(ids), shown, rows, figure_masks))
        if any(limits.get(rule) for rule in greedy_rules.RULES):
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
