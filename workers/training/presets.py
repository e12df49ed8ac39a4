"""Run presets: named starting points for a run's TrainConfig, shown on the new-run form
and run by `sleuth train --preset NAME`.

A preset is a label, a description a customer can choose by, and TrainConfig overrides.
`preset_config(name, overrides)` merges the preset with per-run options (nested keys such
as `limits` or `loss` merge field by field) and returns the engine's TrainConfig.
"""

from workers.training.config import TrainConfig

PRESETS: dict[str, dict] = {
    "quick-cpu": {
        "label": "Quick CPU demo",
        "description": (
            "SmolLM2-135M, a short cold start and a handful of RL steps with small groups. "
            "Finishes in a few minutes on a CPU worker; good for trying the platform, "
            "not for a model you would ship."
        ),
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
            "SmolLM2-135M with the settings of the measured CPU run in the README: a "
            "cold start of up to three epochs and three quarters of the training time on "
            "the scripted teacher's trajectories (the question "
            "scoped to its company and year, then its key terms within the part of the "
            "document the question names, else its key terms: a second search every time; only "
            "answers whose figures its results show), on table lookups (answered with "
            "the row's label, then its figure, as the table writes them) and yes/no "
            "comparisons synthesized from your documents (as many yes/no as your own "
            "questions ask, naming their statement in your questions' own words), on "
            "'what drove' questions answered by the reason your filings give (as many as "
            "your questions ask why) and on "
            "drills that copy made-up company names into the scope, then RL with groups of "
            "4 until 35 minutes are spent, then the evaluation "
            "against the base model and echo. The agent decodes greedily with rules: a "
            "search's [scope] copies only words of the question, no word or figure loops, a "
            "yes-or-no question is answered Yes or No, a question offering two options with "
            "one of them, one asking what, which or how never with Yes or No, one asking "
            "what drove a change, or why, in words rather than a figure, a later "
            "search stays within the financial statement the question names, and an answer "
            "that begins with a row's label writes that row's first figure."
        ),
        "config": {
            "model": "default",
            "precision": "auto",
            "sft_epochs": 3,
            "sft_lr": 3e-4,
            # proof30 against proof29, the same day: recall +0.04 / +0.07 with fewer chunks,
            # a second search mostly where the first missed; RL had 8 steps instead of 11-13.
            "sft_share": 0.75,
            "heading_search": False,
            "section_search": True,  # proof23: recall +0.03-0.05, two searches a question
            # The key-terms search after every first search, not only after a miss, which the
            # student cannot see: proof46's student searched twice everywhere (2.00 searches
            # after a miss), proof50's, from the same data, only within a statement the
            # question names (1.20). Measured with no model on seeds 0-2, the teacher's
            # searches reach the same recall at the same echo ratio (2.09x / 2.12x / 1.27x).
            "refine_always": True,
            # proof25 against proof26, the same day: recall +0.01 / +0.07, one and two more
            # questions answered, the section words copied in more searches.
            "synthetic_sections": True,
            # proof108 and proof109 against proof106 and proof104 (seeds 1 and 0, the same
            # kind of machine): the student writes the row it read, then its figure; on 26
            # lookups synthesized from each split's held-out companies' tables, 5 and 3 right
            # against 0 and 0; answers 0.040 -> 0.080 and 0.080 -> 0.120, recall the same
            # (all judged by the corrected offline judge, bench/rejudge.py).
            "quoted_answers": True,
            # Asked for many: the teacher keeps only the questions whose figures its results
            # show, about 100 lookups and 20 yes/no comparisons of 800 on FinanceBench's
            # training companies.
            "synthetic_questions": 800,
            "scope_drills": 1,
            "customer_scope_drills": 2,
            "steps": 60,
            "questions_per_step": 4,
            "group_size": 4,
            "lr": 1e-5,
            "temperature": 0.7,
            "train_layers": 6,
            "limits": {
                "max_turns": 3,
                "max_new_tokens": 160,
                "max_result_tokens": 400,
                # proof34: three hits in the same 400 tokens, as costly to train on. The teacher's
                # searches reach +0.03-0.07 more on seeds 0-2, trained agents' own queries
                # replayed +0.01-0.04 (none lower); the answer's figure is still shown for 91 %
                # of the lookups found (94 % with two hits).
                "results_per_search": 3,
                # proof37: two hits for the first search, the question itself, three for a
                # later one within a section or on key terms. On all 150 dev questions the
                # teacher's two searches reach 0.427 of the golden chunks with 3 + 3 hits (5.7
                # chunks, 1.61x echo@6), 0.414 with 2 + 3 (4.7, 1.76x echo@5), 0.408 with 3 + 2
                # (4.9, 1.73x): a later search's third hit finds 0.045 a chunk, the first's 0.032.
                "first_results_per_search": 2,
                # A greedy loop inside one query ("Answer in USD millions. Answer in…")
                # would spend all 160 tokens; a query this long is cut and run.
                "max_turn_tokens": 64,
                # Rules of greedy decoding where the agent is used (`agent.greedy_rules`): no
                # word loop ("amount amount amount…" in 1-5 of 25 validation queries a run,
                # proof50-54), and a scope copied from the question: proof54's checkpoint
                # wrote "[Pfizer 2021]" for PepsiCo, at 0.290 recall; with the scope rule the
                # same weights wrote "[PepsiCo 2021]", at 0.423.
                "loop_guard": True,
                "grounded_scope": True,
                # Search terms of the question's words, each once, as the teacher writes them:
                # proof104's student searched "[3M 2018 | cash flow statement] capital
                # expenditure amount net", "[JPM 2023 | VaR] risk management risk management
                # risk risk…"; its weights under the rule searched for the question's words
                # and found the same evidence (recall 0.533 both, answers 0.080 -> 0.082).
                "grounded_terms": True,
                # proof63's student answered "3M" to "Is 3M a capital-intensive business…?"
                "yes_no_answers": True,
                # proof72's student filtered capex questions naming the cash flow statement to
                # "| p7" and "| pepsi". proof66-72's weights with the rule: recall 0.534 ->
                # 0.540 on average, the lowest run 0.460 -> 0.493 (`agent.greedy_rules`).
                "statement_filter": True,
                # proof86-88's students answered "Yes" to "Did wages … increase or decrease?"
                # and to "What is the year end FY2019 total amount of inventories…?", and one
                # closed its answer with "</search>". Their weights with the rule: answer
                # score 0.040 -> 0.080 on seeds 0 and 1, seed 2 unchanged (`agent.greedy_rules`).
                "answer_form": True,
                # An answer that begins with a row's label writes that row's first figure, as
                # the quoted lookups of the cold start do (`agent.grounding.ResultRows`).
                # proof114's and proof115's weights on 26 lookups of their held-out
                # companies' tables: 3 -> 5 and 3 -> 10 right ("Total assets $227,895
                # million" -> "$236,495"); on financebench's held-out questions, the same.
                "row_figures": True,
            },
            "eval_every": 0,
            "save_every": 2,
            "samples_logged": 2,
            "max_minutes": 45,
        },
    },
    "standard-gpu": {
        "label": "Standard (GPU)",
        "description": (
            "A Qwen3-4B-class model trained with LoRA: cold start, then 200 RL steps with "
            "groups of 8. Needs a GPU worker; takes a few hours."
        ),
        "config": {
            "model": "Qwen/Qwen3-4B-Instruct-2507",
            "lora": True,
            "lora_rank": 32,
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

DEFAULT_PRESET = "quick-cpu"


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
    """The preset's TrainConfig with `overrides` (TrainConfig fields, nested as in to_dict)
    applied on top. Unknown presets and unknown fields raise ValueError."""
    if name not in PRESETS:
        raise UnknownPreset(f"unknown preset {name!r}; choose one of {', '.join(PRESETS)}")
    data = merge_settings(TrainConfig().to_dict(), PRESETS[name]["config"])
    data = merge_settings(data, overrides or {})
    try:
        return TrainConfig.from_dict(data)
    except TypeError as error:  # an unknown field name
        raise ValueError(f"invalid run options: {error}") from None
