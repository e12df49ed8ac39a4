"""Text checks shared by the offline judge and the reward: words, yes/no, refusals, padding."""

import re
from collections import Counter

import Stemmer

_STEMMER = Stemmer.Stemmer("english")
_STOPWORDS = frozenset(
    """a an the and or but of to in on at by for from with as is are was were be been being
    it its this that these those there their they them he she his her we our you your i
    do does did has have had not no yes than then so such which who whom what when where
    why how into over under about per also both each all any some very can could would
    should may might will shall just only more most less least own same other""".split()
)
_WORD = re.compile(r"[a-z0-9]+(?:[.'][a-z0-9]+)*")
_NUMERIC = re.compile(r"[\d.,]+")

_REFUSAL = re.compile(
    r"can ?not be (?:determined|answered|found|calculated|computed)|can't be determined"
    r"|cannot (?:determine|answer|find|say)|unable to (?:determine|find|answer|locate)"
    r"|(?:not|insufficient) enough information|insufficient (?:information|data)"
    r"|\bi (?:do not|don't) know\b|no (?:relevant )?information"
    r"|not (?:provided|available|mentioned|specified|disclosed|stated) in",
    re.I,
)
_EMOJI = re.compile(
    "[\U0001f000-\U0001faff\u2600-\u27bf\u2b00-\u2bff\ufe0f\u200d\u2190-\u21ff\u2300-\u23ff]"
)
# Kinds of decoration that pad an answer without adding content.
_DECORATIONS = {
    "emoji": _EMOJI,
    "emphasis": re.compile(r"\*\*|__|~~|(?<!\w)\*(?=\w)|`"),
    "heading": re.compile(r"(?m)^\s*#{1,6}\s"),
    "table": re.compile(r"(?m)^\s*\|.*\|\s*$"),
    "shouting": re.compile(r"[!?]{2,}|\b[A-Z]{5,}\b(?:\s+\b[A-Z]{2,}\b){2,}"),
    "rule": re.compile(r"(?m)^\s*(?:-{3,}|\*{3,}|={3,})\s*$"),
}


def words(text: str) -> list[str]:
    """Lower-cased words and numbers of `text`, in order."""
    return _WORD.findall((text or "").lower())


def content_terms(text: str, *, keep_numbers: bool = False) -> set[str]:
    """Stemmed content words of `text`: no stop words, and no numbers unless asked. An
    ordinal is one term however written ("third", "3rd"), and a few words of one meaning
    are one term ("mandatory" and "required")."""
    kept = [
        w
        for w in words(_ORDINAL_FIGURE.sub(_ordinal_word, text or ""))
        if w not in _STOPWORDS and (keep_numbers or not _NUMERIC.fullmatch(w))
    ]
    return {_SAME_MEANING.get(stem, stem) for stem in _STEMMER.stemWords(kept)}


_ORDINAL_WORDS = (
    "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth "
    "thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth twentieth"
).split()
_ORDINAL_FIGURE = re.compile(r"\b(\d+)(?:st|nd|rd|th)\b", re.I)


def _ordinal_word(found: re.Match) -> str:
    """ "13th" as "thirteenth"; past the words known, as written."""
    n = int(found.group(1))
    return _ORDINAL_WORDS[n - 1] if 1 <= n <= len(_ORDINAL_WORDS) else found.group(0)


# Stems of one meaning, mapped to one of them. General words only: a domain's terms are the
# customer's, and a wrong merge credits a wrong answer.
_SAME_MEANING = {
    stem: group[0]
    for group in (
        ("requir", "mandatori", "compulsori", "obligatori"),
        ("prohibit", "forbidden", "forbid", "ban"),
        ("narrow", "shrank", "shrink", "shrunk"),
        ("lower", "reduc"),
        ("befor", "prior"),
        ("global", "worldwid"),
        ("tall", "high"),
        ("work", "busi"),  # working days are business days
    )
    for stem in group
}


# "No more than 8 tablets", "No later than 30 June": a bound, not a "no".
_COMPARED = (
    r"(?:more|less|fewer|greater|higher|lower|later|earlier|sooner|longer|shorter|closer"
    r"|nearer|further|farther|bigger|smaller|heavier|older|younger)\s+than\b"
)
_NO_BOUND = re.compile(rf"\W*no\s+{_COMPARED}", re.I)
# The same anywhere: the words of a bound, which say no answer of their own.
NEGATED_COMPARISON = re.compile(rf"\b(?:no|not)\s+{_COMPARED}", re.I)


def polarity(text: str) -> str | None:
    """ "yes" or "no" when the text opens with one, else None ("No more than 8" bounds)."""
    first = words(text)[:1]
    if first and first[0] in {"yes", "no"} and not _NO_BOUND.match(text or ""):
        return first[0]
    return None


# "increase or decrease", "improved or declined": one word on each side of "or", outside
# brackets ("the most (or lost the least)" offers no choice of two words).
_CHOICE = re.compile(r"(?<![(\w])([a-z]+)\s+or\s+([a-z]+)\b(?![^(]*\))", re.I)


def choice(question: str) -> tuple[str, str] | None:
    """The two options (stemmed) a question offers with "A or B", where it offers two
    content words ("Did wages increase or decrease…?" -> ("increas", "decreas")), else None."""
    for first, second in _CHOICE.findall(question):
        options = [w.lower() for w in (first, second)]
        if any(w in _STOPWORDS for w in options):
            continue
        a, b = _STEMMER.stemWords(options)
        if a != b:
            return a, b
    return None


def chosen(text: str, options: tuple[str, str]) -> set[str]:
    """Which of a choice's stemmed `options` the text says."""
    return set(options) & content_terms(text)


def is_refusal(text: str) -> bool:
    """Whether the text declines to answer ("cannot be determined", "not enough information")."""
    return bool(_REFUSAL.search(text or ""))


def decorations(text: str) -> set[str]:
    """The kinds of padding in `text`: emoji, markdown emphasis, headings, tables, shouting."""
    return {name for name, pattern in _DECORATIONS.items() if pattern.search(text or "")}


def strip_decorations(text: str) -> str:
    """`text` without emoji and markdown markup, for measuring what it actually says."""
    text = _EMOJI.sub(" ", text or "")
    text = re.sub(
        r"\*\*|__|~~|`|^\s*#{1,6}\s|^\s*(?:-{3,}|\*{3,}|={3,})\s*$", " ", text, flags=re.M
    )
    return re.sub(r"\s+", " ", text).strip()


def echoes(answer: str, question: str, threshold: float = 0.8) -> bool:
    """Whether the answer is mostly the question said back (its words are the question's)."""
    answer_terms = content_terms(answer, keep_numbers=True)
    if len(answer_terms) < 4:
        return False
    question_terms = content_terms(question, keep_numbers=True)
    return len(answer_terms & question_terms) / len(answer_terms) >= threshold


# --- what an answer commits to: negation, hedges, direction, loops ----------------------

_NEGATIONS = frozenset(
    "not no never none neither nor cannot can't don't doesn't didn't isn't aren't wasn't "
    "weren't won't hasn't haven't hadn't nothing".split()
)


NEGATIONS = _NEGATIONS


def negated(text: str, ignore: frozenset[str] | set[str] = frozenset()) -> bool:
    """Whether the text says "not" (or no, never, none, …) anywhere, leaving out the words in
    `ignore` (the question's own: "It returns nothing" to "Does it return nothing?" makes
    its claim) and negation words written as a value's name ("returns None", "`null`")."""
    text = _BOUND_OR_ADDITION.sub(" ", (text or "").replace("’", "'"))
    text = _NUMBER_SIGN.sub(" ", text)
    for found in _NEGATION_WORD.finditer(text):
        word = found.group(0).lower()
        if word not in _NEGATIONS or word in ignore:
            continue
        if _is_value_name(text, found.start(), found.end()):
            continue
        return True
    return False


_NEGATION_WORD = re.compile(r"[A-Za-z]+(?:'[a-z]+)?")
# "part no. HF-2045B", "No. 5": the number sign, not a denial.
_NUMBER_SIGN = re.compile(r"\bno\.\s*(?=[A-Z0-9#])", re.I)
# "No later than 30 days", "no more than 8", "not only fire but also theft": a bound or an
# addition, not a denial.
_BOUND_OR_ADDITION = re.compile(
    r"\b(?:no|not)\s+(?:later|earlier|sooner|more|less|fewer|greater|longer)\s+than\b"
    r"|\bnot\s+only\b",
    re.I,
)


def _opens_sentence(text: str, start: int) -> bool:
    """Whether the word at `start` is the first of its sentence (or of the text)."""
    i = start - 1
    while i >= 0 and not text[i].isalnum():
        if text[i] in ".!?:;\n":
            return True
        i -= 1
    return i < 0


def _is_value_name(text: str, start: int, end: int) -> bool:
    """A word written as a name, not as a word: in backticks or quotes, or capitalised in
    the middle of a sentence ("It returns None", not "It is NOT")."""
    before, after = text[start - 1 : start], text[end : end + 1]
    if before and before in "`'\"" and after == before:
        return True
    word = text[start:end]
    return word.istitle() and not _opens_sentence(text, start)


_HEDGE = re.compile(
    r"\b(?:maybe|perhaps|possibly|probably|likely|unlikely|unclear|uncertain|unsure|either"
    r"|presumably|roughly speaking|or so|not sure|i think|i believe|i guess|we think"
    r"|(?:could|might|may) (?:be|have)|somewhere)\b",
    re.I,
)
_BOUNDED = re.compile(
    r"\b(?:at (?:least|most)|(?:more|less|fewer) than)\s+[$€£]?\d"
    # a symbol, not an arrow ("4.5% -> 5.0%") nor a variable's ("p < 0.05")
    r"|(?<![-=])(?<!\b[a-z]\s)(?<!\b[a-z])[<>≤≥]=?\s*[$€£]?\d",
    re.I,
)
# "3 to 6 months", "between 40% and 45%", "206-213"; not "from 982 to 969", a change.
_RANGE = re.compile(
    r"\bbetween\s+\S*\d\S*\s+and\s+\S*\d"
    r"|(?<!from )(?<![\w.,])[$€£]?\d[\d,.]*\s*%?\s*(?:to|–|-)\s*[$€£]?\d",
    re.I,
)


def hedges(text: str, bounds: bool = True) -> bool:
    """Whether the text hedges ("probably", "could be"), offers alternatives ("A or B"), a
    range ("3 to 6") or, with `bounds`, a bound ("at least 3"): none of them commits to one
    answer."""
    text = _ISO_DAY.sub(" ", text or "")
    bounded = bounds and (_BOUNDED.search(text) or _OR_BOUND.search(text))
    text = _OR_BOUND.sub(" ", text)  # "2.3 g or less" bounds; it offers no alternative
    return bool(_HEDGE.search(text) or bounded or _RANGE.search(text) or "or" in words(text))


def hedge_words(text: str) -> bool:
    """Whether the text says it is unsure ("probably", "might be", "I think")."""
    return bool(_HEDGE.search(text or ""))


_OR_BOUND = re.compile(
    r"\bor\s+(?:less|more|fewer|lower|higher|under|over|below|above|older|younger|newer|later"
    r"|earlier)\b",
    re.I,
)


_ISO_DAY = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")


# Words of opposite meaning, in stemmed families. An answer that says one where the truth
# says the other has said the opposite, whatever else it repeats of the truth.
_OPPOSITES = (
    (
        "increas rise rose risen grow grew grown growth gain climb higher up improv expand "
        "upward warmer hotter",
        "decreas declin fall fell fallen drop lower down shrink shrank shrunk reduc lost "
        "loss contract worsen deterior downward outflow minus cooler colder reduct",
    ),
    ("pass approv adopt accept won win", "defeat reject fail lose"),
    ("posit", "negat"),
    ("includ", "exclud"),
    ("allow permit", "prohibit forbid forbidden"),
    ("above", "below"),
    ("enabl", "disabl"),
    ("true", "fals"),
    ("valid", "invalid"),
)
# Comparatives and superlatives of opposite meaning ("largest" against "smallest"), as
# written: the plain adjectives name things as often as they compare them ("long-term").
_COMPARATIVES = (
    ("larger largest bigger biggest greater greatest", "smaller smallest lesser"),
    ("highest maximum", "lowest minimum"),
    ("most", "least fewest"),
    ("faster fastest quicker quickest", "slower slowest"),
    ("longer longest", "shorter shortest"),
    ("taller tallest", "shorter shortest"),
    ("older oldest", "younger youngest newer newest"),
    ("hotter hottest warmer warmest", "colder coldest cooler coolest"),
    ("stronger strongest", "weaker weakest"),
    ("closer closest nearer nearest", "farther farthest furthest"),
    ("heavier heaviest", "lighter lightest"),
    ("earlier earliest", "later latest"),
    ("better best", "worse worst"),
    ("deeper deepest", "shallower shallowest"),
    ("wider widest", "narrower narrowest"),
)
_FAMILIES = [(frozenset(a.split()), frozenset(b.split())) for a, b in _OPPOSITES] + [
    (frozenset(_STEMMER.stemWords(a.split())), frozenset(_STEMMER.stemWords(b.split())))
    for a, b in _COMPARATIVES
]


# Before and after, against the truth only: a question's "before" names its event, which an
# answer may time from another ("before it terminates": "30 days after the notice").
_TIME_ORDER = (frozenset({"befor", "prior"}), frozenset({"after"}))


# Bounds: "less than 2,300 mg" and "at least 2,300 mg" give one figure and opposite claims.
# Each only before a figure ("under $100", not "under the new plan"); "no more than" and
# "not less than" turn the bound round, and are read first.
_A_FIGURE = (
    r"(?=\s+(?:of\s+|than\s+)?[$€£]?(?:\d|(?:one|two|three|four|five|six|seven|eight|nine|ten)\b))"
)
# A verb of doing may stand between: "do not take more than 8 puffs" is at most 8 ("not
# significantly lower than" is a comparison denied, no bound).
BOUNDED_VERB = (
    r"(?:(?:take|use|give|have|be|go|drive|run|carry|pay|spend|wait|allow|eat|drink|travel"
    r"|fly|work|admit|load|lift|hold|store|keep|charge|serve|sell|buy|add|apply|stay|last"
    r"|ride|book|bring)\s+)?"
)
_TURNED_UPPER = re.compile(rf"\b(?:no|not)\s+{BOUNDED_VERB}(?:more|greater|higher)\s+than\b", re.I)
_TURNED_LOWER = re.compile(
    rf"\b(?:no|not)\s+{BOUNDED_VERB}(?:less|fewer|lower|closer|sooner)\s+than\b", re.I
)
_UPPER_BOUND = re.compile(
    r"(?:\b(?:(?:less|fewer|lower)\s+than|at\s+most|up\s+to|under|below|maximum|within"
    r"|not\s+(?:to\s+)?exceed(?:ing)?)" + _A_FIGURE + r"|(?:<=?|≤)(?=\s*[$€£]?\d))",
    re.I,
)
# After the figure: "30 mA or less", "18 years or older".
# A few words may name what is measured between: "60 metres length overall or more".
# Not "more or less", nor "or more precisely".
_NOT_A_BOUND_AFTER = (
    r"(?!\s+(?:precisely|exactly|accurately|commonly|often|usually|simply|specifically))"
)
_UPPER_AFTER = re.compile(
    r"\d\S{0,20}(?:\s+[^\s\d]\S{0,19}){0,3}(?<!\bmore)\s+or\s+"
    r"(?:less|fewer|lower|under|below|younger|earlier)\b" + _NOT_A_BOUND_AFTER,
    re.I,
)
_LOWER_AFTER = re.compile(
    r"\d\S{0,20}(?:\s+[^\s\d]\S{0,19}){0,3}(?<!\bless)\s+or\s+"
    r"(?:more|greater|higher|over|above|older|newer|later)\b" + _NOT_A_BOUND_AFTER,
    re.I,
)
_LOWER_BOUND = re.compile(
    r"(?:\b(?:(?:more|greater|higher)\s+than|at\s+least|over|above|minimum)"
    + _A_FIGURE
    + r"|(?:>=?|≥)(?=\s*[$€£]?\d))",
    re.I,
)


def without_turned_bounds(text: str) -> str:
    """The text less its turned bounds ("not more than", "do not take fewer than"): what is
    left of "more than" is strict."""
    return _TURNED_LOWER.sub(" ", _TURNED_UPPER.sub(" ", text or ""))


def bound(text: str) -> int:
    """-1 when the text bounds a figure from above ("less than 5", "up to 25%", "no more
    than 8"), +1 from below ("at least 8", "not less than 5"), 0 for neither or both."""
    text = text or ""
    upper = bool(_TURNED_UPPER.search(text))
    lower = bool(_TURNED_LOWER.search(text))
    rest = _TURNED_LOWER.sub(" ", _TURNED_UPPER.sub(" ", text))
    upper |= bool(_UPPER_BOUND.search(rest) or _UPPER_AFTER.search(rest))
    lower |= bool(_LOWER_BOUND.search(rest) or _LOWER_AFTER.search(rest))
    return lower - upper


# "unpaid" for a question about paid leave: the word denied by its prefix.
_DENYING_PREFIX = re.compile(r"\b(?:un|non-?)([a-z]{4,})\b", re.I)


def denied_by_prefix(text: str) -> set[str]:
    """The stems a text denies with "un-" or "non-" ("unpaid": "paid")."""
    return {stem(word) for word in _DENYING_PREFIX.findall(text or "")}


def stem(word: str) -> str:
    """A word's stem, as `content_terms` makes them."""
    return _STEMMER.stemWord(word.lower())


def _stems(text: str) -> set[str]:
    return set(_STEMMER.stemWords(words(text)))


def opposes(answer: str, truth: str) -> str | None:
    """A word of the answer whose opposite the truth says (and that the truth does not say
    itself), else None: "increased" against "decreased", "passed" against "defeated"."""
    said, truth_says = _stems(_NEGATED_WORD.sub(" ", answer or "")), _stems(truth)
    for first, second in [*_FAMILIES, _TIME_ORDER]:
        for mine, theirs in ((first, second), (second, first)):
            if said & mine and truth_says & theirs and not truth_says & mine:
                return min(said & mine)
    return None


# A word denied where it stands ("not permitted"): it says its opposite, not itself.
_NEGATED_WORD = re.compile(r"\b(?:not|never|no\s+longer)\s+(?:be\s+|been\s+)?[a-z]+", re.I)


_THAN = re.compile(r"\bthan\b", re.I)


_IN_TIME = re.compile(r"\b(before|after|prior\s+to)\b", re.I)
_EVENT_VERBS = frozenset(_STEMMER.stemWords("happen came come occur took take".split()))


def compared(said: str) -> tuple[set[str], str, set[str]] | None:
    """A comparison "A is larger than B" as (A's terms, "larger", B's terms): the words
    before the comparative, the comparative, the words after "than" up to the clause's
    end; "A happened before B" as (A's, "before", B's). None without one."""
    parts = _THAN.split(said or "", maxsplit=1)
    if len(parts) != 2:
        timed = _IN_TIME.split(said or "", maxsplit=1)
        if len(timed) != 3 or not words(timed[0]):
            return None
        comparative = "before" if timed[1].lower().startswith("prior") else timed[1].lower()
        parts = [f"{timed[0]} {comparative}", timed[2]]
    before = words(parts[0])
    if not before:
        return None
    comparative = before[-1]
    subject = content_terms(" ".join(before[:-1])) - {"more", "less"} - _EVENT_VERBS
    compared_with = content_terms(re.split(r"[,;.]", parts[1], maxsplit=1)[0])
    return subject, comparative, compared_with


def reverses(answer: str, truth: str) -> bool:
    """Whether the answer makes the truth's comparison the other way round: "The Atlantic
    is larger than the Pacific" for "The Pacific is larger than the Atlantic"."""
    mine, theirs = compared(answer), compared(truth)
    if not (mine and theirs) or mine[1] != theirs[1]:
        return False
    return bool(mine[0] & theirs[2]) and bool(mine[2] & theirs[0])


# Words that join two roles without ordering them, and the passive "by", which turns them.
_UNORDERED = frozenset(["and", "or", "&", "by", "with", "the", "a", "an"])


_LISTS = re.compile(r"\w,\s+[^,]+(?:,\s+[^,]+)*,?\s+(?:and|or)\s", re.I)


def swaps_roles(answer: str, truth: str) -> str | None:
    """A word both texts say once (a verb, a preposition: "pays", "to") with the truth's
    words before it after it in the answer and the other way round: "The lender pays the
    borrower" for "The borrower pays the lender", "Water to acid" for "Acid to water". The
    word, or None. A text in the passive ("is paid by") is not read."""
    mine, theirs = words(answer), words(truth)
    if "by" in mine or "by" in theirs or _LISTS.search(answer or "") or _LISTS.search(truth or ""):
        return None  # the passive turns the roles; a list's items have none
    # The link by its stem: "must notify" and "notifies" are one verb.
    my_links, their_links = _STEMMER.stemWords(mine), _STEMMER.stemWords(theirs)
    for link in set(my_links) & set(their_links) - _UNORDERED:
        if my_links.count(link) != 1 or their_links.count(link) != 1:
            continue
        i, j = my_links.index(link), their_links.index(link)
        my_before, my_after = (
            content_terms(" ".join(mine[:i])),
            content_terms(" ".join(mine[i + 1 :])),
        )
        t_before, t_after = (
            content_terms(" ".join(theirs[:j])),
            content_terms(" ".join(theirs[j + 1 :])),
        )
        # Words that changed sides, whatever stays ("Add the water to the acid").
        if (my_before & t_after) - t_before and (my_after & t_before) - t_after:
            return mine[i]
    return None


def converse(answer: str, truth: str) -> bool:
    """Whether the answer makes the truth's comparison from the other side: "The Atlantic
    is smaller than the Pacific" for "The Pacific is larger than the Atlantic"."""
    mine, theirs = compared(answer), compared(truth)
    if not (mine and theirs) or not (mine[0] & theirs[2] and mine[2] & theirs[0]):
        return False
    pair = {_STEMMER.stemWord(mine[1]), _STEMMER.stemWord(theirs[1])}
    return any(
        pair <= first | second and pair & first and pair & second
        for first, second in [*_FAMILIES, _TIME_ORDER]
    )


def opposes_question(answer: str, question: str, truth: str) -> str | None:
    """A word of the answer whose opposite the question asks about, when neither the
    question nor the truth says the answer's word: "Jupiter is the smallest" to "Which
    planet is the largest?"."""
    said, asked, truth_says = _stems(answer), _stems(question), _stems(truth)
    for first, second in _FAMILIES:
        for mine, theirs in ((first, second), (second, first)):
            if said & mine and asked & theirs and not (asked | truth_says) & mine:
                return min(said & mine)
    return None


UP, DOWN = _FAMILIES[0]


# Past forms the stemmer leaves apart from their verb ("paid", "pay"), for telling whether
# an answer's words are the question's.
_IRREGULAR = {
    "paid": "pay",
    "made": "make",
    "sold": "sell",
    "held": "hold",
    "met": "meet",
    "bought": "buy",
    "built": "build",
    "kept": "keep",
    "left": "leave",
    "ran": "run",
    "began": "begin",
    "begun": "begin",
    "went": "go",
    "gone": "go",
    "gave": "give",
    "given": "give",
    "took": "take",
    "taken": "take",
    "told": "tell",
    "found": "find",
    "brought": "bring",
    "spent": "spend",
    "sent": "send",
    "won": "win",
    "lost": "lose",
    "grew": "grow",
    "grown": "grow",
    "rose": "rise",
    "risen": "rise",
    "fell": "fall",
    "fallen": "fall",
    "got": "get",
    "done": "do",
    "said": "say",
    "saw": "see",
    "seen": "see",
    "wrote": "write",
    "written": "write",
    "chose": "choose",
    "chosen": "choose",
    "became": "become",
    "came": "come",
    "knew": "know",
    "known": "know",
    "shown": "show",
    "led": "lead",
    "set": "set",
    "cut": "cut",
    "hit": "hit",
    "meant": "mean",
}


# Joining words that say nothing of a claim's content ("It returns None if …").
_CONNECTIVES = frozenset(
    "if unless until while whether because since though although after before during".split()
)


def lemmas(text: str) -> set[str]:
    """`content_terms`, with irregular past forms read as their verb ("paid" as "pay") and
    no joining words ("if", "because")."""
    kept = [
        _IRREGULAR.get(w, w)
        for w in words(text)
        if w not in _STOPWORDS and w not in _CONNECTIVES and not _NUMERIC.fullmatch(w)
    ]
    return {_SAME_MEANING.get(stem, stem) for stem in _STEMMER.stemWords(kept)}


# An aside in brackets: "Canberra (not Sydney)", "Carbon dioxide (CO2)". A bracket written
# against the word before it is part of that word, as code writes it: "f()", "redis[hiredis]".
_ASIDE = re.compile(r"(?<![\w)\]])(?:\([^()]*\)|\[[^\[\]]*\])")


# A code: a token of digits joined to letters or to more digit groups, said whole or not at
# all ("HF-2047", "192.168.1.1", "1-800-555-0142", "18.17.0", "230(c)(1)", "10^23", "15:1").
# One digit wrong is another thing, however many of its parts agree.
_CODE_TOKEN = re.compile(  # from a token's start only: a long word is read once, not per letter
    r"(?<![A-Za-z0-9])(?:[A-Za-z0-9]+(?:[.\-/:^_−]+[A-Za-z0-9]+|\([A-Za-z0-9]{1,3}\))+"
    r"|[A-Za-z]+\d[A-Za-z0-9]*)"
)
# Not codes: a time of day ("9:00"), a day written with slashes ("3/4/2021"), a period
# ("FY2021", "Q3"), each read by the date and period checks.
_NOT_A_CODE = re.compile(
    r"\d{1,2}:\d{2}(?::\d{2})?|\d{1,2}/\d{1,2}/\d{2,4}|(?:fy|cy|q[1-4]|h[12])'?\d{0,4}",
    re.I,
)
_QUANTITY_WORD = re.compile(r"\d+(?:\.\d+)?[A-Za-z%]+")  # "500mg", "13th", "3D": not codes
_FLAG = re.compile(r"(?<![\w-])-[A-Za-z]\b(?!-)")  # "-i": a one-letter option, case and all


_VERSION = re.compile(r"\b(?:version|release|v)\s?(\d+(?:\.\d+)+)\b", re.I)
_E_NOTATION = re.compile(r"\d+(?:\.\d+)?e[-+−]?\d+", re.I)
_DOTTED = re.compile(r"(?<![\w.])\d+(?:\.\d+)+(?![\w.]*\d)")


def codes(text: str) -> set[str]:
    """The codes `text` writes (above), as compared: lower-cased, without hyphens or a
    version's leading "v" ("v18.17.0" is "18.17.0"). Days ("2021-03-04") are dates."""
    found = set()
    for token in _CODE_TOKEN.findall(_ISO_DAY.sub(" ", text or "")):
        if not any(ch.isdigit() for ch in token) or _QUANTITY_WORD.fullmatch(token):
            continue
        if _E_NOTATION.fullmatch(token) or _NOT_A_CODE.fullmatch(token):
            continue  # "3e-4" is a number
        groups = re.findall(r"\d+", token)
        lettered = any(ch.isalpha() for ch in token)
        joined = re.search(r"[:^(]", token) and len(groups) >= 2
        if lettered or len(groups) >= 3 or joined:
            code = re.sub(r"(?<=[a-z0-9])-", "", token.lower().replace("−", "-"))
            found.add(re.sub(r"^v(?=\d)", "", code))
    # A version is a code too, "2.30" another than "2.3", once it is named one; its trailing
    # zeros say nothing ("v1.4.0" is "1.4").
    found |= set(_VERSION.findall(text or ""))
    return {re.sub(r"(?:\.0)+$", "", code) if _DOTTED.fullmatch(code) else code for code in found}


def dotted_numbers(text: str) -> set[str]:
    """Numbers with points, trailing zero parts left out ("1.4.0", "1.4" as "1.4"): where a
    code is said as a plain number."""
    return {re.sub(r"(?:\.0)+$", "", n) for n in _DOTTED.findall(text or "")}


# A numeral in Roman figures after a name ("World War I", "Henry VIII", "Type II"): one
# letter more is another one.
# "I" alone only where nothing follows in its sentence: "In March I went" says no numeral.
_ROMAN = re.compile(
    r"\b([A-Z][a-z]+)\s+(X{0,3}(?:IX|IV|V?I{0,3}))\b(?![\w'’-])(?<!\sI)|"
    r"\b([A-Z][a-z]+)\s+(I)\b(?=\s*(?:[.,;:)]|$))"
)


def roman_numbered(text: str) -> set[str]:
    """ "war i" for "World War I": the names a text numbers in Roman figures, lower-cased."""
    found = set()
    for name, numeral, name_i, numeral_i in _ROMAN.findall(text or ""):
        if numeral or numeral_i:
            found.add(f"{(name or name_i).lower()} {(numeral or numeral_i).lower()}")
    return found


def without_codes(text: str) -> str:
    """`text` with its codes blanked out."""
    return _CODE_TOKEN.sub(lambda m: " " if codes(m.group(0)) else m.group(0), text or "")


_WEEKDAY = re.compile(r"\b(mon|tues|wednes|thurs|fri|satur|sun)days?\b", re.I)
# A short form only beside another day or a time ("Mon-Fri", "Sat 9:00"): "The Sun." is none.
_SHORT_DAY = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)"
_WEEKDAY_SHORT = re.compile(
    rf"\b({_SHORT_DAY})\b(?=\.?\s*(?:(?:[-–/,&]|\bto\b)\s*{_SHORT_DAY}\b|\d))"
    rf"|(?:[-–/,&]|\bto)\s*\b({_SHORT_DAY})\b"
)


def weekdays(text: str) -> set[str]:
    """The days of the week a text names, as "mon" … "sun"."""
    found = _WEEKDAY.findall(text or "")
    found += [first or second for first, second in _WEEKDAY_SHORT.findall(text or "")]
    return {day.lower()[:3] for day in found}


def flags(text: str) -> set[str]:
    """One-letter command-line options as written, case kept: "-i" is not "-I"."""
    return set(_FLAG.findall(text or ""))


_ACRONYM = re.compile(r"^(?:[Tt]he\s+)?((?:[A-Z]\.?){2,6})$")
_NAME_WORD = re.compile(r"[A-Z][A-Za-z]*")
_LINKS = frozenset(["of", "for", "and", "the", "on", "de", "&"])


def abbreviates(a: str, b: str) -> bool:
    """Whether one text is the other's initials: "US" and "the United States", "WHO" and
    "World Health Organization", or the initials a name is given in brackets ("ISO" for
    "The International Organization for Standardization (ISO)")."""
    for short, full in ((a, b), (b, a)):
        found = _ACRONYM.match(_bare_case(short))
        if not found:
            continue
        letters = found.group(1).replace(".", "")
        bracketed = re.findall(r"\(([A-Z]{2,6})\)", full or "")
        names = [w for w in re.findall(r"[\w&]+", without_asides(full)) if w.lower() not in _LINKS]
        # A name of capitalised words: its initials, or the ones it gives itself in brackets
        # ("… Standardization (ISO)"); a phrase of other words only when the bracketed
        # initials are its own, word for word ("Communications-based train control (CBTC)"),
        # not a qualifier's ("China, measured in purchasing power parity (PPP)").
        parts = [part for word in names for part in word.split("-") if part]
        initials = "".join(part[0] for part in parts).upper()
        capitalised = names and all(_NAME_WORD.fullmatch(w) for w in names)
        if capitalised and "".join(w[0] for w in names) == letters:
            return True
        if letters in bracketed and (capitalised or initials == letters):
            return True
    return False


_TITLES = frozenset("dr dr. mr mr. mrs mrs. ms ms. prof prof. professor sir dame".split())


def initialled(answer: str, truth: str) -> bool:
    """Whether the answer is the truth's name with given names as initials: "A. Moreno" for
    "Dr. Alicia Moreno", "E. Van Norden" for "Elise Van Norden"; the family name in full."""
    said = _bare_case(answer).split()
    names = [w for w in _bare_case(truth).split() if w.lower() not in _TITLES]
    if len(said) != len(names) or len(said) < 2 or not all(_NAME_WORD.fullmatch(w) for w in names):
        return False
    if said[-1].lower() != names[-1].lower() or not any(w.endswith(".") for w in said):
        return False
    for mine, theirs in zip(said, names, strict=True):
        initial = re.fullmatch(r"([A-Z])\.", mine)
        if mine.lower() != theirs.lower() and not (initial and theirs[0] == initial.group(1)):
            return False
    return True


def _bare_case(text: str) -> str:
    return " ".join((text or "").split()).strip(" .,;:!?\"'`“”‘’")


def same_words(a: str, b: str) -> bool:
    """Whether two texts say the same words in the same order, case, spacing and the
    punctuation around them aside ("`_`" and "_", "Yes." and "yes")."""
    return bool(_bare(a)) and _bare(a) == _bare(b)


def _bare(text: str) -> str:
    return " ".join((text or "").split()).strip(" .,;:!?\"'`“”‘’").casefold()


def outside_brackets(text: str) -> str:
    """The text with every bracketed aside left out, whatever is left."""
    return _ASIDE.sub(" ", text or "")


def without_asides(text: str) -> str:
    """The text with its bracketed asides left out, when something is left and it is more
    than a symbol the aside spells out ("CO2 (carbon dioxide)", "NaCl (sodium chloride)")."""
    main = outside_brackets(text)
    tokens = _NAME.findall(main)
    if not content_terms(main, keep_numbers=True) or (tokens and all(map(_symbol, tokens))):
        return text or ""
    return main


def _symbol(token: str) -> bool:
    """An abbreviation or formula: two capitals or more, or letters with digits."""
    return sum(c.isupper() for c in token) >= 2 or (
        any(c.isdigit() for c in token) and any(c.isalpha() for c in token)
    )


# Where a list's items part: commas, semicolons, colons, full stops (not decimal points),
# line ends, and "then".
_SEGMENT = re.compile(r"[,;:\n]|\.(?!\d)|\bthen\b", re.I)
_NAME = re.compile(r"(?<![\w$€£¥])(?:[A-Za-z][\w'’.-]*\w|[A-Za-z])")
# The verbs after a sentence's subject that make its first word a name: "Saturn is …".
_SUBJECT_VERBS = frozenset(
    "is are was were has have had does did will would can could uses used".split()
)


_ARTICLES = frozenset(["the", "a", "an"])


def named_heads(text: str) -> list[tuple[str, bool]]:
    """The names each part of a list or sentence opens with, as (stemmed name, whether the
    part goes on with other words): a part opens with a name when its first word is
    capitalised and not a stop word, and the part is that name alone or its subject
    ("Charlotte Bronte", "Sydney", "Saturn is larger than Jupiter")."""
    heads = []
    for part in _SEGMENT.split(text or ""):
        tokens = _NAME.findall(part)
        if len(tokens) > 1 and tokens[0].lower() in _ARTICLES:
            tokens = tokens[1:]  # "The Amazon is longer than the Nile"
        if not tokens or not tokens[0][0].isupper() or tokens[0].lower() in _STOPWORDS:
            continue
        name = [tokens[0]]
        for token in tokens[1:]:
            if not token[0].isupper():
                break
            name.append(token)
        rest = tokens[len(name) :]
        if rest and rest[0].lower() not in _SUBJECT_VERBS:
            continue
        heads.append((" ".join(name), bool(rest)))
    return heads


def names(text: str) -> set[str]:
    """Stems of the words written as names: capitalised after a sentence's first word, with
    capitals or digits inside ("ValueError", "IP67"), or in backticks."""
    found = set()
    for match in _NAME.finditer(text or ""):
        word, start = match.group(0), match.start()
        inner = any(c.isupper() for c in word[1:]) or (
            any(c.isdigit() for c in word) and any(c.isalpha() for c in word)
        )
        quoted = start and text[start - 1] == "`"
        mid = word[0].isupper() and not _opens_sentence(text, start)
        first = word[0].isupper() and word.lower() not in _STOPWORDS
        if inner or quoted or mid or first:
            found |= content_terms(word, keep_numbers=True)
    return found


_UP_TO = re.compile(r"\bup\s+(?:to|until)\b", re.I)


def direction(text: str) -> int:
    """+1 when the text speaks of a rise only, -1 of a fall only, else 0 ("up to" is a
    bound, no rise)."""
    stems = _stems(_UP_TO.sub(" ", text or ""))
    up, down = bool(stems & UP), bool(stems & DOWN)
    return (1 if up else -1) if up != down else 0


def is_loop(text: str) -> bool:
    """Whether the text is a degenerate loop: the same few words over and over."""
    said = words(text)
    if len(said) < 12:
        return False
    if len(set(said)) / len(said) < 0.4:
        return True
    trigrams = Counter(zip(said, said[1:], said[2:], strict=False))
    return max(trigrams.values()) >= 3


_LIST = re.compile(r"\b([a-z]+),\s+([a-z]+),?\s+(?:and|or)\s+([a-z]+)\b", re.I)


def options(question: str) -> tuple[str, ...] | None:
    """The options (stemmed) a question offers: two with "A or B" (see `choice`), or three
    listed "A, B, and C" ("Among operations, investing, and financing activities")."""
    two = choice(question)
    if two:
        return two
    for found in _LIST.findall(question or ""):
        listed = [w.lower() for w in found]
        if any(w in _STOPWORDS for w in listed):
            continue
        stems = tuple(_STEMMER.stemWords(listed))
        if len(set(stems)) == 3:
            return stems
    return None


def said_options(text: str, offered: tuple[str, ...]) -> set[str]:
    """Which offered options the text says, in the options' words or, for a rise or a fall,
    in others ("went up" says "increase")."""
    stems = content_terms(text) | _stems(text)
    said = set(offered) & stems
    for option in offered:
        for family in (UP, DOWN):
            if option in family and stems & family:
                said.add(option)
    return said


_YEAR = re.compile(r"(?<![\w.,$-])(1[0-9]{3}|20[0-9]{2})(?![\w%-]|[.,]\d)")
_MONTH_NAMES = (
    "january february march april may june july august september october november december"
).split()
_MONTH_WORD = (
    r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_DATES = (
    (
        re.compile(rf"\b{_MONTH_WORD}\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?(?:,?\s*(\d{{4}}))?\b", re.I),
        "mdy",
    ),
    (
        re.compile(
            rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH_WORD}\.?(?:,?\s*(\d{{4}}))?\b",
            re.I,
        ),
        "dmy",
    ),
    (re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b"), "iso"),
    # "03/31/2025" or "31/03/2025", where only one reading is a day ("04/03/2025" is none).
    (re.compile(r"(?<![\d/])(\d{1,2})/(\d{1,2})/(\d{4})(?![\d/])"), "slashed"),
)


def date_ends(text: str) -> list[int]:
    """Where each day written in the text ends (`dates`' forms)."""
    return sorted(found.end() for pattern, _ in _DATES for found in pattern.finditer(text or ""))


def date_spans(text: str) -> list[tuple[int, int]]:
    """Where each day written in the text starts and ends (`dates`' forms)."""
    found = {(m.start(), m.end()) for pattern, _ in _DATES for m in pattern.finditer(text or "")}
    return sorted(found)


def years(text: str) -> set[str]:
    """Years written in the text ("1989"), dates' years included."""
    return set(_YEAR.findall(text or ""))


def dates(text: str) -> set[tuple[int, int, int | None]]:
    """Days written in the text, as (month, day, year or None): "July 20, 1969", "20 July
    1969" and "1969-07-20" are all (7, 20, 1969)."""
    found = set()
    for pattern, order in _DATES:
        for groups in pattern.findall(text or ""):
            if order == "slashed":
                first, second, year = (int(g) for g in groups)
                readings = [
                    (month, day, year)
                    for month, day in ((first, second), (second, first))
                    if 1 <= day <= 31 and 1 <= month <= 12
                ]
                found |= set(readings) if len(set(readings)) == 1 else set()
                continue
            if order == "iso":
                year, month, day = (int(g) for g in groups)
            else:
                month_word, day_text, year_text = (
                    groups if order == "mdy" else (groups[1], groups[0], groups[2])
                )
                month = next(
                    i + 1
                    for i, m in enumerate(_MONTH_NAMES)
                    if m.startswith(month_word.lower()[:3])
                )
                day, year = int(day_text), int(year_text) if year_text else None
            if 1 <= day <= 31 and 1 <= month <= 12:
                found.add((month, day, year))
    return found


# A month by name or abbreviation; "May" and "Mar" only beside a day or a year, as "may" is
# also a verb.
_MONTH_SAID = re.compile(
    r"\b(?:(jan(?:uary)?|feb(?:ruary)?|march|apr(?:il)?|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\b"
    r"|(may|mar)\.?(?=\s+\d))",
    re.I,
)


def months(text: str) -> set[int]:
    """Months named in the text (1-12)."""
    found = set()
    for named, short in _MONTH_SAID.findall(text or ""):
        word = (named or short).lower()[:3]
        found.add(next(i + 1 for i, m in enumerate(_MONTH_NAMES) if m.startswith(word)))
    return found
