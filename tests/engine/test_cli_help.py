"""`sleuth --help` and every subcommand's `--help` print, as a new user's first commands.

argparse %-formats each help string when it prints it, so a bare "95 % intervals" in one
subcommand's help broke the top-level help alone, where no subcommand's own test looks."""

import argparse

import pytest

from engine.cli import build_parser


def _subcommands() -> list[str]:
    (action,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return sorted(action.choices)


def test_the_top_level_help_lists_every_subcommand(capsys):
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(["--help"])
    assert exit_.value.code == 0
    shown = capsys.readouterr().out
    for name in _subcommands():
        assert name in shown
    assert "95 % intervals" in shown  # compare's help, %-escaped


@pytest.mark.parametrize("name", _subcommands())
def test_each_subcommand_prints_its_help(name, capsys):
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args([name, "--help"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: sleuth {name}")
