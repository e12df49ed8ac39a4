"""An agent's settings, saved beside its weights, so a checkpoint is used as it was made.

`agent.json` in a model folder (every checkpoint, the final model, the published bundle's
`agent/`) holds the protocol version, the system prompt and the limits the agent was
trained under: turns, model tokens, results per search and the result-token budget, its
rules of decoding, the pack they came with (`pack`: "filings", or "" for none; see
`engine.packs`), and the base model the run started from (`base_model`, the run's model
name). A run trained
with LoRA keeps its adapter beside the merged weights (`adapter/`, peft's folder): the
inference worker then loads that base once and attaches each such agent's adapter to it.
Evaluating a checkpoint under other limits than it was trained with measures something
else than the agent, so `sleuth eval` and the bundled `run_agent.py` read them.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from engine.agent.protocol import SYSTEM_PROMPT
from engine.agent.trajectory import Limits
from engine.packs import pack_of_limits

AGENT_SETTINGS_FILE = "agent.json"
ADAPTER_DIR = "adapter"  # a LoRA run's unmerged adapter, beside the merged model
# Bumped when the tags, the results format or the prompt's meaning change.
# 2: a page filter after a bar in the brackets ("[3M 2018 | cash] capex").
# 3: a hit too long for its share of the results shows the lines holding the query's words.
# 4: a search shows only hits the conversation has not shown yet.
# 5: the prompt's page filter is the question's own words for the part ("| cash flow
#    statement"), as the teacher writes it, not one word of a heading ("| cash").
# 6: a scope alone ("[3M 2018]") searches the question itself within it.
# 7: the prompt's examples scope to "[name year]", not to a real filing ("[3M 2018]"), which
#    students wrote for questions whose company they did not find (Walmart's, 3M's 2022).
# 8: a scope naming several companies searches those the question names ("[AMER 2022]" for
#    American Express searched American Water Works' filings too).
# 9: a question names companies by its words written as names ("Block"), not by common words
#    that start a company's name ("to the best of your abilities": Best Buy), where it has any.
# 10: a scope's year is searched beside the later years the query names, not the earlier ones
#    (a filing reports its year beside earlier ones): "[Walmart 2020] … FY2018 - FY2020 …"
#    searched the 2018 filing too, and showed its pages first.
# 11: the prompt's examples name no domain ("[name | part] key words", not "[name year | cash
#    flow statement] capital expenditure"): the default path knows no domain.
PROTOCOL_VERSION = 11


@dataclass(frozen=True)
class AgentSettings:
    limits: Limits
    system_prompt: str = SYSTEM_PROMPT
    protocol: int = PROTOCOL_VERSION
    base_model: str | None = None  # the model the run started from, as its config names it
    pack: str = ""  # the pack whose rules `limits` turns on ("" for none)

    def to_dict(self) -> dict:
        return {
            "protocol": self.protocol,
            "system_prompt": self.system_prompt,
            "pack": self.pack,
            "limits": asdict(self.limits),
            **({"base_model": self.base_model} if self.base_model else {}),
        }


def write_agent_settings(
    folder: str | Path,
    limits: Limits | dict,
    *,
    base_model: str | None = None,
    pack: str | None = None,
) -> Path:
    """Write `folder/agent.json` for an agent trained under `limits` from `base_model` with
    `pack` (by default the pack whose rules `limits` turns on)."""
    if isinstance(limits, dict):
        limits = Limits.stored(limits)
    if pack is None:
        pack = pack_of_limits(asdict(limits))
    path = Path(folder) / AGENT_SETTINGS_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    settings = AgentSettings(limits, base_model=base_model or None, pack=pack)
    path.write_text(json.dumps(settings.to_dict(), indent=2))
    return path


def adapter_folder(folder: str | Path) -> Path | None:
    """`folder/adapter/` when the agent in `folder` was trained with LoRA, else None."""
    path = Path(folder) / ADAPTER_DIR
    return path if (path / "adapter_config.json").is_file() else None


def read_agent_settings(folder: str | Path) -> AgentSettings | None:
    """The settings saved in `folder`, or None for a folder without them (a base model).
    An agent saved before packs existed is read as it was used: its rules as they then were
    (`Limits.stored`), its pack the one those rules belong to."""
    path = Path(folder) / AGENT_SETTINGS_FILE
    if not path.is_file():
        return None
    data = json.loads(path.read_text())
    limits = Limits.stored(data["limits"])
    return AgentSettings(
        limits=limits,
        system_prompt=data.get("system_prompt", SYSTEM_PROMPT),
        protocol=data.get("protocol", PROTOCOL_VERSION),
        base_model=data.get("base_model") or None,
        pack=data["pack"] if "pack" in data else pack_of_limits(asdict(limits)),
    )
