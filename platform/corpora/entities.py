"""The entity a document is about (a company, a product...), guessed from its file name.

Entities keep the train/validation split honest: no entity has questions on both sides.
"""

import re
from pathlib import PurePath

# Words that start the descriptive part of a file name ("3M_2018_10K" -> entity "3M").
# The same rule as the engine's corpus builder, so the web and the CLI agree.
_PERIOD_OR_FORM = re.compile(
    r"^(?:(?:19|20)\d\d.*|fy\d+.*|q[1-4].*|10-?[kq].*|8-?k.*|20-?f.*|annual|quarterly|"
    r"earnings|report|filing|dated.*)$",
    re.IGNORECASE,
)


def entity_from_filename(name: str) -> str:
    """ "AMCOR_2023Q4_EARNINGS.pdf" -> "AMCOR"; "Foot Locker 10-K 2022.pdf" -> "Foot Locker"."""
    stem = PurePath(name).stem
    words = [w for w in re.split(r"[_\s]+|(?<=\D)-(?=\D)", stem) if w]
    head: list[str] = []
    for word in words:
        if _PERIOD_OR_FORM.match(word):
            break
        head.append(word)
    return " ".join(head)
