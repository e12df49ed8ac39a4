"""The filings pack's habits of the scripted teacher (`training.teacher.ScriptedTeacher`),
which the teacher asks behind its switches `scope_years` and `statement_names`: what a teacher
should write on annual and quarterly reports only. Their measured effects are in
docs/packs.md ("scope-years", "statement-names")."""

import re

from engine.packs.filings.names import STATEMENT_NAMES, statement_readings
from engine.search.index import tokenize

_YEAR = re.compile(r"(?:19|20)\d{2}")
# A financial statement's name as a question writes it: "the P&L statement", "statements of
# financial position" (`STATEMENT_NAMES`), a plural or a trailing "statement" included.
_STATEMENT_NAMED = re.compile(
    r"\b(?:"
    + "|".join(
        r"\s+".join(re.escape(word) + ("s?" if word.isalpha() else "") for word in name.split())
        for names in STATEMENT_NAMES
        for name in names
    )
    + r")(?:\s+statements?)?(?!\w)",
    re.IGNORECASE,
)


def latest_year(question: str) -> list[str]:
    """The latest year `question` names, alone in a list (none: empty): a filing reports its
    year beside earlier ones, so "between FY2021 and FY2022" is read in the FY2022 filing,
    and a scope naming that year searches it."""
    years = _YEAR.findall(question)
    return [max(years)] if years else []


def statement_named(question: str, held: set[str]) -> tuple[list[str], frozenset[str]] | None:
    """A financial statement `question` names by a name a page heading's stems `held` may
    not hold ("the P&L statement" for "Consolidated Statements of Income"), as written and
    lowercased, with the reading of it (the statement's name the heading gives) that `held`
    holds; None when it names none that `held` holds by any name. The search tool's page
    filter reads the name as any of the statement's names."""
    for name in _STATEMENT_NAMED.finditer(question):
        for reading in statement_readings(tokenize(name[0])):
            if reading <= held:
                return name[0].lower().split(), reading
    return None
