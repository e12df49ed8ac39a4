"""Publishing: a trained checkpoint as a folder a customer can download and run.

`publish_folder` writes the Hugging Face model files, a model card (README.md) and an
agent bundle (the BM25 index plus a standalone script); `make_archive` packs it as one
.tar.gz. No Django here: the platform uploads the folder and the archive to S3.
"""

from engine.publishing.archive import make_archive
from engine.publishing.publish import PublishInfo, publish_folder

__all__ = ["PublishInfo", "make_archive", "publish_folder"]
