"""Packs: what is true of one kind of document only, bundled and opted into per project.

The engine's default path knows no domain: its teacher, its synthesized questions and its
rules of decoding work from the documents and the questions themselves. A pack names the
settings that assume one kind of document (a 10-K's statements, its latest-year-first
tables, its Yes/No questions), each with why it exists and its measured effect (the run
records are in `docs/packs.md`). A run chooses one with `TrainConfig.pack` (`sleuth train
--pack filings`); the pack turns its settings on under any the run sets itself, and the
pack's name is saved with the agent (`agent.json`), whose limits carry its rules of decoding
wherever the agent is used.

Data and names only (the question kinds are the synthesizer's), so that the agent's
settings, the trainer and the platform may all read it without torch. A pack's rules of
decoding are modules of its own (`filings.decoding`, `filings.rows`), which the engines that
decode import.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from engine.documents.synthesis import GENERIC_KINDS
from engine.packs.filings import FILINGS


@dataclass(frozen=True)
class Setting:
    """One setting a pack turns on: where it lives (a TrainConfig field, "limits.…" for a
    rule of decoding), why it exists, and what it was measured to do (see docs/packs.md).
    A switch (`value` True) holds of the pack's kind of document only: no run outside the
    pack may turn it on. A setting of another value (a number of drills), or one marked not
    `exclusive` (a rule written for any documents that earned its place on this kind only),
    is the pack's choice of a setting any run may make."""

    path: str
    why: str
    effect: str
    value: object = True
    # Whether only the pack may turn it on; by default a switch (True) is, a number is not.
    exclusive: bool | None = None

    @property
    def switch(self) -> bool:
        """A setting no run outside the pack may turn on."""
        return self.value is True if self.exclusive is None else self.exclusive


@dataclass(frozen=True)
class Pack:
    """A named bundle of settings true of one kind of document only. `synthesis_kinds`:
    the synthesized question kinds it adds to the generic ones."""

    name: str
    label: str
    description: str
    settings: tuple[Setting, ...]
    synthesis_kinds: tuple[str, ...] = ()
    # Patterns a document of the pack's kind shows: two of them, and it looks like one.
    signals: tuple = ()

    def overrides(self) -> dict:
        """The pack's settings as TrainConfig overrides, nested as in `TrainConfig.to_dict`."""
        data: dict = {}
        for setting in self.settings:
            *parents, leaf = setting.path.split(".")
            node = data
            for parent in parents:
                node = node.setdefault(parent, {})
            node[leaf] = setting.value
        return data

    def limits(self) -> frozenset[str]:
        """The `Limits` switches (rules of decoding) the pack turns on."""
        return frozenset(
            s.path.removeprefix("limits.")
            for s in self.settings
            if s.switch and s.path.startswith("limits.")
        )

    def teacher(self) -> frozenset[str]:
        """The TrainConfig switches (teacher and cold start) the pack turns on."""
        return frozenset(s.path for s in self.settings if s.switch and "." not in s.path)


def _pack(data: dict) -> Pack:
    settings = tuple(Setting(path, *about) for path, about in data["settings"].items())
    return Pack(
        data["name"],
        data["label"],
        data["description"],
        settings,
        tuple(data.get("synthesis_kinds", ())),
        tuple(data.get("signals", ())),
    )


PACKS: dict[str, Pack] = {pack.name: pack for pack in (_pack(FILINGS),)}
NO_PACK = ""


class UnknownPack(ValueError):
    """A pack name that is not in PACKS."""


def pack_named(name: str) -> Pack | None:
    """The pack called `name`; None for "" (no pack). Unknown names raise UnknownPack."""
    if name == NO_PACK:
        return None
    if name not in PACKS:
        raise UnknownPack(f'unknown pack {name!r}; choose one of {", ".join(PACKS)} (or none: "")')
    return PACKS[name]


def check_pack(name: str) -> None:
    """Raise UnknownPack unless `name` names a pack or none."""
    pack_named(name)


def pack_limits() -> dict[str, str]:
    """Every rule of decoding some pack turns on, with the pack's name."""
    return {rule: pack.name for pack in PACKS.values() for rule in pack.limits()}


def pack_teacher() -> dict[str, str]:
    """Every teacher setting some pack turns on, with the pack's name."""
    return {path: pack.name for pack in PACKS.values() for path in pack.teacher()}


def pack_of_limits(limits: dict) -> str:
    """The pack whose rules of decoding `limits` (as stored) turns on: how an agent saved
    before packs existed is read (every such rule was the filings pack's); "" for none."""
    on = {rule for rule, value in limits.items() if value is True}
    return next((pack.name for pack in PACKS.values() if pack.limits() & on), NO_PACK)


def pack_of_settings(config: dict) -> str:
    """The pack a run's settings (as stored, `TrainConfig.to_dict`) turn on, by its rules of
    decoding or its teacher settings; "" for none."""
    on = {path for path, value in config.items() if value is True}
    found = pack_of_limits(config.get("limits") or {})
    return found or next((pack.name for pack in PACKS.values() if pack.teacher() & on), NO_PACK)


def synthesis_kinds(name: str) -> tuple[str, ...]:
    """The question kinds a run with pack `name` synthesizes: the generic ones, then its
    pack's."""
    pack = pack_named(name)
    return GENERIC_KINDS + (pack.synthesis_kinds if pack else ())


SIGNALS_A_DOCUMENT_SHOWS = 2  # one alone ("balance sheet", "fiscal year") is a word, not a kind


def suggested_pack(documents: Iterable[str]) -> str:
    """The pack to offer for a project whose documents' texts are `documents` (a few pages
    of each suffice): one whose kind at least half of them look like, by showing two of its
    signals; "" for none. An offer, never a choice: the customer decides."""
    texts = list(documents)
    for pack in PACKS.values():
        alike = sum(
            sum(bool(signal.search(text)) for signal in pack.signals) >= SIGNALS_A_DOCUMENT_SHOWS
            for text in texts
        )
        if texts and pack.signals and alike >= len(texts) / 2:
            return pack.name
    return NO_PACK
