"""Run folders as `sleuth train` leaves them (config.json and the held-out trajectories) over a
tiny corpus of three companies, written by a test so that every pooled number is known
(tests/engine/test_evaluation_compare.py, test_paired_runs.py)."""

import json

PAGES = [
    {
        "doc": "ACME_2020",
        "page": 1,
        "entity": "Acme",
        "text": "Acme revenue in 2020 was $5 million.",
    },
    {
        "doc": "ACME_2020",
        "page": 2,
        "entity": "Acme",
        "text": "Acme purchases of equipment $2 million.",
    },
    {"doc": "ACME_2020", "page": 3, "entity": "Acme", "text": "Acme employees numbered 40 people."},
    {
        "doc": "BETA_2020",
        "page": 1,
        "entity": "Beta",
        "text": "Beta revenue in 2020 was $9 million.",
    },
    {
        "doc": "BETA_2020",
        "page": 2,
        "entity": "Beta",
        "text": "Beta purchases of machines $3 million.",
    },
    {"doc": "GAMMA_2020", "page": 1, "entity": "Gamma", "text": "Gamma revenue was $4 million."},
]


def question(qid, entity, text, answer, doc, page, evidence):
    return {
        "id": qid,
        "entity": entity,
        "question": text,
        "answer": answer,
        "evidence": [{"text": evidence, "doc": doc, "page": page}],
    }


QUESTIONS = [
    question("a1", "Acme", "What was Acme revenue in 2020?", "$5 million", "ACME_2020", 1,
             "Acme revenue in 2020 was $5 million."),
    question("a2", "Acme", "How much did Acme spend on capex?", "$2 million", "ACME_2020", 2,
             "Acme purchases of equipment $2 million."),
    question("b1", "Beta", "What was Beta revenue in 2020?", "$9 million", "BETA_2020", 1,
             "Beta revenue in 2020 was $9 million."),
    question("g1", "Gamma", "What was Gamma revenue?", "$4 million", "GAMMA_2020", 1,
             "Gamma revenue was $4 million."),
]  # fmt: skip

CONFIG = {"seed": 0, "split_seed": None, "folds": 2, "fold": 0, "model": "default"}
RULED = {"max_turns": 3, "results_per_search": 2, "loop_guard": True}


def write_run(folder, attempts, *, seed=0, fold=0, limits=None, cold_start=None, **config):
    """A run folder: `attempts` maps question id → (chunk ids shown, answer); `cold_start`,
    the same for its cold start, as the final evaluation records it beside the agent."""
    folder.mkdir()
    settings = CONFIG | {"seed": seed, "fold": fold, "limits": limits or RULED} | config
    (folder / "config.json").write_text(json.dumps(settings))
    records = [
        {
            "policy": policy,
            "question_id": qid,
            "searches": [{"query": "q", "chunk_ids": list(chunks), "malformed": None}],
            "answer": answer,
        }
        for policy, recorded in (("trained", attempts), ("cold-start", cold_start or {}))
        for qid, (chunks, answer) in recorded.items()
    ]
    records.append(  # a baseline's trajectory, as runs record them too: not the agent
        {"policy": "echo@2", "question_id": "a1", "searches": [], "answer": "$5 million"}
    )
    (folder / "eval_trajectories.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(folder)


def corpus_files(tmp_path) -> tuple[str, str]:
    """The corpus indexed (`sleuth index`) and its questions' file: (index folder, questions)."""
    from engine.cli import main

    pages = tmp_path / "pages.jsonl"
    pages.write_text("".join(json.dumps(p) + "\n" for p in PAGES))
    questions = tmp_path / "questions.jsonl"
    questions.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    assert main(["index", "--docs", str(pages), "--out", str(tmp_path / "idx")]) == 0
    return str(tmp_path / "idx"), str(questions)
