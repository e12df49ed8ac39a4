"""Settings as JSON and back, for every settings dataclass of the engine (a run's
TrainConfig with its loss, limits and reward, the reward's judge).

One reader for all of them: nested dataclass fields are read field by field, an unknown
name is refused with the names that are known, and a class may list the names its older
versions stored (`LEGACY_SETTINGS`) to be ignored, so stored runs keep loading.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, TypeVar

T = TypeVar("T")


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
