"""`sleuth compare`: fold runs pooled into one agent, beside the no-model baselines, on a tiny
corpus indexed by the test. The runs are folders as `sleuth train` leaves them (config.json and
the held-out trajectories), written here so that every number in the table is known."""

import json
import shutil

import pytest

from engine.cli import main
from engine.evaluation.pooled import PolicyScores, section_report
from tests.helpers.recorded_runs import QUESTIONS, RULED, corpus_files, question, write_run


@pytest.fixture
def corpus(tmp_path):
    return corpus_files(tmp_path)


def compare(capsys, index, questions, *extra):
    capsys.readouterr()
    assert main(["compare", "--index", index, "--questions", questions, *extra]) == 0
    return capsys.readouterr().out


def row(section, policy):
    return next(r for r in section["rows"] if r["policy"].startswith(policy))


def test_fold_runs_are_pooled_per_question_and_their_answers_judged_again(tmp_path, corpus, capsys):
    index, questions = corpus
    # Two folds: Acme's two questions, and Beta's and Gamma's (whatever the seed). Fold 0 by
    # seeds 0 and 1; fold 1 by seed 0, whose final evaluation took a sample: Beta's alone.
    seed0 = write_run(
        tmp_path / "f0-s0",
        {
            "a1": (["ACME_2020:p1:c0", "BETA_2020:p1:c0"], "$5 million"),
            "a2": (["ACME_2020:p1:c0", "ACME_2020:p3:c0"], "$2 million"),
        },
    )
    seed1 = write_run(
        tmp_path / "f0-s1",
        {
            "a1": (["ACME_2020:p1:c0", "ACME_2020:p2:c0"], "$7 million"),
            "a2": (["ACME_2020:p2:c0", "ACME_2020:p3:c0"], "Yes"),
        },
        seed=1,
    )
    other = write_run(
        tmp_path / "f1-s0", {"b1": (["BETA_2020:p1:c0", "GAMMA_2020:p1:c0"], "$9 million")}, fold=1
    )
    report = json.loads(compare(capsys, index, questions, "--runs", seed0, seed1, other, "--json"))

    assert (report["questions"], report["questions_in_file"], report["seeds"]) == (3, 4, [0, 1])
    assert report["unrecorded"] == 1  # Gamma's: no checkpoint to complete it from
    (section,) = report["sections"]
    assert section["chunks"] == 2  # every attempt was shown two chunks
    trained = row(section, "trained (rules as run)")
    # a1: right, then wrong (0.5); a2: right, then "Yes" (0.5); b1: right (1)
    assert trained["accuracy"]["mean"] == pytest.approx((0.5 + 0.5 + 1) / 3, abs=1e-4)
    # a1: found by both seeds; a2: by seed 1 only (0.5); b1: found
    assert trained["recall"]["mean"] == pytest.approx((1 + 0.5 + 1) / 3, abs=1e-4)
    assert trained["n"] == 3
    # Rules were on and no run kept its checkpoint: the row says so rather than guessing.
    unruled = row(section, "trained (rules off)")
    assert unruled["recall"] is None and unruled["note"].startswith("not recorded")
    echo = row(section, "echo@2")
    assert echo["accuracy"] is None and echo["n"] == 3 and echo["chunks"] == 2
    # Every row is paired with echo at the agent's chunk count.
    pairs = {tuple(p["policies"]) for p in section["paired"]}
    assert (trained["policy"], "echo@2") in pairs
    assert ("scoped echo@2", "echo@2") in pairs
    # and a model row with every other search that has no model: past the teacher's searches?
    assert (trained["policy"], "teacher's searches@2") in pairs
    assert (trained["policy"], "scoped echo@2") in pairs
    assert ("scoped echo@2", "teacher's searches@2") not in pairs


def test_without_runs_the_no_model_rows_come_at_each_chunk_count(corpus, capsys):
    index, questions = corpus
    out = compare(capsys, index, questions, "--chunks", "1,3")
    assert "### At 1 chunks per question" in out and "### At 3 chunks per question" in out
    assert "| echo@1 | " in out and "| scoped echo@3 | " in out
    report = json.loads(compare(capsys, index, questions, "--chunks", "1,3", "--json"))
    for section in report["sections"]:
        k = section["chunks"]
        policies = [r["policy"] for r in section["rows"]]
        assert policies[0] == f"echo@{k}" and policies[2] == f"scoped echo@{k}"
        for r in section["rows"]:
            if r["policy"].endswith("to every question, no model"):
                continue  # accuracy's floor, in the first section only
            assert r["accuracy"] is None and r["n"] == 4  # no model, no answer
            assert r["chunks"] <= k
        # echo's best up to k is at least echo@k, on the same questions
        assert section["rows"][1]["recall"]["mean"] >= section["rows"][0]["recall"]["mean"]


def test_runs_of_different_settings_are_not_pooled(tmp_path, corpus, capsys):
    index, questions = corpus
    first = write_run(tmp_path / "a", {"a1": (["ACME_2020:p1:c0"], "$5 million")})
    other = write_run(
        tmp_path / "b",
        {"b1": (["BETA_2020:p1:c0"], "$9 million")},
        limits={**RULED, "max_turns": 4},
    )
    code = main(["compare", "--index", index, "--questions", questions, "--runs", first, other])
    assert code == 2
    assert "differ in limits.max_turns" in capsys.readouterr().err


def test_a_run_stored_before_a_setting_existed_pools_with_runs_of_that_settings_value_for_it():
    from pathlib import Path

    from engine.evaluation.pooled import RecordedRun, RunFolderError, check_one_setting
    from engine.training.config import TrainConfig

    stored = TrainConfig().to_dict()
    del stored["completion_questions"]  # recorded before the option: off, as TrainConfig reads it
    older = RecordedRun(Path("older"), stored, {})
    check_one_setting([older, RecordedRun(Path("newer"), TrainConfig(seed=1).to_dict(), {})])

    turned_on = TrainConfig(completion_questions=True).to_dict()
    with pytest.raises(RunFolderError, match="differ in completion_questions"):
        check_one_setting([older, RecordedRun(Path("on"), turned_on, {})])


def test_a_folder_without_recorded_trajectories_is_a_clear_error(tmp_path, corpus, capsys):
    index, questions = corpus
    (tmp_path / "empty").mkdir()
    code = main(
        ["compare", "--index", index, "--questions", questions, "--runs", str(tmp_path / "empty")]
    )
    assert code == 2
    assert "no eval_trajectories.jsonl" in capsys.readouterr().err
    # A run folder whose final evaluation did not run says so, and how to run it.
    (tmp_path / "unevaluated").mkdir()
    (tmp_path / "unevaluated" / "config.json").write_text("{}")
    code = main(
        ["compare", "--index", index, "--questions", questions,
         "--runs", str(tmp_path / "unevaluated")]
    )  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err
    assert "final evaluation did not run" in err and "sleuth train --resume" in err


@pytest.mark.parametrize("command", ["train", "eval"])
def test_more_folds_than_entities_stops_before_any_model_loads(tmp_path, corpus, capsys, command):
    index, questions = corpus
    where = ["--out", str(tmp_path / "run")] if command == "train" else []
    args = [command, "--index", index, "--questions", questions, *where, "--folds", "5"]
    assert main(args) == 2
    assert "5 folds need at least 5 entities; the questions name 3" in capsys.readouterr().err


def test_complete_runs_the_rest_from_the_checkpoint_and_rules_off_reruns_it(
    tmp_path, corpus, capsys
):
    from tests.helpers.toy import tiny_model_folder

    index, questions = corpus
    limits = {"max_turns": 2, "max_new_tokens": 12, "results_per_search": 1, "loop_guard": True}
    model = tiny_model_folder(tmp_path)
    runs = []
    for fold, recorded in ((0, {"a1": (["ACME_2020:p1:c0"], "$5 million")}), (1, {})):
        recorded = recorded or {"b1": (["BETA_2020:p1:c0"], "$9 million")}
        folder = write_run(tmp_path / f"f{fold}", recorded, fold=fold, limits=limits, model=model)
        shutil.copytree(model, tmp_path / f"f{fold}" / "final")
        runs.append(folder)

    report = json.loads(compare(capsys, index, questions, "--runs", *runs, "--complete", "--json"))

    # a2 and g1 were left out by the runs' final evaluations; the checkpoints answered them
    assert (report["questions"], report["unrecorded"]) == (4, 0)
    section = report["sections"][0]
    assert row(section, "trained (rules as run)")["n"] == 4
    unruled = row(section, "trained (rules off)")
    assert unruled["n"] == 4 and unruled["accuracy"] is not None and not unruled["note"]
    assert ("trained (rules as run)", "trained (rules off)") in {
        tuple(p["policies"]) for p in section["paired"]
    }


def test_echos_hits_are_read_by_the_runs_own_weights_beside_the_agent(tmp_path, corpus, capsys):
    # The agent's accuracy against echo's read by the untrained model mixes what its searches
    # find with what its training taught it to read: this row keeps the reader and changes
    # only the searching.
    index, questions = corpus
    recorded = [
        {"a1": (["ACME_2020:p1:c0"], "$5 million"), "a2": (["ACME_2020:p2:c0"], "no idea")},
        {"b1": (["BETA_2020:p1:c0", "BETA_2020:p2:c0"], "$9 million")},
    ]
    runs = runs_keeping_a_model(tmp_path, recorded, "final")

    section = json.loads(compare(capsys, index, questions, "--runs", *runs, "--json"))
    section = section["sections"][0]
    assert section["chunks"] == 2  # 4 chunks over 3 questions, rounded up
    reader = row(section, "echo@2's hits read by the trained agent")
    assert reader["n"] == 3 and reader["accuracy"] is not None and not reader["note"]
    assert reader["chunks"] == 2  # echo's hits, as many as the agent saw on average
    assert ("trained (no rules)", "echo@2's hits read by the trained agent") in {
        tuple(p["policies"]) for p in section["paired"]
    }

    shutil.rmtree(f"{runs[1]}/final")  # one run kept no weights: the row says so
    section = json.loads(compare(capsys, index, questions, "--runs", *runs, "--json"))
    assert "no checkpoint in f1" in row(section["sections"][0], "echo@2's hits")["note"]


def runs_keeping_a_model(tmp_path, recorded, kept):
    """One fold run per entry of `recorded`, each keeping a tiny model as its `kept` folder
    (`final`, `cold-start`)."""
    from tests.helpers.toy import tiny_model_folder

    limits = {"max_turns": 2, "max_new_tokens": 12, "results_per_search": 1}
    model = tiny_model_folder(tmp_path)
    runs = [
        write_run(tmp_path / f"f{fold}", attempts, fold=fold, limits=limits, model=model)
        for fold, attempts in enumerate(recorded)
    ]
    for folder in runs:
        shutil.copytree(model, f"{folder}/{kept}")
    return runs


def test_the_runs_cold_starts_are_evaluated_beside_them_for_rls_share(tmp_path, corpus, capsys):
    index, questions = corpus
    recorded = [
        {"a1": (["ACME_2020:p1:c0"], "$5 million"), "a2": ([], "no idea")},
        {"b1": (["BETA_2020:p1:c0"], "$9 million"), "g1": ([], "$4 million")},
    ]
    runs = runs_keeping_a_model(tmp_path, recorded, "cold-start")

    section = json.loads(compare(capsys, index, questions, "--runs", *runs, "--json"))
    section = section["sections"][0]
    before = row(section, "cold start alone")
    assert before["n"] == 4 and before["accuracy"] is not None and not before["note"]
    # RL's share: the trained row paired with the same runs before RL.
    assert ("trained (no rules)", "cold start alone (before RL)") in {
        tuple(p["policies"]) for p in section["paired"]
    }
    left_out = json.loads(compare(capsys, index, questions, "--runs", *runs, "--no-cold-start",
                                  "--json"))  # fmt: skip
    assert not [r for r in left_out["sections"][0]["rows"] if r["policy"].startswith("cold")]

    shutil.rmtree(f"{runs[1]}/cold-start")  # one run kept none: the row says so
    section = json.loads(compare(capsys, index, questions, "--runs", *runs, "--json"))
    assert "no cold start kept in f1" in row(section["sections"][0], "cold start alone")["note"]


def test_scopes_a_question_does_not_name_are_counted_as_the_labels(tmp_path, corpus, capsys):
    index, _ = corpus
    unnamed = question("u1", "Beta", "How much was spent on machines?", "$3 million",
                       "BETA_2020", 2, "Beta purchases of machines $3 million.")  # fmt: skip
    path = tmp_path / "unnamed.jsonl"
    path.write_text("".join(json.dumps(q) + "\n" for q in [QUESTIONS[0], unnamed]))
    out = compare(capsys, index, str(path), "--chunks", "1")
    assert "1 of 2 questions do not name their entity" in out


def test_accuracy_is_set_beside_the_better_of_yes_and_no_given_to_every_question(
    tmp_path, corpus, capsys
):
    index, questions = corpus
    yes_no = [
        question("n1", "Acme", "Did Acme employ more than 50 people?", "No. It employed 40.",
                 "ACME_2020", 3, "Acme employees numbered 40 people."),
        question("n2", "Beta", "Did Beta spend more than $5 million on machines?", "No.",
                 "BETA_2020", 2, "Beta purchases of machines $3 million."),
        question("y1", "Beta", "Was Beta revenue above $5 million?", "Yes, $9 million.",
                 "BETA_2020", 1, "Beta revenue in 2020 was $9 million."),
    ]  # fmt: skip
    with open(questions, "a") as file:
        file.writelines(json.dumps(q) + "\n" for q in yes_no)
    run = write_run(
        tmp_path / "f0",
        {"a1": (["ACME_2020:p1:c0"], "$5 million"), "n1": (["ACME_2020:p3:c0"], "")},
        limits={},
    )

    report = json.loads(compare(capsys, index, questions, "--runs", run, "--json"))

    (section,) = report["sections"]
    prior = row(section, '"No" to every question')
    # The run's held-out questions are a1 and n1, of which "No" answers n1.
    assert prior["accuracy"]["mean"] == pytest.approx(1 / 2, abs=1e-4) and prior["chunks"] == 0
    assert prior["recall"] is None
    pair = next(p for p in section["paired"] if p["policies"][1] == prior["policy"])
    assert pair["policies"][0].startswith("trained") and pair["recall"] is None
    assert pair["accuracy"]["mean"] == pytest.approx(0.0)  # a1 right, n1 unanswered: 1/2 each
    everything = json.loads(compare(capsys, index, questions, "--json"))["sections"][0]
    assert row(everything, '"No" to every question')["accuracy"]["mean"] == pytest.approx(
        2 / 7, abs=1e-4
    )


def test_the_same_records_give_the_same_intervals_whatever_order_the_runs_came_in():
    # Pooled scores list their questions in the order the runs were named: fold 1's first
    # when it was named first. The report resamples them by question id, so the order the
    # runs came in never moves an interval.
    # Recall pooled over seeds takes many values: its resampled means fall on no coarse grid.
    values = {f"q{i:02d}": float(i % 3 == 0) for i in range(40)}
    recall = {f"q{i:02d}": ((i * 7) % 40) / 39 for i in range(40)}

    def report(order):
        row = PolicyScores(
            "trained",
            recall={q: recall[q] for q in order},
            correct={q: values[q] for q in order},
            chunks=dict.fromkeys(order, 2.0),
        )
        echo = PolicyScores(
            "echo@2", recall={q: 0.5 for q in order}, chunks=dict.fromkeys(order, 2.0)
        )
        return section_report(2, [row, echo])

    ids = sorted(values)
    assert report(ids) == report(ids[20:] + ids[:20]) == report(ids[::-1])


def test_a_cold_start_the_final_evaluation_ran_is_read_from_its_record(tmp_path, corpus, capsys):
    index, questions = corpus
    # No weights kept (a record in docs/results/runs): the recorded cold-start trajectories
    # give the row. Fold 0's cold start found a1's page and answered a1 right; fold 1's, b1's.
    trained = [
        {"a1": (["ACME_2020:p1:c0"], "$5 million"), "a2": (["ACME_2020:p3:c0"], "$2 million")},
        {"b1": (["BETA_2020:p1:c0"], "$9 million"), "g1": ([], "$4 million")},
    ]
    before = [
        {"a1": (["ACME_2020:p1:c0"], "$5 million"), "a2": ([], "no idea")},
        {"b1": (["BETA_2020:p1:c0"], "$9 million"), "g1": ([], "none")},
    ]
    runs = [
        write_run(tmp_path / f"f{fold}", trained[fold], fold=fold, cold_start=before[fold])
        for fold in (0, 1)
    ]
    section = json.loads(compare(capsys, index, questions, "--runs", *runs, "--json"))
    section = section["sections"][0]
    cold = row(section, "cold start alone")
    assert not cold["note"] and cold["n"] == 4
    assert cold["accuracy"]["mean"] == pytest.approx(2 / 4)
    assert row(section, "trained")["accuracy"]["mean"] == pytest.approx(4 / 4)
    share = next(p for p in section["paired"] if p["policies"][1] == "cold start alone (before RL)")
    assert share["accuracy"]["mean"] == pytest.approx(2 / 4)

    # A record that misses one of the run's questions is no cold start's row: with no
    # weights kept either, the row says it is not recorded rather than pool a part.
    del before[1]["g1"]
    partial = [
        write_run(tmp_path / f"p{fold}", trained[fold], fold=fold, cold_start=before[fold])
        for fold in (0, 1)
    ]
    section = json.loads(compare(capsys, index, questions, "--runs", *partial, "--json"))
    assert "no cold start kept in p1" in row(section["sections"][0], "cold start alone")["note"]


def test_sleuth_eval_holds_out_the_fold_the_checkpoints_run_held_out(tmp_path, corpus, capsys):
    from tests.helpers.toy import tiny_model_folder

    index, questions = corpus
    model = tiny_model_folder(tmp_path)
    # Three folds of Acme (2 questions), Beta and Gamma: fold 1 is Gamma's with split seed 0
    # and Beta's with split seed 1, the seed of this run.
    run = tmp_path / "run-s1"
    write_run(run, {}, seed=1, fold=1, folds=3, model=model)
    shutil.copytree(model, run / "final")

    def evaluated(*split) -> list[str]:
        out = tmp_path / f"trajectories{len(split)}.jsonl"
        args = ["eval", "--index", index, "--questions", questions, "--policy", str(run / "final"),
                "--folds", "3", "--fold", "1", "--max-turns", "1", "--max-new-tokens", "4",
                "--trajectories", str(out), *split]  # fmt: skip
        assert main(args) == 0
        return sorted({json.loads(line)["question_id"] for line in out.read_text().splitlines()})

    assert evaluated() == ["b1"]
    assert "split seed 1: the run's" in capsys.readouterr().err
    assert evaluated("--split-seed", "0") == ["g1"]  # said outright, it wins


def test_sleuth_eval_takes_a_run_folder_or_a_checkpoint_for_the_model_inside(
    tmp_path, corpus, capsys
):
    # A new user passed the run folder, then checkpoints/step-N/: both crashed in the
    # tokenizer's loading. They name the run's final agent and the checkpoint's model.
    from tests.helpers.toy import tiny_model_folder

    index, questions = corpus
    model = tiny_model_folder(tmp_path)
    run = tmp_path / "run-s1"
    write_run(run, {}, seed=1, fold=1, folds=3, model=model)
    shutil.copytree(model, run / "final")
    shutil.copytree(model, run / "checkpoints" / "step-000002" / "model")

    for given, used in ((run, run / "final"), (run / "checkpoints" / "step-000002",
                        run / "checkpoints" / "step-000002" / "model")):  # fmt: skip
        out = tmp_path / f"{given.name}.jsonl"
        args = ["eval", "--index", index, "--questions", questions, "--policy", str(given),
                "--folds", "3", "--fold", "1", "--max-turns", "1", "--max-new-tokens", "4",
                "--trajectories", str(out)]  # fmt: skip
        assert main(args) == 0
        err = capsys.readouterr().err
        assert f"{given}: evaluating {used}" in err
        assert "split seed 1: the run's" in err  # the run's held-out fold, from either
        records = [json.loads(line) for line in out.read_text().splitlines()]
        assert {r["policy"] for r in records} == {str(used)}
        assert sorted(r["question_id"] for r in records) == ["b1"]
