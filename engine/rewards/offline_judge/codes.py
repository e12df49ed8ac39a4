"""Rules on codes and formats: a code's shape ("hf-2047" is "a-9"), the labels of a
document's parts ("Section 9.10", "Band A"), command-line options, names written as one token
("ALLOWED_HOSTS", "/etc/hosts") and forms joined by slashes ("DD/MM/YYYY").
"""

import re

from engine.rewards import quantities, text


def _shape(code: str) -> str:
    """A code's shape: "hf2047" is "a9", "eu-west-1a" "a-a-9a", "2.1" "9.9"."""
    return re.sub(r"[a-z]+", "a", re.sub(r"\d+", "9", code))


# A format written in letters each repeated: "DD/MM/YYYY", "hh/mm" (not "red/white").
_JOINED_PARTS = re.compile(r"\b(?:([A-Za-z])\1*)(?:/(?:([A-Za-z])\2*))+\b")


def _parts_reordered(case) -> bool:
    """Whether the answer writes a form the truth joins by slashes with its parts in another
    order: "MM/DD/YYYY" for "DD/MM/YYYY" is another format."""
    truth = {tuple(t.group(0).lower().split("/")) for t in _JOINED_PARTS.finditer(case.truth_text)}
    said = {tuple(t.group(0).lower().split("/")) for t in _JOINED_PARTS.finditer(case.answer_text)}
    return any(
        sorted(mine) == sorted(theirs) and mine != theirs and mine not in truth
        for mine in said
        for theirs in truth
    )


# A number that labels a part of a document or a release: said as written.
_LABEL_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)*[a-z]?(?![\w]|\.\d)", re.I)
_LABEL = re.compile(
    r"(?:\b(?:sections?|sec\.|articles?|art\.|clauses?|rules?|chapters?|parts?|paragraphs?|para\."
    r"|items?|tables?|figures?|fig\.|versions?|releases?|appendix|schedules?|annex|regulations?)"
    r"\s*|§\s*)(\d+(?:\.\d+)*[a-z]?)(?![\w]|\.\d)",
    re.I,
)


# A letter that names a thing after its kind ("Band A", "Zone B", "Grade B+"); not "I".
# A letter that names a thing after its kind ("Band A", "Zone B", "Grade B+"); not "I",
# nor a middle initial ("John F. Kennedy", "Harry S Truman").
_LETTER_LABEL = re.compile(r"\b([A-Z][a-z]{2,})\s+((?!I\b)[A-Z][+-]?)(?![\w+-])(?!\.?\s+[A-Z])")
# After a kind's own word, a label whatever follows it: "Type B RCD", "Class A fire".
_KIND_LETTER = re.compile(
    r"\b(Type|Class|Category|Grade|Band|Zone|Group|Tier|Level|Schedule|Plan|Option|Phase"
    r"|Stage|Form|Model|Part|Annex|Appendix|Exhibit|Lot|Size|Block|Gate|Terminal|Platform)"
    r"\s+((?!I\b)[A-Z][+-]?)(?![\w+-])"
)


def _letter_labels(said: str) -> list[tuple[str, str]]:
    """The (kind, letter) labels a text writes: "Band A", "Type B RCD"; an "A" after a word
    that opens a sentence is an article ("Block A Caller", "Plan A Route")."""
    kinds = [
        (m.group(1), m.group(2))
        for m in _KIND_LETTER.finditer(said)
        if m.group(2) != "A" or not _OPENS.search(said[: m.start()])
    ]
    return list(dict.fromkeys(_LETTER_LABEL.findall(said) + kinds))


_OPENS = re.compile(r"(?:^|[.!?:;]\s*)\W*$")


def _labels(said: str) -> set[str]:
    letters = {label.upper() for _, label in _letter_labels(said or "")}
    return {_unpadded(label).lower() for label in _LABEL.findall(said or "")} | letters


def _said_labels(answer: str, truth: str) -> set[str]:
    """The labels an answer gives, as `_labels` reads them: numbers as written or in words
    ("Part Two"), any case ("Item 1a"), and a truth's letters after their kind in any case
    or alone ("hepatitis-B", "vitamin a", "B")."""
    numbers = {
        _unpadded(n).lower() for n in _LABEL_NUMBER.findall(quantities.words_to_digits(answer))
    }
    letters = set(re.findall(r"(?<![\w+])[A-Z][+-]?(?![\w+-])", answer))
    for kind, letter in _letter_labels(truth or ""):
        if re.search(rf"\b{kind}[\s-]+{re.escape(letter)}(?![\w+-])", answer, re.I):
            letters.add(letter.upper())
    return numbers | letters


def _unpadded(label: str) -> str:
    """ "09" as "9", "4.02" as "4.2": zeros that pad a part say nothing ("9.10" stays)."""
    return ".".join(part.lstrip("0") or "0" for part in label.split("."))


def _options(said: str) -> set[str]:
    """Command-line options as written, short and long ("-i", "--delete")."""
    return text.flags(said) | {name for name in _identifiers(said) if name.startswith("--")}


# A name written as one token: with an underscore ("__init__", "ALLOWED_HOSTS"), or dotted
# parts of two characters or more ("object.__getattr__", "http.timeout"; not "U.S." or "e.g."),
# a long option ("--force") or a path ("/etc/nginx/nginx.conf", "~/.bashrc").
_IDENTIFIER = re.compile(
    r"(?<![\w.])(?:\w*_\w*|[A-Za-z_]\w+(?:\.[A-Za-z_]\w+)+)(?![\w])"
    r"|(?<![\w-])--[A-Za-z][\w-]*"
    r"|(?<![\w/])(?:~|\.{1,2})?/[\w.-]+(?:/[\w.-]+)+|(?<![\w/])~/[\w.-]+"
)


def _identifiers(said: str) -> set[str]:
    """The names written as one token in `said`, lower-cased, with at least one letter."""
    return {
        m.group().lower().rstrip(".")  # a sentence's full stop after a path is not the path's
        for m in _IDENTIFIER.finditer(said or "")
        if any(ch.isalpha() for ch in m.group())
    }


# Versions written one after another with nothing but separators: "2.1.0, 2.3.0 and 3.0.0".
_VERSION = r"\d+\.\d+\.\d+(?:\.\d+)?"  # "2.3.0": a decimal's list is a table row's
_VERSIONS_LISTED = re.compile(
    rf"(?<![\w.]){_VERSION}(?:\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+){_VERSION}"
)


def _versions_listed(answer: str, truth: str) -> bool:
    """Whether the answer lists two or more versions side by side where the truth names one."""
    return bool(_VERSIONS_LISTED.search(answer)) and len(re.findall(_VERSION, truth)) == 1
