"""The model card (README.md): what the model is, what it was trained on, how it compares
with baselines, the protocol it speaks, and a snippet that runs it."""

from __future__ import annotations

from engine.agent.protocol import SYSTEM_PROMPT
from engine.agent.settings import PROTOCOL_VERSION
from engine.packs import PACKS, pack_of_settings

_TABLE_KEYS = (
    "accuracy",
    "answer_score",
    "golden_recall",
    "pass@k",
    "searches_per_question",
    "searches_after_miss",
    "n",
)


def validation_table(eval_report: dict | None) -> str:
    """The `sleuth eval --json` report as a Markdown table, one row per policy."""
    policies = (eval_report or {}).get("policies") or {}
    if not policies:
        return "_No validation report was produced for this run._\n"
    keys = [k for k in _TABLE_KEYS if any(k in m for m in policies.values())]
    lines = ["| policy | " + " | ".join(keys) + " |", "|---" * (len(keys) + 1) + "|"]
    for name, metrics in policies.items():
        cells = [_cell(metrics.get(k)) for k in keys]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _cell(value) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    return "" if value is None else str(value)


def _pack_line(name: str) -> str:
    """The pack the agent was trained and decodes with, and what it assumes."""
    pack = PACKS.get(name)
    if pack is None:
        return "none (the engine's default path: no kind of document assumed)"
    return f"`{pack.name}`, {pack.label.lower()}: {pack.description}"


def model_card(
    *,
    name: str,
    base_model: str,
    data_summary: dict,
    eval_report: dict | None,
    config: dict,
    limits: dict,
) -> str:
    """README.md for a published run folder."""
    data_lines = "\n".join(f"- {key}: {value}" for key, value in data_summary.items())
    pack = config["pack"] if "pack" in config else pack_of_settings(config)
    training = ", ".join(
        f"{key}={config[key]}"
        for key in ("steps", "questions_per_step", "group_size", "lr", "lora", "sft_epochs")
        if key in config
    )
    return f"""---
base_model: {base_model}
library_name: transformers
tags: [search-agent, bm25, reinforcement-learning, sleuth]
---

# {name}

A small search agent trained with reinforcement learning (cold-start SFT on scripted
teacher trajectories, then GRPO-style RL with a BM25 search tool) on one customer's
documents by Sleuth.

- Base model: `{base_model}`
- Training: {training}
- Loss: {config.get("loss", {}).get("kind", "?")}
- Pack: {_pack_line(pack)}

## Data
{data_lines}

Validation questions are about entities that no training question mentions.

## Validation against baselines
`trained` is this model; `base` is the untrained base model with the same protocol;
`echo` searches the question itself once and answers from those results; `cold-start`, where
the run kept it, is this model before RL (its cold start alone).

{validation_table(eval_report)}
## Agent protocol
The model answers by searching the bundled index several times in a loop.
It writes `<search>query</search>` and stops; the caller runs the query on the BM25
index (a query that begins with `[words]` searches only the documents whose name or entity
has a word starting with each of those words, `[3M 2018]` names `3M_2018_10K`, weighing each
query word by its rarity among those documents; a scope that names none searches everything;
`[3M 2018 | cash flow statement]` searches only their pages whose heading holds those words;
a scope alone, `<search>[3M 2018]</search>`, searches the question itself within it)
and appends its top hits not shown before (`first_results_per_search` of them for the first
search where set, `results_per_search` otherwise) as
`\\n<results>\\n[chunk-id] document | page N\\ntext…\\n</results>\\n`; when it knows the answer it
writes `<answer>short answer</answer>`. Limits used in training (protocol version
{PROTOCOL_VERSION}; `agent.json` beside the weights holds them, `run_agent.py` uses them):
{limits}.

The system prompt it was trained with:

```text
{SYSTEM_PROMPT}
```

## Run it
```bash
pip install "transformers>=4.45" torch bm25s PyStemmer
python agent/run_agent.py "What was the capital expenditure in 2022?"
```

Or load the weights alone:

```python
from transformers import AutoModelForCausalLM, AutoTokenizer
model = AutoModelForCausalLM.from_pretrained(".")
tokenizer = AutoTokenizer.from_pretrained(".")
```

## Files
- `model.safetensors`, `config.json`, `generation_config.json`, tokenizer files: the model.
- `agent/index/`: the BM25 index (bm25s) of the documents, with `chunks.jsonl`.
- `agent/run_agent.py`: the agent loop (model ⇄ search); beside it, written from the engine's
  own source, its search (`search_index.py`, `search_tool.py`, `agent_tool.py`), protocol
  (`agent_protocol.py`) and rules of decoding (`greedy_rules.py`, `grounding.py`);
  `agent/agent.json` holds its prompt, limits and pack.
- `eval.json`: the full validation report.
"""
