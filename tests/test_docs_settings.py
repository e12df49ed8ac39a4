"""Every environment variable the settings read has a line in docs/operations.md."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_setting_read_from_the_environment_is_documented():
    read = set()
    for path in (ROOT / "platform" / "config" / "settings").glob("*.py"):
        read |= set(
            re.findall(r"""env(?:\.\w+)?\(\s*["']([A-Z][A-Z0-9_]+)["']""", path.read_text())
        )
    documented = set(
        re.findall(r"`([A-Z][A-Z0-9_]+)`", (ROOT / "docs" / "operations.md").read_text())
    )

    assert len(read) > 40  # the pattern still finds them
    assert sorted(read - documented) == []
