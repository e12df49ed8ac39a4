"""Packs: what is true of one kind of document only, bundled and opted into per project.

The engine's default path knows no domain: its teacher, its synthesized questions and its
rules of decoding work from the documents and the questions themselves. A pack names the
settings that assume one kind of document (a 10-K's statements, its latest-year-first
tables, its Yes/No questions), each with why it exists and its measured effect (the run
records are in `docs/packs.md`). A run chooses one with `TrainConfig.pack` (`sleuth train
--pack filings`); the pack turns its settings on under any the run sets itself, and the
pack's name is saved with the agent (`agent.json`), whose limits carry its rules of decoding
wherever the agent is used.

Data, names and plain Python only, so that the agent's settings, the trainer and the
platform may all read it without torch. A pack's rules of decoding are modules of its own
(`filings.decoding`, `filings.rows`), which the engines that decode import; so are its
synthesized question kinds (`filings.questions`), which `synthesized_questions` asks first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from engine.documents.chunking import Chunk
from engine.documents.questions import Question
from engine.documents.synthesis import GENERIC_KINDS, READING_KINDS, offline_questions
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
    the synthesized question kinds it adds to the generic ones, made by `questions(chunks,
    n, seed, kinds, **mix)` in the shares `mix(customer's questions)` reads off the
    customer's own."""

    name: str
    label: str
    description: str
    settings: tuple[Setting, ...]
    synthesis_kinds: tuple[str, ...] = ()
    # Patterns a document of the pack's kind shows: two of them, and it looks like one.
    signals: tuple = ()
    questions: Callable[..., list[Question]] | None = None
    mix: Callable[[Sequence[Question]], dict] | None = None

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
        data.get("questions"),
        data.get("mix"),
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


def synthesized_questions(
    name: str,
    chunks: Iterable[Chunk],
    n: int,
    seed: int = 0,
    *,
    kinds: Iterable[str] | None = None,
    asked: Sequence[Question] = (),
    mix: dict | None = None,
) -> list[Question]:
    """Up to n questions with answers from `chunks`, no model: first the kinds of pack
    `name` (none for ""), in the `mix` of shares its kinds take (default: the mix the
    customer's own questions, `asked`, show), then the generic kinds filling what they
    leave: all of n on manuals, papers or articles, and on a pack's documents what its
    kinds do not fill. `kinds` (default `synthesis_kinds(name)`) may add the reading kinds
    or leave some out; one that is neither generic nor the pack's raises ValueError."""
    pack = pack_named(name)
    own_kinds = pack.synthesis_kinds if pack else ()
    kinds = tuple(synthesis_kinds(name) if kinds is None else kinds)
    known = GENERIC_KINDS + READING_KINDS + own_kinds
    unknown = sorted(set(kinds) - set(known))
    if unknown:
        raise ValueError(f"unknown question kinds {unknown}; choose from {list(known)}")
    chunks = list(chunks)
    made: list[Question] = []
    if pack and pack.questions and set(kinds) & set(own_kinds):
        if mix is None:
            mix = pack.mix(asked) if pack.mix else {}
        made = pack.questions(chunks, n, seed, [k for k in kinds if k in own_kinds], **mix)
    generic = [k for k in kinds if k not in own_kinds]
    if generic and len(made) < n:
        made += offline_questions(chunks, n - len(made), seed, generic)
    return made


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
