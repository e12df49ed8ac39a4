"""Packs: a named bundle of settings true of one kind of document, opted into per run; each
setting a real switch with its reason and its measured effect, recorded in docs/packs.md."""

import re
from dataclasses import fields
from pathlib import Path

import pytest

from engine.agent.trajectory import Limits
from engine.packs import PACKS, UnknownPack, pack_named, pack_of_limits
from engine.training.config import TrainConfig
from engine.training.presets import preset_config

DOCS = Path(__file__).resolve().parents[2] / "docs" / "packs.md"


def _switches(cls) -> set[str]:
    return {f.name for f in fields(cls) if f.type in (bool, "bool")}


@pytest.mark.parametrize("pack", PACKS.values(), ids=lambda p: p.name)
def test_every_setting_of_a_pack_is_a_real_setting_with_its_reason_and_recorded_effect(pack):
    anchors = set(re.findall(r'<a id="([^"]+)"></a>', DOCS.read_text()))
    assert pack.limits() <= _switches(Limits)
    assert pack.teacher() <= _switches(TrainConfig)
    valued = {s.path: s.value for s in pack.settings if not s.switch}
    defaults = TrainConfig().to_dict()
    for path, value in valued.items():
        node = defaults
        for part in path.split("."):
            node = node[part]
        assert type(node) is type(value), path
    for setting in pack.settings:
        assert setting.why and setting.effect, setting.path
        (anchor,) = re.findall(r"docs/packs\.md#([\w-]+)", setting.effect)
        assert anchor in anchors, setting.path


def test_choosing_a_pack_turns_every_setting_of_it_on():
    config = preset_config("quick-cpu", {"pack": "filings"})
    pack = PACKS["filings"]
    assert all(getattr(config.limits, rule) for rule in pack.limits())
    assert all(getattr(config, setting) for setting in pack.teacher())
    for setting in pack.settings:
        node = config
        for part in setting.path.split("."):
            node = getattr(node, part)
        assert node == setting.value, setting.path
    assert config.pack == "filings"


def test_a_pack_s_numbers_are_its_choice_not_a_switch_only_it_may_turn_on():
    assert preset_config("cpu-45min").scope_drills == 0  # the default path drills no scope
    assert preset_config("cpu-45min", {"pack": "filings"}).scope_drills == 1
    assert preset_config("cpu-45min", {"scope_drills": 3}).scope_drills == 3  # no pack needed


def test_the_rules_written_for_any_documents_are_the_filings_packs_choice_not_the_default():
    rules = ("loop_guard", "grounded_scope", "grounded_terms", "answer_tag")
    default, filings = preset_config("cpu-45min"), preset_config("cpu-45min", {"pack": "filings"})
    assert not any(getattr(default.limits, rule) for rule in rules)
    assert all(getattr(filings.limits, rule) for rule in rules)
    # Any run may still turn one on, without the pack.
    assert preset_config("cpu-45min", {"limits": {"loop_guard": True}}).limits.loop_guard


def test_an_unknown_pack_is_refused_with_the_packs_there_are():
    with pytest.raises(UnknownPack, match="choose one of filings"):
        pack_named("manuals")
    with pytest.raises(ValueError, match="unknown pack 'manuals'"):
        TrainConfig(pack="manuals")
    with pytest.raises(ValueError, match="unknown pack 'manuals'"):
        preset_config("cpu-45min", {"pack": "manuals"})
    assert pack_named("") is None


def test_the_pack_an_agents_rules_belong_to():
    assert pack_of_limits({"yes_no_answers": True, "loop_guard": True}) == "filings"
    assert pack_of_limits({"loop_guard": True, "grounded_scope": True}) == ""


def test_a_run_synthesizes_the_generic_kinds_and_its_packs():
    from engine.documents.synthesis import GENERIC_KINDS
    from engine.packs import synthesis_kinds
    from engine.packs.filings.questions import FILINGS_KINDS

    assert synthesis_kinds("") == GENERIC_KINDS
    assert set(synthesis_kinds("filings")) == set(GENERIC_KINDS) | set(FILINGS_KINDS)


FILING = (
    "UNITED STATES SECURITIES AND EXCHANGE COMMISSION. FORM 10-K. For the fiscal year ended "
    "December 31, 2022. Consolidated Balance Sheets. Consolidated Statements of Operations."
)
MANUAL = (
    "The for statement is used to iterate over the elements of a sequence. A balance sheet "
    "template ships with the spreadsheet examples."
)


def test_the_filings_pack_is_offered_for_documents_that_look_like_filings_only():
    from engine.packs import suggested_pack

    assert suggested_pack([FILING, FILING, MANUAL]) == "filings"
    assert suggested_pack([MANUAL, MANUAL, FILING]) == ""
    assert suggested_pack([]) == ""


def test_the_default_first_search_is_unscoped_and_a_run_stored_before_the_option_resumes_scoped():
    assert TrainConfig().scoped_first_search is False
    assert preset_config("cpu-45min", {"pack": "filings"}).scoped_first_search is True
    stored = TrainConfig().to_dict()
    del stored["scoped_first_search"]  # a run stored before the option existed
    assert TrainConfig.from_dict(stored).scoped_first_search is True


def test_the_three_hour_preset_is_the_45_minute_one_given_time_and_a_learning_curve():
    short, long = preset_config("cpu-45min").to_dict(), preset_config("cpu-3h").to_dict()
    changed = {k for k in short if short[k] != long[k]}
    assert changed == {"steps", "eval_every", "eval_samples", "save_every", "max_minutes"}
    assert long["max_minutes"] == 180 and long["eval_every"] > 0  # step 0: the cold start


def test_the_gpu_preset_does_the_45_minute_presets_data_work_on_a_larger_model():
    cpu, gpu = preset_config("cpu-45min").to_dict(), preset_config("standard-gpu").to_dict()
    changed = {k for k in cpu if cpu[k] != gpu[k]}
    assert changed == {
        "model", "lora_rank", "train_layers", "sft_epochs", "steps",
        "questions_per_step", "group_size", "warmup_steps", "max_batch_tokens", "limits",
        "eval_every", "save_every", "samples_logged", "max_minutes",
    }  # fmt: skip
    assert gpu["completion_questions"] and not gpu["refine_terms"] and cpu["lora"]
    assert gpu["synthetic_questions"] > 0 and gpu["temperature"] == 0.7
