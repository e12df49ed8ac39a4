"""Run presets: named starting points for a run's TrainConfig, shown on the new-run form
and run by `sleuth train --preset NAME`.

A preset is a label, a description a customer can choose by, what its run needs from a
worker (`needs`: a CPU or N GPUs, and memory; the platform routes the run to a worker that
holds them, engine.devices), and TrainConfig overrides.
No preset assumes a kind of document: a pack (`engine.packs`) adds what holds of one.
`preset_config(name, overrides)` merges the preset, then the pack the overrides or the
preset name (`pack`), then the per-run options (nested keys such as `limits` or `loss` merge
field by field), and returns the engine's TrainConfig.
"""

from engine.devices import Needs
from engine.packs import UnknownPack, pack_named
from engine.training.config import TrainConfig

PRESETS: dict[str, dict] = {
    "quick-cpu": {
        "label": "Quick CPU demo",
        "description": (
            "SmolLM2-135M, a short cold start and a handful of RL steps with small groups. "
            "Finishes in a few minutes on a CPU worker; good for trying the platform, "
            "not for a model you would ship."
        ),
        # Measured: 7.3 GiB at peak, the 45-minute preset's model and batches
        # (bench/train_memory.py).
        "needs": Needs("cpu", memory_gib=9),
        "config": {
            "model": "default",
            "precision": "auto",
            "sft_epochs": 1,
            "steps": 4,
            "questions_per_step": 2,
            "group_size": 2,
            "lr": 2e-5,
            "warmup_steps": 1,
            "limits": {
                "max_turns": 2,
                "max_new_tokens": 96,
                "max_result_tokens": 192,
                "results_per_search": 2,
            },
            "eval_every": 0,
            "eval_samples": 1,
            "save_every": 2,
            "samples_logged": 2,
            "max_minutes": 20,
        },
    },
    "cpu-45min": {
        "label": "45 minutes on a CPU",
        "description": (
            "SmolLM2-135M with the settings of the measured CPU run in the README, trained "
            "as LoRA adapters: a cold start of up to three epochs and three quarters of the "
            "training time on the scripted teacher's trajectories (the question itself, then "
            "the question again within the documents it names: a second search every time; "
            "only answers whose figures its results show), and on questions synthesized from your "
            "documents (among them sentences with a word to copy back), then RL with groups of "
            "4 until 35 minutes are spent, then the evaluation against the base model and "
            "echo. The agent decodes greedily, as trained. For annual reports, add the "
            "filings pack (its rules of decoding and its drills)."
        ),
        # Measured: 7.8 GiB at peak in a fresh run, 8.3 GiB in RL steps (LoRA's cold start and
        # RL's policy update hold a whole batch's activations; bench/train_memory.py).
        "needs": Needs("cpu", memory_gib=10),
        "config": {
            "model": "default",
            "precision": "auto",
            "sft_epochs": 3,
            "sft_lr": 3e-4,
            # A second search mostly where the first missed, for fewer RL steps
            # (docs/packs.md#the-cpu-45min-preset).
            "sft_share": 0.75,
            "heading_search": False,
            "section_search": True,  # two searches a question: recall +0.03-0.05
            # The key-terms search after every first search, not only after a miss, which the
            # student cannot see: taught only on misses, some runs learn it and some do not.
            "refine_always": True,
            # That second search is the question again within the scope the question names
            # (written as the scope alone), not its key terms: the student writes it as taught,
            # where it garbled the key terms after 400 tokens of results. With the completion
            # questions below: recall +0.105 [+0.057, +0.161] at 0.95 more chunks, echo's at
            # its count, accuracy -0.065 [-0.129, 0.000], pooled folds of python-reference
            # (docs/results.md#the-pair-in-the-preset).
            "refine_terms": False,
            # Synthesized questions that quote a sentence with a word blanked out, answered
            # by copying it from the results: answers the student can read, in documents of
            # any kind. The teacher keeps only the questions whose evidence (and figures) its
            # results show; 100 asked give about 90 completions and the few other kinds.
            "completion_questions": True,
            "synthetic_questions": 100,
            "steps": 60,
            "questions_per_step": 4,
            "group_size": 4,
            "lr": 1e-5,
            "temperature": 0.7,
            # LoRA adapters on every linear layer, not the top 6 layers' weights: taught on the
            # weights, the cold start took the reading the model came with (it answered "No" to
            # most open questions). Pooled folds of python-reference: accuracy +0.210 [+0.137,
            # +0.290] in the preset's own runs, +0.234 [+0.169, +0.302] in cold starts of two
            # seeds, at the same recall (docs/results.md#lora-in-the-preset). Its cold start is
            # slower on a CPU: RL gets 10-20 steps of the 45 minutes.
            "lora": True,
            # Unused under LoRA (its adapters sit on every layer); a run without it (the
            # filings pack's) trains the top 6 layers' weights, as it was measured.
            "train_layers": 6,
            "limits": {
                "max_turns": 3,
                "max_new_tokens": 160,
                "max_result_tokens": 400,
                # Three hits in the same 400 tokens: as costly to train on, more found.
                "results_per_search": 3,
                # The first search (the question itself) finds less per chunk shown than a
                # later, narrower one's third hit.
                "first_results_per_search": 2,
                # A greedy loop inside one query would spend all 160 tokens; a query this
                # long is cut and run.
                "max_turn_tokens": 64,
                # No rule of greedy decoding: the four written for any documents cost recall
                # on python-reference in two trainings (docs/packs.md#rules-off); the filings
                # pack, where they were adopted, turns them on.
            },
            "eval_every": 0,
            "save_every": 2,
            "samples_logged": 2,
            "max_minutes": 45,
        },
    },
    # cpu-45min's settings given three hours, most of them RL's, with a validation every 25
    # steps from step 0 (the cold start's level): RL's learning curve, drawn on the run page.
    "cpu-3h": {
        "label": "Three hours on a CPU (RL's learning curve)",
        "description": (
            "The 45-minute preset's settings with three hours: the same cold start, then RL "
            "for up to 400 steps, validated on one sample a question every 25 steps and "
            "before the first, so that the run page shows what RL adds over the cold start."
        ),
        "needs": Needs("cpu", memory_gib=10),  # cpu-45min's (bench/train_memory.py)
        "extends": "cpu-45min",
        "config": {
            "steps": 400,
            "eval_every": 25,
            "eval_samples": 1,
            "save_every": 25,
            "max_minutes": 180,
        },
    },
    # The 45-minute preset's data work (the teacher's searches, the synthesized questions, the
    # cold start's share, sampling at 0.7 in bfloat16) on a larger model with LoRA, larger
    # groups and longer turns: what differs is what the GPU affords, not what the run learns.
    "standard-gpu": {
        "label": "Standard (GPU)",
        "description": (
            "A Qwen3-4B-class model trained with LoRA on the 45-minute preset's cold start and "
            "synthesized questions, then 200 RL steps with groups of 8. Needs a GPU worker; "
            "takes a few hours."
        ),
        # A 4B model in bf16 (8 GB) with LoRA, its rollouts' KV cache and activations for
        # 16k-token batches: a 24 GB card (L4, A10: 22.5 GiB as torch counts) is the
        # smallest that holds it.
        "needs": Needs("gpu", devices=1, memory_gib=22),
        "extends": "cpu-45min",
        "config": {
            "model": "Qwen/Qwen3-4B-Instruct-2507",
            "lora": True,
            "lora_rank": 32,
            "train_layers": None,  # LoRA's adapters sit on every layer
            "sft_epochs": 2,
            "steps": 200,
            "questions_per_step": 8,
            "group_size": 8,
            "lr": 1e-5,
            "warmup_steps": 10,
            "max_batch_tokens": 16384,
            "limits": {
                "max_turns": 4,
                "max_new_tokens": 1024,
                "max_result_tokens": 512,
                "results_per_search": 3,
            },
            "eval_every": 20,
            "eval_samples": 4,
            "save_every": 20,
            "samples_logged": 4,
            "max_minutes": 360,
        },
    },
}

# A preset that "extends" another has that one's settings under its own (top-level keys).
for _preset in PRESETS.values():
    if _base := _preset.pop("extends", None):
        _preset["config"] = {**PRESETS[_base]["config"], **_preset["config"]}

DEFAULT_PRESET = "quick-cpu"


def preset_needs(name: str) -> Needs:
    """What a run of the preset needs from a worker (a CPU when the preset says nothing)."""
    if name not in PRESETS:
        raise UnknownPreset(f"unknown preset {name!r}; choose one of {', '.join(PRESETS)}")
    return PRESETS[name].get("needs") or Needs()


class UnknownPreset(ValueError):
    """A preset name that is not in PRESETS."""


def merge_settings(base: dict, overrides: dict) -> dict:
    """`overrides` on top of `base`, nested dicts (limits, loss, reward) field by field."""
    merged = dict(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge_settings(merged[key], value)
        else:
            merged[key] = value
    return merged


def preset_config(name: str, overrides: dict | None = None) -> TrainConfig:
    """The preset's TrainConfig with its pack's settings and `overrides` (TrainConfig fields,
    nested as in to_dict) applied on top. Unknown presets, packs and fields raise ValueError."""
    if name not in PRESETS:
        raise UnknownPreset(f"unknown preset {name!r}; choose one of {', '.join(PRESETS)}")
    return run_config(PRESETS[name]["config"], overrides)


def run_config(preset: dict | None, overrides: dict | None = None) -> TrainConfig:
    """TrainConfig's defaults, then `preset`'s settings, then the settings of the pack the
    overrides (else the preset) name, then `overrides`: a setting given for the run wins
    over its pack's, so one rule of a pack can be turned off."""
    overrides = overrides or {}
    data = merge_settings(TrainConfig().to_dict(), preset or {})
    pack_name = overrides.get("pack", data.get("pack", ""))
    try:
        pack = pack_named(pack_name)
    except UnknownPack as error:
        raise ValueError(str(error)) from None
    if pack:
        data = merge_settings(data, {"pack": pack.name, **pack.overrides()})
    data = merge_settings(data, overrides)
    try:
        return TrainConfig.from_dict(data)
    except TypeError as error:  # an unknown field name
        raise ValueError(f"invalid run options: {error}") from None
