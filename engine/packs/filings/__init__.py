"""The filings pack: what holds of annual and quarterly reports (10-K, 10-Q) only.

Each entry: the setting it turns on, why it exists, its measured effect. The runs behind
each number are told in docs/packs.md; every one was adopted on FinanceBench's development
split, on a difference of one to three of 21-25 validation questions, with the judge of its
day: read the effects as leads, not as settled gains.
"""

import re

from engine.packs.filings.questions import FILINGS_KINDS, filings_questions, mix_asked

# What marks a document as a company's filing: its form, its regulator, its statements.
# A document showing two of them looks like one (`packs.suggested_pack`).
SIGNALS = tuple(
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        r"\bform\s+10-?[kq]\b",
        r"\bsecurities and exchange commission\b",
        r"\bbalance sheets?\b|\bstatements? of financial (?:position|condition)\b",
        r"\bstatements? of (?:operations|income|earnings)\b|\bincome statements?\b",
        r"\bstatements? of cash flows?\b|\bcash flows? statements?\b",
        r"\bfiscal (?:year|quarter)\b",
    )
)

FILINGS = {
    "name": "filings",
    "label": "Financial filings",
    "description": (
        "For annual and quarterly reports: searches scoped to the latest year a question "
        "names, a later search kept within the financial statement it names, Yes or No to a "
        "question opening with a verb, a table row's first figure as the answer's, and a "
        "teacher that answers synthesized lookups by quoting the row."
    ),
    "settings": {
        "limits.latest_year_scope": (
            "a filing reports its year beside earlier ones, so the latest year a question "
            "names is the filing to search: a scope may write no other year",
            "students scoped Walmart's FY2018 - FY2020 questions to 2018 and searched the "
            "wrong filing (docs/packs.md#latest-year-scope)",
        ),
        "limits.yes_no_answers": (
            "a question whose asking clause opens with a verb and offers no choice is "
            "answered Yes or No first, as 17 of FinanceBench's 18 such questions are",
            "turned a name answered to 'Is 3M capital-intensive…?' into No; on held-out "
            "companies the agent answered No to 11 of 12 such questions, 8 wrongly "
            "(docs/packs.md#yes-no-answers)",
        ),
        "limits.answer_form": (
            "an answer takes the form its question asks: one of two options offered, no Yes "
            "or No to 'what…', words rather than a figure to 'what drove…' or 'why…'",
            "answer score 0.040 -> 0.080 on two seeds of three, the third unchanged "
            "(docs/packs.md#answer-form)",
        ),
        "limits.statement_filter": (
            "a later search stays within the financial statement the question names, as "
            "the teacher searches",
            "recall 0.534 -> 0.540 on average over seven runs' weights, the lowest 0.460 -> "
            "0.493, the highest 0.613 -> 0.593 (docs/packs.md#statement-filter)",
        ),
        "limits.row_figures": (
            "an answer that begins with a table row's label writes that row's first figure: "
            "a filing's tables put the latest period first",
            "3 -> 5 and 3 -> 10 right of 26 synthesized lookups on two runs' held-out "
            "companies; FinanceBench's own questions unchanged (docs/packs.md#row-figures)",
        ),
        "scope_years": (
            "the teacher's scope names the latest year the question asks about beside its "
            "entity, and the scope drills swap it for made-up years",
            "the golden filing is the latest year named for 21 of 21 development questions "
            "naming two years (docs/packs.md#scope-years)",
        ),
        "statement_names": (
            "the teacher's section search reads a financial statement the question names by "
            "another name than its heading ('the P&L' for 'Statements of Income')",
            "not measured apart from the section search (docs/packs.md#statement-names)",
        ),
        "quoted_answers": (
            "the teacher answers a lookup synthesized from a table with its row's label, "
            "then the figure, so the student copies the figure that follows the label it wrote",
            "5 and 3 of 26 held-out lookups right against 0 and 0, answers 0.040 -> 0.080 "
            "and 0.080 -> 0.120, recall the same (docs/packs.md#quoted-answers)",
        ),
        # Rules of decoding written for any documents, adopted on filings, which a run outside
        # the pack may turn on too (value, then False: not the pack's alone). On
        # python-reference the four together cost recall in two trainings, pooled over its
        # folds, and changed accuracy by nothing measurable: the default path leaves them off.
        "limits.loop_guard": (
            "greedy decoding never writes a run of words three times in a row, nor a figure's "
            "characters over and over, to the turn's limit",
            "loops in 1-5 of 25 validation queries a run before it (docs/packs.md#rules-off)",
            True,
            False,
        ),
        "limits.grounded_scope": (
            "a search's [scope] copies only pieces of the question's words, beginning with a "
            "company the question names",
            "recall 0.290 -> 0.423 on one run's weights, wrong companies' scopes gone "
            "(docs/packs.md#rules-off)",
            True,
            False,
        ),
        "limits.grounded_terms": (
            "a search's terms are the question's own words, each once",
            "recall 0.533 both ways on one run's weights (docs/packs.md#rules-off)",
            True,
            False,
        ),
        "limits.statement_synonyms": (
            "the search tool reads a page filter naming a financial statement under every name "
            "questions and filings give it ('the P&L' finds 'Statements of Operations')",
            "the setting every filings run was measured with: the index read them for every "
            "run before 2026-12-06 (docs/packs.md#statement-names)",
            True,
            False,
        ),
        "limits.answer_tag": (
            "an answer closes with its own tag, never a search's",
            "answers lost to a </search> kept (docs/packs.md#rules-off)",
            True,
            False,
        ),
        "scoped_first_search": (
            "the teacher's first search is scoped to the company the question names: a "
            "filing question names its company, and the company's filings are where to look",
            "the setting every filings run was measured with; off, python-reference's "
            "agent found more: recall +0.145 [+0.065, +0.226], pooled folds "
            "(docs/packs.md#scoped-first-search)",
            True,
            False,
        ),
        # Not switches: numbers of drills, which a run outside the pack may set too.
        "scope_drills": (
            "per question, its scoped first search copied with the company's name (and "
            "years) swapped for made-up ones: a training set names few companies, and a "
            "student taught only on them scopes a question about another to one of theirs",
            "fewer wrong-company scopes on held-out companies; on python-reference recall "
            "-0.057 [-0.121, +0.008] without them, no gain shown (docs/packs.md#scope-drills)",
            1,
        ),
        "customer_scope_drills": (
            "two such copies more of each of the customer's own questions: their shapes "
            "(long, the company named late) are what the agent is asked",
            "recall 0.440 at 4.92 chunks on held-out companies (docs/packs.md#scope-drills)",
            2,
        ),
        "synthetic_sections": (
            "synthesized questions name their statement in the customer's own words, so the "
            "section search is taught on hundreds of questions",
            "recall +0.01 / +0.07 on two seeds (docs/packs.md#synthetic-sections)",
        ),
        # The default path's second search and synthesized questions as every filings run was
        # measured with them: the pack keeps them until its own folds say otherwise.
        "refine_terms": (
            "the teacher's second search writes the key terms of the question within its "
            "company (a filing's line items are found by their words)",
            "the setting every filings run was measured with; the default path now repeats "
            "the question within its scope (docs/packs.md#measured-settings)",
            True,
            False,
        ),
        "completion_questions": (
            "no questions with a blanked word: the pack synthesizes its own kinds from the "
            "filings' tables",
            "the setting every filings run was measured with (docs/packs.md#measured-settings)",
            False,
            False,
        ),
        "synthetic_questions": (
            "asked for many: the teacher keeps only the table questions whose figures its "
            "results show, a fraction of those asked",
            "the setting every filings run was measured with (docs/packs.md#measured-settings)",
            800,
        ),
        "lora": (
            "the top layers' weights trained (the preset's `train_layers`), not adapters",
            "the setting every filings run was measured with (docs/packs.md#measured-settings)",
            False,
            False,
        ),
    },
    # The synthesized question kinds the pack adds to the generic ones (`questions`): a cell
    # of a year-column table, a yes/no comparison of a row's two latest years, what drove a
    # change a filing explains; made in the mix of the customer's own questions.
    "synthesis_kinds": FILINGS_KINDS,
    "questions": filings_questions,
    "mix": mix_asked,
    "signals": SIGNALS,
}
