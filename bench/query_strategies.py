"""What a search agent can reach with queries it could learn from the question alone.

Golden recall (the share of a question's golden chunks shown) of fixed query strategies on
every FinanceBench dev question, against echo (the question as the query) at the same
number of chunks shown. No model runs: this is the ceiling of each strategy, what an agent
that had learnt it perfectly would get, and so what training can hope for.

- echo@K: the question, K results.
- scoped question: "[entity year] question", the entity as the question writes it and
  the latest year it names (the scripted teacher's first search; `teacher.scope`).
- scoped key terms: the scope and the question less its entity, years and the words most
  questions share (the teacher's refined search).
- scoped question, then scoped key terms: both searches, always (the teacher refines only
  when the first misses).
- + statement name: a second search, the scope and the name of the financial statement
  the question names or implies ("consolidated statements of cash flows" for capex);
  a domain rule, here only to measure what knowing the right statement would add.
- within the statement's pages: the scoped question with that statement's name as the
  search tool's page filter ("[3M 2018 | cash flows] What is…": only pages whose heading
  names it), the same domain rule.
- scoped question, then within the pages the question names: the `--section-search`
  teacher's searches: where the question names the part of the document its evidence is on
  ("… shown in the cash flow statement"), its key terms within the pages whose heading holds
  that phrase ("[3M 2018 | cash flow statement] capital expenditure"). The teacher picks the
  phrase with the golden page's heading; a student copies it from the question.
- teacher oracle: the scripted teacher's searches, whose page-kind search reads the golden
  page's heading itself (it knows the answer's page): an upper bound no student reaches.

With `--split-seed N`, the strategies are measured on the validation companies of that
entity split (as `sleuth train --split-seed N` holds them back), with one more: the page
kind *predicted* from the question, by a naive Bayes classifier over the question's key
terms, trained on the training companies' questions and synthetic ones (`--synthetic`),
each labelled with the teacher oracle's page-kind word. That is what a student could
learn of the page kind from its training data, without a domain rule.

Last, the second-search habits a `cpu-45min` student may learn, searched as that preset
shows results (2 hits for the first search, then 3 not shown yet): within the part of the
document the question names only; also the key terms when the first search misses (what the
teacher did until proof52: a rule on the golden chunks the student cannot see); also the key
terms after every other first search (`refine_always`, the preset since proof52).

And the section search with the question's phrase copied in part, as students write it
(`| cash flow` for "… shown in the cash flow statement"): every shorter run of the phrase that
still names a kind of page, beside the whole phrase, 3 hits each. A part keeps more pages than
the whole (the prose that opens on cash flows beside the statement); the pages a heading line
titles come first (`engine/search/index.py`).

Usage: python bench/query_strategies.py [--index var/fb-index] [--k 1,2,3] [--split-seed N]
"""

import argparse
import dataclasses
import math
import re
import statistics
from collections import Counter
from pathlib import Path

from engine.documents.evidence import map_evidence
from engine.documents.questions import Question, load_questions, split_by_entity
from engine.packs import synthesized_questions
from engine.search.index import SearchIndex, tokenize
from engine.training.teacher import ScriptedTeacher

REPO = Path(__file__).resolve().parents[1]
QUESTIONS = REPO.parent / "shared/datasets/financebench-dev/questions.jsonl"
STATEMENTS = [
    (r"cash ?flow|capex|capital expenditure|dividend|D&A|depreciation", "cash flows"),
    (
        r"balance sheet|financial position|PP&?E|PPNE|inventor|total assets|working capital"
        r"|quick ratio|liabilit|debt",
        "balance sheets",
    ),
    (
        r"income statement|P&L|statement of income|operations|earnings|margin|revenue|COGS"
        r"|operating income|net income",
        "statements of income",
    ),
]


def statement(question: str) -> str | None:
    return next(
        (
            f"consolidated {name}"
            for pattern, name in STATEMENTS
            if re.search(pattern, question, re.I)
        ),
        None,
    )


def within_statement(scope: str, question: str) -> str:
    """`"[3M 2018] "` -> `"[3M 2018 | cash flows] "` when the question names a statement."""
    name = statement(question)
    if not name:
        return scope
    names = scope.strip()[1:-1]
    return f"[{names} | {name.removeprefix('consolidated ')}] "


def oracle_kind(teacher: ScriptedTeacher, q: Question) -> str | None:
    """The first page-kind word of a golden page's heading whose filtered search of the key
    terms shows a golden chunk: the label the teacher's page-kind search would use."""
    golden = set(q.golden_chunk_ids)
    names = teacher.scope(q).strip()[1:-1].strip()
    terms = teacher.key_terms(q) or q.question
    for chunk_id in sorted(golden):
        for word in teacher.page_kind(chunk_id):
            if golden & teacher._shown(f"[{names} | {word}] {terms}"):
                return word
    return None


class KindPredictor:
    """Multinomial naive Bayes from a question's key-term stems to a page-kind word."""

    def __init__(self, teacher: ScriptedTeacher, labelled: list[tuple[Question, str]]):
        self.teacher = teacher
        self.kinds = Counter(kind for _, kind in labelled)
        self.words = {kind: Counter() for kind in self.kinds}
        for q, kind in labelled:
            self.words[kind].update(self.features(q))
        self.vocabulary = {w for counts in self.words.values() for w in counts}

    def features(self, q: Question) -> set[str]:
        return set(tokenize(self.teacher.key_terms(q) or q.question))

    def __call__(self, q: Question) -> str:
        def score(kind: str) -> float:
            total = sum(self.words[kind].values()) + len(self.vocabulary)
            return math.log(self.kinds[kind]) + sum(
                math.log((self.words[kind][w] + 1) / total)
                for w in self.features(q)
                if w in self.vocabulary
            )

        return max(self.kinds, key=score)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", default=str(REPO / "var/fb-index"))
    parser.add_argument("--questions", default=str(QUESTIONS))
    parser.add_argument("--k", default="1,2,3")
    parser.add_argument("--split-seed", type=int, help="measure on this split's validation")
    parser.add_argument("--synthetic", type=int, default=1000, help="with --split-seed")
    args = parser.parse_args()
    index = SearchIndex.load(args.index)
    questions = load_questions(args.questions)
    map_evidence(questions, index.chunks)
    teacher = ScriptedTeacher(index, results_per_search=2)
    predicted_kind = None
    if args.split_seed is None:
        questions = [q for q in questions if q.golden_chunk_ids]
        teacher.learn_boilerplate(questions)
    else:
        train, questions = split_by_entity(questions, 0.25, args.split_seed)
        questions = [q for q in questions if q.golden_chunk_ids]
        entities = {q.entity for q in train if q.entity}
        # FinanceBench's filings: the filings pack's kinds, as its runs synthesized them.
        synthetic = synthesized_questions(
            "filings", [c for c in index.chunks if c.entity in entities], args.synthetic
        )
        teacher.learn_boilerplate([*train, *synthetic])
        labelled = [(q, oracle_kind(teacher, q)) for q in [*train, *synthetic]]
        predictor = KindPredictor(teacher, [(q, k) for q, k in labelled if k])
        predicted_kind = {q.id: predictor(q) for q in questions}
        truth = {q.id: oracle_kind(teacher, q) for q in questions}
        right = sum(truth[i] == predicted_kind[i] for i in truth if truth[i])
        print(
            f"split seed {args.split_seed}: page kinds labelled on {len(predictor.kinds)} "
            f"kinds from {sum(predictor.kinds.values())} training and synthetic questions; "
            f"predicted right for {right} of {sum(1 for k in truth.values() if k)} "
            "validation questions with a labelled kind"
        )

    def measure(queries_of, k: int) -> tuple[float, float]:
        recalls, shown = [], []
        for q in questions:
            seen = set()
            for query in queries_of(q):
                seen |= {hit.chunk_id for hit in index.search(query, k)}
            golden = set(q.golden_chunk_ids)
            recalls.append(len(golden & seen) / len(golden))
            shown.append(len(seen))
        return statistics.mean(recalls), statistics.mean(shown)

    def echo_at(chunks: float) -> float:
        return measure(lambda q: [q.question], max(1, round(chunks + 0.499)))[0]

    # The teacher of `--section-search`: its second search copies the words of the question
    # that name the evidence's page ("cash flow statement" -> "[3M 2018 | flow] …").
    sectioned = dataclasses.replace(teacher, section_search=True, refine_search=False)
    strategies = {
        "scoped question": lambda q: [teacher.scope(q) + q.question],
        "scoped key terms": lambda q: [teacher.scope(q) + teacher.key_terms(q)],
        "scoped question, then scoped key terms": lambda q: [
            teacher.scope(q) + q.question,
            teacher.scope(q) + teacher.key_terms(q),
        ],
        "scoped question + statement name": lambda q: [
            teacher.scope(q) + q.question,
            *([teacher.scope(q) + statement(q.question)] if statement(q.question) else []),
        ],
        "scoped question within the statement's pages": lambda q: [
            within_statement(teacher.scope(q), q.question) + q.question
        ],
        "scoped question, then within the pages the question names": sectioned.drilled_searches,
        "teacher oracle (reads the golden page)": lambda q: (
            teacher.queries(q) or [teacher.scope(q) + q.question]
        ),
    }
    if predicted_kind:

        def within_predicted_kind(q: Question) -> list[str]:
            names = teacher.scope(q).strip()[1:-1].strip()
            return [f"[{names} | {predicted_kind[q.id]}] {teacher.key_terms(q) or q.question}"]

        strategies["key terms within the predicted page kind"] = within_predicted_kind
    print(f"{len(questions)} questions with golden chunks, index {args.index}")
    print(f"{'strategy':<40} {'k':>2} {'recall':>7} {'chunks':>7} {'echo same':>10} {'ratio':>6}")
    for k in [int(x) for x in args.k.split(",")]:
        for name, queries_of in strategies.items():
            recall, chunks = measure(queries_of, k)
            echo = echo_at(chunks)
            print(
                f"{name:<40} {k:>2} {recall:7.3f} {chunks:7.2f} {echo:10.3f} "
                f"{recall / max(echo, 1e-9):5.2f}x"
            )
    second_search_habits(index, teacher, questions, echo_at)
    phrase_copied_in_part(index, teacher, questions)


def second_search_habits(index: SearchIndex, teacher: ScriptedTeacher, questions, echo_at):
    """The teacher's drilled searches under the `cpu-45min` preset's result counts, with the
    second search's three habits (the module's note)."""
    first_k, later_k = 2, 3

    def shown(queries: list[str]) -> set[str]:
        seen: list[str] = []
        for i, query in enumerate(queries):
            k = later_k if i else first_k
            new = [h.chunk_id for h in index.search(query, k + len(seen)) if h.chunk_id not in seen]
            seen += new[:k]  # a search shows only hits the conversation has not shown
        return set(seen)

    sectioned = dataclasses.replace(
        teacher, section_search=True, results_per_search=later_k, first_results_per_search=first_k
    )
    habits = {
        "within the section named, else none": dataclasses.replace(sectioned, refine_search=False),
        "... else the key terms after a miss": sectioned,
        "... else the key terms always": dataclasses.replace(sectioned, refine_always=True),
    }
    header = f"second search ({first_k} hits, then {later_k} new)"
    print(f"{header:<40}  recall  chunks searches  echo same  ratio")
    for name, habit in habits.items():
        recalls, chunks, searches = [], [], []
        for q in questions:
            queries = habit.drilled_searches(q)
            golden = set(q.golden_chunk_ids)
            seen = shown(queries)
            recalls.append(len(golden & seen) / len(golden))
            chunks.append(len(seen))
            searches.append(len(queries))
        recall, mean_chunks = statistics.mean(recalls), statistics.mean(chunks)
        echo = echo_at(mean_chunks)
        print(
            f"{name:<40} {recall:7.3f} {mean_chunks:7.2f} {statistics.mean(searches):8.2f} "
            f"{echo:10.3f} {recall / max(echo, 1e-9):5.2f}x"
        )


def phrase_copied_in_part(index: SearchIndex, teacher: ScriptedTeacher, questions, k: int = 3):
    """The section search with the whole phrase the question names its page by, and with each
    shorter run of it that still names a kind of page (the module's note)."""
    recalls: dict[str, list[float]] = {"the whole phrase": [], "a part of it": []}
    for q in questions:
        words = teacher.section_words(q)
        names = teacher.scope(q).strip()[1:-1].strip()
        if not (words and names and q.golden_chunk_ids):
            continue
        terms = teacher.key_terms(q) or q.question
        runs = {tuple(words[i:j]) for i in range(len(words)) for j in range(i + 1, len(words) + 1)}
        for run in sorted(runs):
            if not any(teacher.is_page_kind(stem) for stem in tokenize(" ".join(run))):
                continue
            hits = index.search(f"[{names} | {' '.join(run)}] {terms}", k)
            shown = {h.chunk_id for h in hits} & set(q.golden_chunk_ids)
            kind = "the whole phrase" if list(run) == words else "a part of it"
            recalls[kind].append(len(shown) / len(q.golden_chunk_ids))
    print(f"{'section search, the phrase copied':<40} {'searches':>8}  recall@{k}")
    for kind, values in recalls.items():
        if values:
            print(f"{kind:<40} {len(values):8d} {statistics.mean(values):9.3f}")


if __name__ == "__main__":
    main()
