"""One downloadable archive of a published folder."""

import tarfile
from pathlib import Path


def make_archive(folder: str | Path, archive: str | Path) -> Path:
    """Pack `folder` as a gzipped tar whose single top-level entry is the folder's name."""
    folder, archive = Path(folder), Path(archive)
    archive.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(folder, arcname=folder.name)
    return archive
