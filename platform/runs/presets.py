"""Run presets live in the engine (`engine.training.presets`), one source for the web form
and `sleuth train --preset`; the web side reads them from here."""

from engine.training.presets import (
    DEFAULT_PRESET,
    PRESETS,
    UnknownPreset,
    preset_config,
    preset_needs,
)

__all__ = ["DEFAULT_PRESET", "PRESETS", "UnknownPreset", "preset_config", "preset_needs"]
