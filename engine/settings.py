"""Settings as JSON and back, for every settings dataclass of the engine (a run's
TrainConfig with its loss, limits and reward, the reward's judge), and as command-line flags.

One reader for all of them: nested dataclass fields are read field by field, an unknown
name is refused with the names that are known, and a class may list the names its older
versions stored (`LEGACY_SETTINGS`) to be ignored, or map what they stored to today's
settings (`upgrade_settings(data) -> data`), so stored runs keep loading.

A field declared with `option(default, help=…)` is one a command line may set: its flag,
type and help come from the field itself (`command_line_options`), so a setting is written
once, where it is defined, and `sleuth train` offers every such field of a run's settings.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, TypeVar

T = TypeVar("T")


def option(default: Any, *, help: str, flag: str | None = None) -> Any:
    """A settings field a command line may set: `help` says what it does, and its flag is
    the field's name (`--max-turns` for `max_turns`) unless `flag` names another."""
    return dataclasses.field(default=default, metadata={"help": help, "flag": flag})


@dataclasses.dataclass(frozen=True)
class CommandLineOption:
    """One `option` field as a flag: `path` is where it lives ("limits.max_turns"), `kind`
    its plain type (int, float, str or bool) and `choices` the values a Literal allows."""

    flag: str
    path: str
    kind: type
    help: str
    choices: tuple | None = None


def command_line_options(cls: type, prefix: str = "") -> list[CommandLineOption]:
    """Every `option` field of `cls` and of the settings nested in it, in field order."""
    hints = typing.get_type_hints(cls)
    options: list[CommandLineOption] = []
    for f in dataclasses.fields(cls):
        if nested := _settings_class(hints[f.name]):
            options += command_line_options(nested, f"{prefix}{f.name}.")
        elif "help" in f.metadata:
            kind, choices = _plain_type(hints[f.name])
            flag = f.metadata["flag"] or "--" + f.name.replace("_", "-")
            options.append(
                CommandLineOption(flag, prefix + f.name, kind, f.metadata["help"], choices)
            )
    return options


def _plain_type(hint) -> tuple[type, tuple | None]:
    """`int | None` -> (int, None); `Literal["a", "b"]` -> (str, ("a", "b"))."""
    if typing.get_origin(hint) is typing.Literal:
        values = typing.get_args(hint)
        return type(values[0]), values
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        return _plain_type(next(arg for arg in typing.get_args(hint) if arg is not type(None)))
    return hint, None


class Settings:
    """Base of the settings dataclasses: `to_dict()` and `from_dict(data)` in one place."""

    def to_dict(self) -> dict[str, Any]:
        return settings_to_dict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]):
        """The settings as stored (older versions' too); unknown names are refused."""
        return settings_from_dict(cls, data)


def settings_to_dict(settings: Any) -> dict[str, Any]:
    """Plain JSON-ready data, nested settings included."""
    return dataclasses.asdict(settings)


def settings_from_dict(cls: type[T], data: dict[str, Any]) -> T:
    """`cls` from `data` as `settings_to_dict` wrote it (or an older version did)."""
    if not isinstance(data, dict):
        raise ValueError(f"{cls.__name__} settings must be an object, not {type(data).__name__}")
    label = getattr(cls, "SETTINGS_LABEL", cls.__name__)
    legacy = getattr(cls, "LEGACY_SETTINGS", frozenset())
    if upgrade := getattr(cls, "upgrade_settings", None):  # older versions' meanings, mapped
        data = upgrade(data)
    data = {key: value for key, value in data.items() if key not in legacy}
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ValueError(f"unknown {label} settings {unknown}; known: {sorted(fields)}")
    hints = typing.get_type_hints(cls)
    values = {}
    for name, value in data.items():
        nested = _settings_class(hints[name])
        values[name] = settings_from_dict(nested, value) if nested and value is not None else value
    return cls(**values)


def _settings_class(hint) -> type | None:
    """The dataclass a field holds, if any (`JudgeConfig | None` holds JudgeConfig)."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        found = [_settings_class(arg) for arg in typing.get_args(hint)]
        return next((cls for cls in found if cls), None)
    return hint if dataclasses.is_dataclass(hint) else None
