"""`sleuth train` end to end on a toy corpus with a tiny model saved to a folder."""

import json

import pytest

from engine.cli import main
from tests.helpers.toy import FACTS, chunks, questions, tiny_model, tiny_tokenizer


def write_inputs(tmp_path):
    pages = tmp_path / "pages.jsonl"
    pages.write_text(
        "".join(
            json.dumps({"doc": c.doc, "page": c.page, "text": c.text, "entity": c.entity}) + "\n"
            for c in chunks()
        )
    )
    qfile = tmp_path / "questions.jsonl"
    qfile.write_text(
        "".join(
            json.dumps(
                {
                    "id": q.id,
                    "question": q.question,
                    "answer": q.answer,
                    "entity": q.entity,
                    "evidence": [{"text": e.text} for e in q.evidence],
                }
            )
            + "\n"
            for q in questions()
        )
    )
    model_dir = tmp_path / "tiny-model"
    tokenizer = tiny_tokenizer()
    tiny_model(tokenizer).save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    return pages, qfile, model_dir


def test_sleuth_train_writes_checkpoints_metrics_final_model_and_eval(tmp_path, capsys):
    pages, qfile, model_dir = write_inputs(tmp_path)
    out = tmp_path / "run"

    code = main(
        [
            "train",
            "--docs",
            str(pages),
            "--questions",
            str(qfile),
            "--out",
            str(out),
            "--model",
            str(model_dir),
            "--steps",
            "3",
            "--questions-per-step",
            "2",
            "--group-size",
            "2",
            "--sft-epochs",
            "2",
            "--save-every",
            "1",
            "--keep-checkpoints",
            "2",
            "--eval-every",
            "0",
            "--max-turns",
            "2",
            "--max-new-tokens",
            "16",
            "--results-per-search",
            "1",
        ]
    )

    assert code == 0
    # Saved every step, the last two kept.
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["step-000002", "step-000003"]
    assert (out / "final" / "config.json").exists()
    assert [json.loads(line)["step"] for line in (out / "metrics.jsonl").open()] == [1, 2, 3]
    report = json.loads((out / "eval.json").read_text())
    assert {"trained", "base"} <= set(report["policies"])
    assert any(name.startswith("echo@") for name in report["policies"])
    assert report["questions"] == 1 and len(FACTS) == 4  # one of four entities held out
    for metrics in report["policies"].values():
        assert {"answer_score", "golden_recall", "retrieved_chunks", "n"} <= set(metrics)
    # What every policy wrote on the held-out question, beside its scores, the trained
    # agent's first.
    written = [json.loads(line) for line in (out / "eval_trajectories.jsonl").open()]
    assert [w["policy"] for w in written] == list(report["policies"])
    assert all({"question_id", "question", "searches", "answer", "text"} <= set(w) for w in written)

    # The goals report (bench/goals.py) reads the finished run as it was written.
    from bench.goals import main as goals

    capsys.readouterr()
    assert goals([str(out)]) == 0
    table = capsys.readouterr().out
    assert f"seed 0: {out.name} (1 q)" in table
    # header, rule, one row for each of four goals and one for what the minutes bought
    assert len(table.splitlines()) == 7
    assert "float32, " in table.splitlines()[-1]


def test_sleuth_train_explains_a_bad_question_file(tmp_path, capsys):
    pages, _, model_dir = write_inputs(tmp_path)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "what?"}\nnot json\n')

    code = main(
        [
            "train",
            "--docs",
            str(pages),
            "--questions",
            str(bad),
            "--out",
            str(tmp_path / "run"),
            "--model",
            str(model_dir),
        ]
    )

    assert code == 2
    err = capsys.readouterr().err
    assert "line 1" in err and "line 2" in err


def test_a_folder_holding_a_run_is_not_trained_over_without_resume(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text("{}")
    (run / "checkpoints").mkdir()

    code = main(["train", "--index", str(tmp_path / "idx"), "--questions",
                 str(tmp_path / "q.jsonl"), "--out", str(run)])  # fmt: skip

    assert code == 2
    assert "already holds a run: --resume continues it" in capsys.readouterr().err
    assert (run / "checkpoints").is_dir() and (run / "config.json").read_text() == "{}"


def test_the_time_budget_keeps_room_for_the_final_evaluation():
    from engine.training.config import TrainConfig

    assert TrainConfig(max_minutes=45).training_seconds() == 35 * 60  # ten minutes kept
    assert TrainConfig(max_minutes=45).training_seconds(25) == 35 * 60  # the README's runs
    assert TrainConfig(max_minutes=8).training_seconds() == 6 * 60  # a quarter kept
    assert TrainConfig().training_seconds() is None
    # A large validation set gets the time its evaluation takes, training at least half; the
    # cold start's agent, evaluated beside the trained one, adds its share of each question.
    assert TrainConfig(max_minutes=45, sft_epochs=0).training_seconds(120) == 45 * 60 - (
        60 + 8 * 120
    )
    assert TrainConfig(max_minutes=45).training_seconds(100) == pytest.approx(
        45 * 60 - (60 + 8 * 1.4 * 100)
    )
    assert TrainConfig(max_minutes=45, steps=0).training_seconds(100) == 45 * 60 - (60 + 800)
    assert TrainConfig(max_minutes=45).training_seconds(1000) == 45 * 60 / 2


def test_a_slower_machine_keeps_more_time_for_the_final_evaluation():
    from engine.training.config import (
        EVAL_SECONDS_PER_QUESTION,
        TrainConfig,
        eval_seconds_per_question,
    )

    # A fast machine (or none measured) is given the constant; a slow one what it measured.
    assert eval_seconds_per_question() == EVAL_SECONDS_PER_QUESTION
    assert eval_seconds_per_question(2.0) == EVAL_SECONDS_PER_QUESTION
    assert eval_seconds_per_question(12.5) == 12.5
    config = TrainConfig(max_minutes=45, sft_epochs=0)
    # 25 questions fit the ten minutes kept at either speed; 60 do not on the slow machine.
    assert config.training_seconds(25, eval_seconds_per_question(12.5)) == 35 * 60
    assert config.training_seconds(60, eval_seconds_per_question(6.0)) == 35 * 60
    assert config.training_seconds(60, eval_seconds_per_question(12.5)) == 45 * 60 - (
        60 + 12.5 * 60
    )


def _parsed(*argv: str):
    from engine.cli import build_parser
    from engine.training.cli import config_from_args

    base = ["train", "--index", "idx", "--questions", "q.jsonl", "--out", "run"]
    return config_from_args(build_parser().parse_args([*base, *argv]))


def test_a_preset_runs_from_the_command_line_as_the_platform_runs_it():
    from engine.training.presets import preset_config

    assert _parsed("--preset", "cpu-45min") == preset_config("cpu-45min")


def test_flags_given_override_the_preset_field_by_field_and_the_rest_stay():
    from engine.training.presets import preset_config

    config = _parsed("--preset", "cpu-45min", "--steps", "3", "--max-turns", "2", "--dr-grpo")
    preset = preset_config("cpu-45min")
    assert (config.steps, config.limits.max_turns, config.normalize_std) == (3, 2, False)
    assert config.limits.max_new_tokens == preset.limits.max_new_tokens
    assert config.synthetic_questions == preset.synthetic_questions > 0


def test_without_a_preset_the_defaults_apply_and_the_split_seed_is_its_own():
    from engine.training.config import TrainConfig

    assert _parsed() == TrainConfig()
    config = _parsed("--seed", "4", "--split-seed", "1")
    assert (config.seed, config.entity_split_seed()) == (4, 1)
    assert _parsed("--seed", "4").entity_split_seed() == 4


# A valid value for each setting a flag sets, other than its default where it has one.
_FLAG_VALUES = {int: "7", float: "0.4"}
_STRING_VALUES = {
    "precision": "bfloat16",
    "rollout_engine": "sglang",
    "model": "my-model",
    "pack": "filings",
}


def _field(config, path: str):
    for name in path.split("."):
        config = getattr(config, name)
    return config


def test_every_run_option_is_a_flag_that_sets_its_own_field():
    from engine.packs import pack_limits, pack_teacher
    from engine.training.cli import OPTIONS
    from engine.training.config import TrainConfig

    paths = {option.path for option in OPTIONS}
    assert {"steps", "limits.max_turns", "limits.grounded_scope", "loss.kind"} <= paths
    in_pack = {**{f"limits.{rule}": pack for rule, pack in pack_limits().items()}, **pack_teacher()}
    for option in OPTIONS:
        if option.kind is bool:
            pack = ["--pack", in_pack[option.path]] if option.path in in_pack else []
            for argv, value in (([option.flag], True), (["--no-" + option.flag[2:]], False)):
                assert _field(_parsed(*pack, *argv), option.path) is value, argv
            continue
        leaf = option.path.rsplit(".", 1)[-1]
        raw = option.choices[-1] if option.choices else _STRING_VALUES.get(leaf)
        raw = raw or _FLAG_VALUES[option.kind]
        config = _parsed(option.flag, raw)
        assert _field(config, option.path) == option.kind(raw) != _field(TrainConfig(), option.path)


def test_the_older_spellings_of_switches_still_set_them():
    config = _parsed("--dr-grpo", "--refine-on-miss", "--no-heading-search", "--loss", "tis")
    assert (config.normalize_std, config.refine_always, config.heading_search) == (False,) * 3
    assert (config.loss.kind, _parsed("--kl-ref", "0.1", "--dgpo", "0").loss.kl_ref_coef) == (
        "tis",
        0.1,
    )
    assert _parsed("--dgpo", "0").dgpo_coef == 0


def test_a_pack_turns_its_settings_on_and_a_flag_given_wins_over_it():
    from engine.packs import PACKS

    filings = PACKS["filings"]
    config = _parsed("--preset", "cpu-45min", "--pack", "filings", "--no-yes-no-answers")
    assert config.pack == "filings"
    assert config.quoted_answers and config.limits.statement_filter
    assert config.limits.latest_year_scope and not config.limits.yes_no_answers
    assert {"yes_no_answers", "statement_filter", "row_figures"} <= filings.limits()


def test_no_preset_turns_on_a_packs_setting():
    from engine.packs import pack_limits, pack_teacher
    from engine.training.presets import PRESETS, preset_config

    for name in PRESETS:
        config = preset_config(name)
        assert config.pack == ""
        assert not [rule for rule in pack_limits() if getattr(config.limits, rule)], name
        assert not [setting for setting in pack_teacher() if getattr(config, setting)], name


def test_a_packs_setting_without_its_pack_is_refused_with_the_pack_to_choose(capsys):
    from engine.cli import main

    base = ["train", "--index", "idx", "--questions", "q.jsonl", "--out", "run"]
    assert main([*base, "--statement-filter"]) == 2
    assert "filings pack" in (err := capsys.readouterr().err) and "--pack filings" in err
    assert main([*base, "--pack", "manuals"]) == 2
    assert "unknown pack 'manuals'; choose one of filings" in capsys.readouterr().err


def _help(flag: str, capsys) -> str:
    from engine.cli import build_parser

    with pytest.raises(SystemExit):
        build_parser().parse_args(["train", flag])
    return capsys.readouterr().out


def test_help_lists_the_settings_a_customer_tunes_and_help_all_every_one(capsys):
    from engine.training.cli import ALIASES, OPTIONS

    short, every = _help("--help", capsys), _help("--help-all", capsys)
    listed = [option.flag for option in OPTIONS if f"  {option.flag} " in short.replace("\n", " ")]
    assert "--pack" in short and "--steps" in short and "--max-minutes" in short
    assert "--statement-filter" not in short and "--kl-ref" not in short
    assert 15 <= len(listed) <= 25
    for option in OPTIONS:
        assert option.flag in every, option.flag
    assert all(flag in every for flag, *_ in ALIASES)


def test_a_setting_left_out_of_help_is_still_taken():
    assert _parsed("--kl-ref", "0.1").loss.kl_ref_coef == 0.1


def test_sleuth_train_on_two_ranks_trains_in_a_second_process_and_writes_once(tmp_path):
    pages, qfile, model_dir = write_inputs(tmp_path)
    out = tmp_path / "run"
    common = ["--questions", str(qfile), "--model", str(model_dir), "--eval-every", "0"]
    small = ["--steps", "2", "--questions-per-step", "2", "--group-size", "2", "--sft-epochs", "1"]
    limits = ["--max-turns", "2", "--max-new-tokens", "16", "--no-final-eval"]
    args = ["train", "--docs", str(pages), "--out", str(out), *common, *small, *limits]

    assert main([*args, "--ranks", "2"]) == 0

    assert [json.loads(line)["step"] for line in (out / "metrics.jsonl").open()] == [1, 2]
    assert (out / "rank-1.log").exists() and not (out / "rank-job.pkl").exists()
    assert json.loads((out / "config.json").read_text())["ranks"] == 2
    assert main([*args, "--ranks", "9"]) == 2  # one machine's devices at most
