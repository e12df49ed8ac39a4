"""What a second search adds to the question's own, with no model, on any index.

    python bench/second_search.py --index var/pyref-index \
        --questions datasets/python-reference/questions.jsonl --chunks 4

The default path's agent searches the question first (`[]`) and then once more. Which second
search a student should be taught is a question of recall at the same number of chunks shown,
and no model is needed to answer it: each form below is run as the engine runs it (the
question's hits first, half the chunks; then the second search's hits not shown yet) and
scored by golden recall against echo (the question alone, all the chunks), with the paired
95 % bootstrap interval over questions. It is the ceiling of each form: what a student that
copied it perfectly would find.

- echo: the question, every chunk.
- key terms: the question less its entity, years and boilerplate (the teacher's
  `key_terms`), unscoped, then with the scope the question names (`[acme] dividends`, the
  teacher's second search with `refine_terms`).
- the question again within its scope: `[acme]` where the question names documents, else
  `[]`: the question's next hits (the teacher without `refine_terms`).
- the top hit's document: the key terms within the document of the question's first hit,
  the scope a student could copy from its results (pseudo-relevance feedback).
- the question again within the entities it names, read without their label: the entities
  whose names the question's words start (`SearchIndex.companies_asked`, what the tool reads
  a scope by), all of them, or only those among its first hits' entities. The teacher's scope
  is the entity as the question names it, found by the question's label (`entity_mention`),
  which neither a student nor the tool has on a new question; these say what is left of its
  lead without the label.
- the question again within the documents of its first hits, or outside them: its next hits
  drawn from the documents it has already been shown (the evidence is near the first hits), or
  from the others (a spread over documents, as maximal marginal relevance would give).
- the question with the words of its first hits (pseudo-relevance feedback): the question and
  the three words of the first search's hits, not the question's, that weigh most there
  (count times inverse document frequency over the index): a second search a student could
  copy from what it read.
- hindsight, a ceiling and no form: for each question the best of the question, the question
  less one of its words and each run of three of its words, each unscoped and within the
  scope the question names, chosen knowing its golden passage. No rule can be taught that;
  it bounds what a second search written from the question's own words finds, the most a
  policy choosing it question by question (RL's task) could reach.
"""

from __future__ import annotations

import argparse
import collections
import math
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.agent.protocol import searched_query  # noqa: E402
from engine.agent.tool import new_hits  # noqa: E402
from engine.documents.evidence import map_evidence  # noqa: E402
from engine.documents.questions import load_questions  # noqa: E402
from engine.evaluation.pooled import Attempt, attempt_recall, no_model_teacher  # noqa: E402
from engine.evaluation.stats import bootstrap_mean, paired_difference  # noqa: E402
from engine.search.index import SearchIndex  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--index", required=True)
    p.add_argument("--questions", required=True)
    p.add_argument("--chunks", type=int, default=4, help="chunks shown per question")
    args = p.parse_args()

    index = SearchIndex.load(args.index)
    questions = load_questions(args.questions)
    map_evidence(questions, index.chunks)
    questions = [q for q in questions if q.golden_chunk_ids]
    teacher = no_model_teacher(index, questions, {"scoped_first_search": False})
    first, second = args.chunks // 2, args.chunks - args.chunks // 2

    def shown(q, queries: list[tuple]) -> list[str]:
        seen: list[str] = []
        for query, k, *within in queries:
            query = searched_query(query, q.question)
            if within and any(within[0].values()):  # the search tool's filter
                hits = index.search(query, k + len(seen), within[0], q.question)
                seen += [h.chunk_id for h in hits if h.chunk_id not in seen][:k]
            else:
                seen += [h.chunk_id for h in new_hits(index, query, k, set(seen), q.question)]
        return seen

    def named(q) -> list[str]:
        return sorted(index.companies_asked(q.question))

    def first_hits(q) -> list:
        return index.search(q.question, first, question=q.question)

    def named_in_hits(q) -> list[str]:
        hits = first_hits(q)
        return sorted(index.companies_asked(q.question) & {h.entity or h.doc for h in hits})

    documents = sorted({c.doc for c in index.chunks})

    def first_docs(q) -> list[str]:
        return sorted({h.doc for h in first_hits(q)})

    def top_doc(q) -> str:
        hits = index.search(q.question, 1, question=q.question)
        return hits[0].doc if hits else ""

    words = re.compile(r"[a-z][a-z0-9_]{2,}")
    seen_in = collections.Counter(
        w for c in index.chunks for w in set(words.findall(c.text.lower()))
    )
    weight = {w: math.log(len(index.chunks) / n) for w, n in seen_in.items()}

    def fed_back(q, n: int = 3) -> str:
        asked = set(words.findall(q.question.lower()))
        counts = collections.Counter(
            w
            for h in index.search(q.question, first, question=q.question)
            for w in words.findall(h.text.lower())
            if w not in asked
        )
        return " ".join(sorted(counts, key=lambda w: -counts[w] * weight.get(w, 0.0))[:n])

    forms = {
        "echo": lambda q: [(q.question, args.chunks)],
        "key terms": lambda q: [(q.question, first), (teacher.key_terms(q) or q.question, second)],
        "key terms within the named scope": lambda q: [
            (q.question, first),
            (teacher.scope(q) + (teacher.key_terms(q) or q.question), second),
        ],
        "the question again within the named scope": lambda q: [
            (q.question, first),
            (teacher.scope(q) + q.question, second),
        ],
        "key terms within the top hit's document": lambda q: [
            (q.question, first),
            (f"[{top_doc(q)}] {teacher.key_terms(q) or q.question}", second),
        ],
        "the question again within the entities it names, no label": lambda q: [
            (q.question, first),
            (q.question, second, {"entity": named(q)}),
        ],
        "the same, those among its first hits' entities": lambda q: [
            (q.question, first),
            (q.question, second, {"entity": named_in_hits(q)}),
        ],
        "the question again within its first hits' documents": lambda q: [
            (q.question, first),
            (q.question, second, {"doc": first_docs(q)}),
        ],
        "the question again outside them": lambda q: [
            (q.question, first),
            (q.question, second, {"doc": sorted(set(documents) - set(first_docs(q)))}),
        ],
        "the question with its first hits' words": lambda q: [
            (q.question, first),
            (f"{q.question} {fed_back(q)}", second),
        ],
    }
    recall = {
        name: [
            attempt_recall(q, Attempt(tuple(dict.fromkeys(shown(q, form(q)))))) for q in questions
        ]
        for name, form in forms.items()
    }

    def question_words(q) -> list[str]:
        words = re.findall(r"[\w$%.&'-]+", q.question)
        less_one = [words[:i] + words[i + 1 :] for i in range(len(words))]
        runs = [words[i : i + 3] for i in range(len(words) - 2)]
        unscoped = [" ".join(w) for w in [words, *less_one, *runs] if w]
        return unscoped + [teacher.scope(q) + c for c in unscoped if teacher.scope(q)]

    recall["hindsight: the best of the question's own words (a ceiling)"] = [
        max(
            attempt_recall(q, Attempt(tuple(shown(q, [(q.question, first), (c, second)]))))
            for c in question_words(q)
        )
        for q in questions
    ]
    print(f"{len(questions)} questions with golden chunks, {args.chunks} chunks shown each\n")
    print("| search | golden recall [95 %] | − echo [95 %] |\n|---|---|---|")
    for name, values in recall.items():
        difference = paired_difference(values, recall["echo"]) if name != "echo" else None
        print(f"| {name} | {bootstrap_mean(values)} | {difference or '—'} |")


if __name__ == "__main__":
    main()
