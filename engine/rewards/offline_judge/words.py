"""Rules on words: the letters an answer is read in, the truth's key words and the share
an answer must say, names and their short forms, lists and their order, ranks, and a verb's
form ("charging" for "charged").
"""

import os
import re
import unicodedata

from engine.rewards import text

# Share of the ground truth's content words an answer must contain to count as correct.
TEXT_RECALL_NEEDED = 0.6


_WHICH = re.compile(r"\b(?:which|who|whom|whose)\b|\bwhat\s+(?:is|was|are|were)\s+the\s+name", re.I)
_JOINS = re.compile(r"\s(?:and|&|then)\s|\s*/\s*[a-z]", re.I)


_ITEM_SEPARATOR = re.compile(r",|;|\s(?:and|or|&)\s", re.I)


def _items(said: str) -> int:
    """How many items a text lists: "milk, peanuts and soy" three, "milk and peanuts" two;
    what a relative clause then says of them is not more items."""
    listed = _RELATIVE.split(said, maxsplit=1)[0]
    return len([part for part in _ITEM_SEPARATOR.split(listed) if part.strip()])


_RELATIVE = re.compile(r",?\s\b(?:which|that|who|whose|because|per|as)\b", re.I)


_SUBSCRIPTS = str.maketrans("₀₁₂₃₄₅₆₇₈₉", "0123456789")
_SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")
_POWER = re.compile(r"(?<=\d)([⁻]?[⁰¹²³⁴⁵⁶⁷⁸⁹]+)")


_PLUS_OR_MINUS = re.compile(r"\bplus\s+or\s+minus\s+", re.I)


# An acronym and the words it stands for: "AGL" is "above ground level", "US" "United
# States", "TUE" "Therapeutic Use Exemption"; the small words between are skipped ("BLS",
# "Bureau of Labor Statistics"). Capitals only, so that "it" and "us" stay words.
_ACRONYM = re.compile(r"\b[A-Z]{2,6}\b")
_WORD = re.compile(r"[A-Za-z][\w'’-]*")
_SKIPPED_IN_ACRONYMS = frozenset(["of", "and", "the", "for", "&", "in", "on", "to"])


def _spelled_out(acronym: str, said: str) -> str | None:
    """The words of `said` whose initials spell `acronym`, as written; None if none do."""
    words = list(_WORD.finditer(said))
    for i, first in enumerate(words):
        if first.group(0)[0].lower() != acronym[0].lower():
            continue
        letters, j = "", i
        while j < len(words) and len(letters) < len(acronym):
            if j > i and said[words[j - 1].end() : words[j].start()].strip():
                break  # words of one name, not across a comma ("Eastern, two")
            word = words[j].group(0)
            if letters and word.lower() in _SKIPPED_IN_ACRONYMS:
                j += 1
                continue
            if word[0].lower() != acronym[len(letters)].lower():
                break
            letters, j = letters + word[0], j + 1
        if len(letters) == len(acronym):
            return said[first.start() : words[j - 1].end()]
    return None


def _acronyms_spelled(said: str, other: str) -> str:
    """`said` (an answer) with each acronym that `other` (its truth) spells out in words
    written as those words, so that both are read alike: an answer may shorten what the
    truth spells out. (Not the other way: a truth's "GT" spelled from an answer's words
    would read "per gross tonne" of another case as the truth's own words.)"""

    def spell(found: re.Match) -> str:
        acronym = found.group(0)
        if re.search(rf"\b{acronym}\b", other) or not text.content_terms(acronym):
            return acronym  # the other side writes it too, or it is a word ("IT", "NO")
        return _spelled_out(acronym, other) or acronym

    return _ACRONYM.sub(spell, said)


def _plain_letters(said: str | None) -> str:
    """Letters without their accents, subscript digits as digits and a power in superscript
    as one written with "^": "García Márquez" is "Garcia Marquez", "H₂SO₄" "H2SO4", "10²³"
    "10^23"."""
    said = _PLUS_OR_MINUS.sub("±", said or "")  # "plus or minus 0.8 percent" is "±0.8%"
    said = said.replace("\u2212", "-")  # the minus sign, as a hyphen writes it: "−30 °C"
    said = _POWER.sub(lambda m: "^" + m.group(1).translate(_SUPERSCRIPTS), said)
    decomposed = unicodedata.normalize("NFD", said.translate(_SUBSCRIPTS))
    return unicodedata.normalize(
        "NFC", "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    )


# Words that say "about" ("the proposal regarding a report" for "the proposal for a report").
_ABOUT = text.content_terms("regarding concerning relating pertaining respecting")


_ORDINAL = re.compile(
    r"\b(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|\d+(?:st|nd|rd|th))\b",
    re.I,
)


_ORDINAL_WORDS = "first second third fourth fifth sixth seventh eighth ninth tenth".split()


_RANKED = re.compile(_ORDINAL.pattern + r"[\s-]+([a-z]{3,})", re.I)


# A superlative the question ranks by an ordinal: "second-largest", "third most valuable".
_RANKED_SUPERLATIVE = re.compile(
    r"\b(?:second|third|fourth|fifth|\d+(?:nd|rd|th))[\s-]+((?:most|least)\s+[a-z]+|[a-z]+est)\b",
    re.I,
)


def _called_first(question: str, truth: str, answer: str) -> str:
    """The superlative the answer gives the truth plainly ("Walmart was the largest") where
    the question asks for one ranked lower ("second-largest"): it calls it the first; else
    ""."""
    name = re.escape(truth.strip(" .").strip())
    for found in _RANKED_SUPERLATIVE.finditer(question or ""):
        word = re.escape(found.group(1))
        said = re.search(
            rf"\b{name}\s+(?:was|is|were|are|remains|remained|became)\s+(?:the|its|their)\s+{word}\b",
            answer or "",
            re.I,
        )
        if name and said:
            return said.group(0)
    return ""


def _ranks(said: str) -> dict[str, int]:
    """The ordinals a text writes with the word they rank, by that word's stem: "second
    priority" and "2nd priority" are {"prioriti": 2}; "the first in 2015" ranks nothing."""
    ranks = {}
    for found in _RANKED.finditer(said or ""):
        word = re.split(r"[\s-]", found.group(0))[0].lower()
        rank = _ORDINAL_WORDS.index(word) + 1 if word in _ORDINAL_WORDS else int(word[:-2])
        ranks.setdefault(text.stem(found.group(1)), rank)
    return ranks


def _first_clause_end(said: str) -> int:
    """Where a truth's first clause ends: "Nitrogen, about 78%" answers "Nitrogen"."""
    found = re.search(r",\s|;|\.\s|\s\(", said)
    return found.start() if found else len(said)


# A state said in a few words ("Fully charged", "The battery is charging.") is the text
# whose form of a verb says which state.
ASPECT_WORDS = 6
_ING_OR_ED = re.compile(r"\b[a-z]+(?:ing|ed)\b", re.I)


def _aspect_changed(truth: str, answer: str) -> tuple[str, str] | None:
    """A word of the answer ending in "-ing" where the truth has the same stem ending in
    "-ed", or the other way round ("charging" for "charged"); rises and falls aside, whose
    form says nothing of their direction."""

    def forms(said: str) -> dict[str, dict[bool, str]]:
        """stem -> {progressive?: the word as written}"""
        found: dict[str, dict[bool, str]] = {}
        for word in _ING_OR_ED.findall(said):
            stem = text.stem(word)
            if stem not in text.UP | text.DOWN:
                found.setdefault(stem, {})[word.lower().endswith("ing")] = word
        return found

    if max(len(truth.split()), len(answer.split())) > ASPECT_WORDS:
        return None  # a longer sentence tells its events in any form ("delayed, arriving")
    truth_forms = forms(truth)
    for stem, written in forms(answer).items():
        theirs = truth_forms.get(stem, {})
        if theirs and not set(written) & set(theirs):
            return next(iter(written.values())), next(iter(theirs.values()))
    return None


def _unlike(own: set[str], missing: set[str]) -> set[str]:
    """The answer's own terms that are not another form of a missing truth term: "receipt"
    for "receiving", "power" for "pow" share a root the stemmer keeps apart: all of the
    shorter term but its last two letters, and three letters at least ("transport" and
    "transfer" share only a prefix)."""

    def kin(a: str, b: str) -> bool:
        shared = len(os.path.commonprefix([a, b]))
        return shared >= max(3, min(len(a), len(b)) - 2)

    return {term for term in own if not any(kin(term, gone) for gone in missing)}


# A question that asks for a sequence, whose truth's items are answered in their order.
_ASKS_ORDER = re.compile(
    r"\b(?:in\s+(?:what|which)\s+order|what\s+order|what\s+sequence|in\s+order(?!\s+to\b)"
    r"|what\s+are\s+the\s+steps)\b",
    re.I,
)
_ORDER_WORDS = text.content_terms("first then next finally last lastly one after")
_ORDER_SAID = re.compile(r"\b(?:first|then|next|finally|last|lastly|after\s+that)\b", re.I)


def _out_of_order(case) -> bool:
    """Whether an answer to "In what order…?" names the truth's items in another order."""
    if not _ASKS_ORDER.search(case.question):
        return False
    items = [i for i in re.split(r",|\band\b|\bthen\b|;|→|->", case.truth) if i.strip()]
    if len(items) < 2:
        return False
    said = [text.stem(w) for w in text.words(case.answer)]
    every = [text.content_terms(item) - case.question_terms for item in items]
    places = []
    for terms in every:
        # An item by its own words: "replace the cover" not by the "cover" it shares.
        others = set().union(*(other for other in every if other is not terms))
        terms = (terms - others) or terms
        found = [said.index(t) for t in terms if t in said]
        if not found:
            return False  # an item left out is judged as words
        places.append(min(found))
    return places != sorted(places)


def _proper_names(said: str) -> set[str]:
    """Names a text writes, less a plain word capitalised only because it opens the text
    ("Thermal runaway on the hot end" names nothing; "Dr Leila Haddad" does)."""
    first = re.match(r"\W*([A-Z][a-z]+)\b", said or "")
    opener = text.content_terms(first.group(1)) if first else set()
    rest = said[first.end() :] if first else said
    return (text.names(said) - opener) | (text.names(rest) & opener)


def _short_name(case, truth_terms: set[str], answer: str, extra: bool) -> bool:
    """Whether the answer calls the truth's name by its last word, the one it is known by
    ("Austen" for "Jane Austen"): the truth is a name (its own words capitalised), and the
    answer says its last word, with no words of its own or, when it has some, with no other
    name before that word ("Fleming discovered it in 1928", not "Ian Fleming")."""
    written = [w for w in _WORD_WRITTEN.findall(case.truth) if text.content_terms(w) & truth_terms]
    if not written or not all(w[0].isupper() for w in written):
        return False
    last = text.content_terms(written[-1])
    said = _WORD_WRITTEN.findall(answer)
    spots = [i for i, w in enumerate(said) if text.content_terms(w) & last]
    if not spots:
        return False
    if not extra:
        return True
    before = said[spots[0] - 1] if spots[0] else ""
    return not before or not before[0].isupper() or bool(text.content_terms(before) & truth_terms)


_WORD_WRITTEN = re.compile(r"[A-Za-z][\w'’.-]*")


# A truth that is a list of three or more short items, "A, B and C": each item is part of
# the answer. Word recall alone credits most of a list, and nothing of an item written as a
# symbol ("match, case and _").
# "What are the two reportable segments", "Which three vaccines": the number of things asked.
_COUNT_ASKED = re.compile(
    r"(?:\b(?:which|what|name|list|the|its|their)|'s?)\s+(?:are\s+the\s+|were\s+the\s+)?"
    r"(two|three|four|five|2|3|4|5)"
    r"\s+(?!times?\b|of\b)[a-z]",
    re.I,
)
_COUNT_WORDS = {"two": 2, "three": 3, "four": 4, "five": 5}


def _count_asked(question: str) -> int:
    """How many things the question asks for by number ("its two segments"), else 0."""
    found = _COUNT_ASKED.search(question or "")
    if not found:
        return 0
    word = found.group(1).lower()
    return int(word) if word.isdigit() else _COUNT_WORDS[word]


_LISTED = re.compile(r"^\s*([^,;.:]+(?:,[^,;.:]+)+?),?\s+and\s+([^,;.:]+?)\s*\.?\s*$", re.I)
# Four items or more by commas alone, each of three words at most and none opening with an
# article: "Gluten, eggs, fish, milk, mustard" (not a place and its regions, "Stratford-upon-
# Avon, Warwickshire, England", nor a name and its apposition, "HMS Victory, a first-rate ship").
_COMMA_LISTED = re.compile(
    r"^\s*((?!(?:a|an|the|now)\s)[^,;.:\s]+(?:\s+[^,;.:\s]+){0,2}"
    r"(?:,\s*(?!(?:a|an|the|now)\s)[^,;.:\s]+(?:\s+[^,;.:\s]+){0,2}){3,})\s*\.?\s*$",
    re.I,
)
# "Both the Up and Down Main lines": two items, whatever the question counts.
_BOTH = re.compile(
    r"^\s*both\s+(?:the\s+)?(?!.*\b(?:is|are|was|were|have|has|had|can|may|must)\b)"
    r"([^,;.:]+?)\s+and\s+([^,;.:]+?)\s*\.?\s*$",
    re.I,
)
LIST_ITEM_WORDS = 6


def _items_unsaid(truth: str, said: str, said_terms: set[str], count: int = 0) -> list[str]:
    """The items of a listed truth that `said` (whose key words are `said_terms`) leaves
    out: an item of words is said by any of its words, an item with none (a symbol) by the
    symbol standing alone. Where the question asks for `count` things, a truth of that many
    parts by commas and "and" is a list ("Meals & Beverages and Snacks" of two segments)."""
    listed = _LISTED.match(truth)
    parts = [
        p.strip() for p in re.split(r",\s*(?:and\s+)?|\s+and\s+", truth.strip(" .")) if p.strip()
    ]
    if listed:
        items = [item.strip() for item in listed.group(1).split(",")] + [listed.group(2).strip()]
    elif listed := _COMMA_LISTED.match(truth):
        items = [item.strip() for item in listed.group(1).split(",")]
    elif listed := _BOTH.match(truth):
        items = [listed.group(1).strip(), listed.group(2).strip()]
    elif count >= 2 and len(parts) == count:
        items = parts
    else:
        return []
    if any(not item or len(item.split()) > LIST_ITEM_WORDS for item in items):
        return []
    unsaid = []
    every = [text.content_terms(item) for item in items]
    for item, words in zip(items, every, strict=True):
        # An item is said by a word of its own: "credit card" not by the "card" it shares
        # with "debit card".
        others = set().union(*(w for w in every if w is not words))
        words = (words - others) or words
        if words:
            if not words & said_terms:
                unsaid.append(item)
        elif not re.search(
            rf"(?<![\w{re.escape(item)}]){re.escape(item)}(?![\w{re.escape(item)}])", said
        ):
            unsaid.append(item)
    return unsaid


def _recall(wanted: set[str], said: set[str]) -> float:
    return len(wanted & said) / len(wanted) if wanted else 0.0
