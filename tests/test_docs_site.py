"""The documentation site builds, strict: a broken link, a missing anchor or a page left out
of the nav fails the suite (`make docs` builds the same site into var/site)."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_docs_site_builds_with_no_broken_link_or_stray_page(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=300,
    )

    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "index.html").exists() and (tmp_path / "security" / "index.html").exists()
