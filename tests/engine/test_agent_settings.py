"""A checkpoint carries its agent settings, and `sleuth eval` runs it (and the baselines it
is compared with) under them unless told otherwise."""

import argparse
import json
from dataclasses import asdict

from engine.agent.settings import PROTOCOL_VERSION, read_agent_settings, write_agent_settings
from engine.agent.trajectory import Limits
from engine.evaluation.cli import LIMIT_DEFAULTS, policy_limits
from engine.training.checkpoint import latest_checkpoint
from tests.helpers.toy import LIMITS, config, run_training

TRAINED = Limits(max_turns=2, max_new_tokens=96, max_result_tokens=200, results_per_search=2)


def test_every_checkpoint_and_the_final_model_carry_the_limits_they_were_trained_under(
    tmp_path,
):
    result, _ = run_training(tmp_path, config(steps=1, sft_epochs=0, save_every=1))

    for folder in (result["final"], latest_checkpoint(tmp_path / "run") / "model"):
        settings = read_agent_settings(folder)
        assert settings.limits == LIMITS and settings.protocol == PROTOCOL_VERSION
        assert "<search>" in settings.system_prompt


def _args(**given) -> argparse.Namespace:
    return argparse.Namespace(**{key: given.get(key) for key in LIMIT_DEFAULTS})


def test_eval_runs_a_checkpoint_and_its_baselines_under_the_checkpoints_limits(tmp_path):
    write_agent_settings(tmp_path / "ckpt", TRAINED)
    specs = [str(tmp_path / "ckpt"), "echo", "base"]

    limits = policy_limits(specs, _args())

    assert all(limits[spec] == TRAINED for spec in specs)


def test_eval_flags_win_over_a_checkpoints_limits(tmp_path):
    write_agent_settings(tmp_path / "ckpt", TRAINED)

    limits = policy_limits([str(tmp_path / "ckpt"), "echo"], _args(max_turns=5))

    assert {lim.max_turns for lim in limits.values()} == {5}
    assert {lim.results_per_search for lim in limits.values()} == {2}


def test_without_a_checkpoint_eval_uses_its_defaults_and_two_checkpoints_keep_their_own(
    tmp_path,
):
    assert policy_limits(["echo"], _args())["echo"] == Limits(**LIMIT_DEFAULTS)
    write_agent_settings(tmp_path / "a", TRAINED)
    write_agent_settings(tmp_path / "b", LIMITS)
    limits = policy_limits([str(tmp_path / "a"), str(tmp_path / "b"), "echo"], _args())
    assert (limits[str(tmp_path / "a")], limits[str(tmp_path / "b")]) == (TRAINED, LIMITS)
    assert limits["echo"] == Limits(**LIMIT_DEFAULTS)  # whose terms? neither: say so by default


def test_eval_switches_a_checkpoints_decoding_rules_on_or_off(tmp_path):
    rules = {"loop_guard": True, "grounded_figures": True, "grounded_scope": True}
    write_agent_settings(tmp_path / "ckpt", Limits(**rules))
    specs = [str(tmp_path / "ckpt"), "echo"]
    limits = policy_limits(specs, _args())
    assert all(getattr(lim, rule) for lim in limits.values() for rule in rules)

    args = _args()
    args.loop_guard, args.grounded_figures, args.grounded_scope = "off", "off", "off"
    limits = policy_limits(specs, args)
    assert not any(getattr(lim, rule) for lim in limits.values() for rule in rules)


def test_every_limit_is_an_eval_flag_that_wins_over_a_checkpoints_own(tmp_path):
    from dataclasses import fields

    from engine.cli import build_parser

    write_agent_settings(tmp_path / "ckpt", Limits(loop_guard=True, grounded_scope=True))
    argv = ["eval", "--index", "i", "--questions", "q", "--policy", str(tmp_path / "ckpt")]
    argv += ["--max-turns", "5", "--loop-guard", "off", "--first-results-per-search", "2"]
    args = build_parser().parse_args(argv)

    (limits,) = policy_limits([str(tmp_path / "ckpt")], args).values()

    assert (limits.max_turns, limits.first_results_per_search) == (5, 2)
    assert (limits.loop_guard, limits.grounded_scope) == (False, True)
    assert all(hasattr(args, f.name) for f in fields(Limits))


# agent.json as written before packs: the scope rule held the latest year too, the
# answer-form rule the closing tag too, and no pack was named.
BEFORE_PACKS = {
    "protocol": 10,
    "system_prompt": "s",
    "limits": {
        **{
            key: value
            for key, value in asdict(TRAINED).items()
            if key not in ("answer_tag", "latest_year_scope")
        },
        "loop_guard": True,
        "grounded_scope": True,
        "answer_form": True,
    },
}


def test_an_agent_saved_before_packs_decodes_as_it_did_and_reads_as_the_filings_packs(tmp_path):
    (tmp_path / "agent.json").write_text(json.dumps(BEFORE_PACKS))

    settings = read_agent_settings(tmp_path)

    assert settings.pack == "filings"
    assert settings.limits.latest_year_scope and settings.limits.answer_tag
    assert settings.limits.grounded_scope and settings.limits.answer_form


def test_an_agent_saved_before_packs_with_rules_of_any_documents_only_has_no_pack(tmp_path):
    limits = {
        key: value
        for key, value in asdict(Limits(loop_guard=True)).items()
        if key not in ("answer_tag", "latest_year_scope")
    }
    (tmp_path / "agent.json").write_text(json.dumps({**BEFORE_PACKS, "limits": limits}))

    settings = read_agent_settings(tmp_path)

    assert settings.pack == "" and settings.limits == Limits(loop_guard=True)


def test_an_agent_carries_its_pack_and_the_rules_it_turns_on(tmp_path):
    from engine.packs import PACKS

    rules = dict.fromkeys(PACKS["filings"].limits(), True)
    write_agent_settings(tmp_path / "filings", Limits(grounded_scope=True, **rules))
    write_agent_settings(tmp_path / "plain", Limits(grounded_scope=True))

    saved = json.loads((tmp_path / "filings" / "agent.json").read_text())
    assert saved["pack"] == "filings" and saved["limits"]["yes_no_answers"] is True
    assert read_agent_settings(tmp_path / "filings").limits.statement_filter
    plain = read_agent_settings(tmp_path / "plain")
    assert plain.pack == "" and not plain.limits.latest_year_scope


def _stored_before_packs(**settings) -> dict:
    """A run's settings as a version before packs stored them: no pack, nor the teacher's
    two switches that were always on then."""
    from engine.training.config import TrainConfig

    stored = TrainConfig().to_dict()
    for name in ("pack", "scope_years", "statement_names"):
        del stored[name]
    return stored | settings


def test_a_run_stored_before_packs_resumes_as_it_ran_in_the_filings_pack():
    from engine.training.config import TrainConfig

    ruled = TrainConfig.from_dict(
        _stored_before_packs(limits=BEFORE_PACKS["limits"], quoted_answers=True)
    )
    plain = TrainConfig.from_dict(_stored_before_packs())

    assert ruled.pack == "filings" and ruled.limits.latest_year_scope and ruled.quoted_answers
    # Its teacher scoped by the latest year and read statements' other names, rules or not.
    for run in (ruled, plain):
        assert (run.pack, run.scope_years, run.statement_names) == ("filings", True, True)
    assert not plain.limits.yes_no_answers  # the rules it did not run stay off
    assert TrainConfig.from_dict(TrainConfig().to_dict()).pack == ""  # a run of today: as stored
