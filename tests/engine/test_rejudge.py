"""bench/rejudge.py: recorded runs' answers judged again and written, a run without an
evaluation skipped rather than stopping the runs after it."""

import json

from bench.rejudge import main


def test_a_run_without_eval_json_is_skipped_and_the_next_is_written(tmp_path, capsys):
    questions = tmp_path / "questions.jsonl"
    questions.write_text(
        json.dumps(
            {"id": "q1", "entity": "Acme", "question": "What is the port?", "answer": "5432"}
        )
        + "\n"
    )
    stopped = tmp_path / "a-stopped"
    stopped.mkdir()
    finished = tmp_path / "b-finished"
    finished.mkdir()
    (finished / "eval_trajectories.jsonl").write_text(
        json.dumps({"policy": "trained", "question_id": "q1", "answer": "Port 5432."}) + "\n"
    )
    recorded = {"policies": {"trained": {"accuracy": 0.0, "answer_score": 0.0, "pass@k": 0.0}}}
    (finished / "eval.json").write_text(json.dumps(recorded))

    main([str(stopped), str(finished), "--questions", str(questions), "--write"])

    assert "no eval.json: skipped" in capsys.readouterr().err
    written = json.loads((finished / "eval.json").read_text())
    assert written["policies"]["trained"]["accuracy"] == 1.0
    assert written["rejudged"]["trained"]["recorded"]["pass@k"] == 0.0
