"""bench/restated_answers.py: the held-out answers that restate the question, judged again."""

import json

from bench.restated_answers import main


def question(qid, entity, text, answer):
    return {"id": qid, "entity": entity, "question": text, "answer": answer}


QUESTIONS = [
    question("a1", "Acme", "What was Acme revenue in 2020?", "$5 million"),
    question("a2", "Acme", "How much did Acme spend on equipment?", "$2 million"),
    question("b1", "Beta", "What was Beta revenue in 2020?", "$9 million"),
    question("g1", "Gamma", "What was Gamma revenue?", "$4 million"),
]
ANSWERS = {
    "a1": "Acme revenue",  # only the question's words, wrong
    "a2": "$2 million",  # right
    "b1": "$8 million",  # wrong, but not the question's words
    "g1": "$4 million",  # right
}


def write_run(folder, fold):
    """A two-fold run folder that recorded an answer to every question: only those of the
    fold it held out are its to count."""
    folder.mkdir()
    config = {"seed": 0, "split_seed": None, "folds": 2, "fold": fold, "model": "default"}
    (folder / "config.json").write_text(json.dumps(config))
    records = [
        {"policy": "trained", "question_id": qid, "searches": [], "answer": answer}
        for qid, answer in ANSWERS.items()
    ]
    (folder / "eval_trajectories.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(folder)


def test_each_held_out_answer_is_counted_once_as_restating_or_not_and_judged(tmp_path, capsys):
    questions = tmp_path / "questions.jsonl"
    questions.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    runs = ",".join(write_run(tmp_path / f"run-f{fold}", fold) for fold in (0, 1))

    assert main(["--questions", str(questions), "--runs", runs]) == 0

    row = capsys.readouterr().out.splitlines()[-1]
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[1:] == ["4", "1", "0 (0.00)", "2 (0.67)"]
