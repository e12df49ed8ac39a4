"""Questions when the customer has none: question / answer / golden-chunk triples from
chunks.

Two generators, one filter:
- `offline_questions` needs no model. It makes questions of several kinds, chosen with
  `kinds`:
  - the generic kinds (`GENERIC_KINDS`) read prose in any domain, in the document's own
    words: a sentence saying what a thing does ("Division by zero raises the
    ZeroDivisionError exception" asks what division by zero raises), what a term is ("A
    block is a piece of program text that is executed as a unit" asks what a block is),
    or how many of something there are ("There are three types of numeric literals").
    The answer is a short span of the sentence, and every chunk of the document holding
    the sentence is golden evidence. A question asks only about a subject that names
    something the corpus rarely mentions, and names its entity when the subject alone
    would not pick out one entity's documents.
  A pack adds kinds that read one kind of document (the filings pack's read a filing's
  year-column tables and its accounts of a change: `engine.packs.filings.questions`); its
  questions come first and the generic kinds fill what they leave
  (`engine.packs.synthesized_questions`).
- `teacher_questions` asks a teacher model on any OpenAI-compatible endpoint to write a
  question and answer from a chunk.
- `is_self_contained` drops questions that are ambiguous without the chunk: a question
  must name its entity, and a period when its passage is dated (a teacher's question on a
  dated page).
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import zip_longest

from engine.documents.chunking import Chunk
from engine.documents.questions import Evidence, Question, question_id

_PERIOD = re.compile(
    r"\b(?:19|20)\d\d\b|\bFY\s?'?\d{2,4}\b|\bQ[1-4]\b|\b(?:first|second|third|fourth) quarter\b",
    re.IGNORECASE,
)

TEACHER_PROMPT = """You write exam questions about an organisation's documents.
Entity: {entity}
Document: {doc}
Passage:
\"\"\"
{text}
\"\"\"
Write ONE factual question that this passage answers, and its short answer.
The question must name the entity ({entity}){period}, so that it makes sense without
the passage. Reply with JSON only:
{{"question": "...", "answer": "..."}}"""
# Said only of a passage that dates itself (a filing's year): a manual's passage has no
# period to name, and a question about it needs none.
_TEACHER_PERIOD = " and the period (year, quarter or date) it is about"


def is_self_contained(question: str, entity: str | None, period: bool = True) -> bool:
    """True if the question names its entity (any distinctive word of it) and, with
    `period`, a period."""
    if not entity or (period and not _PERIOD.search(question)):
        return False
    lowered = question.lower()
    words = [w for w in re.findall(r"[a-z0-9&]+", entity.lower()) if len(w) >= 2] or [
        entity.lower()
    ]
    squashed = re.sub(r"[^a-z0-9&]", "", lowered)
    return (
        entity.lower() in lowered
        or re.sub(r"[^a-z0-9&]", "", entity.lower()) in squashed
        or any(re.search(rf"\b{re.escape(w)}\b", lowered) for w in words if len(w) >= 3)
    )


# Question kinds, by what they read. The generic kinds assume nothing of the documents but
# sentences; a pack adds its own (`engine.packs`).
GENERIC_KINDS = ("action", "definition", "count")
# "completion": a sentence of the documents quoted with one of its rarer words blanked out,
# answered by that word. Any prose makes it, where the kinds above need a sentence of a
# given shape (a manual of 77 pages made 64 of them); its question finds its passage with
# no skill, and what it teaches is reading: the answer is a word of the results to copy.
# Chosen with `completion_questions` (TrainConfig), off by default.
READING_KINDS = ("completion",)
ALL_KINDS = GENERIC_KINDS + READING_KINDS


def offline_questions(
    chunks: Iterable[Chunk],
    n: int = 100,
    seed: int = 0,
    kinds: Iterable[str] = GENERIC_KINDS,
) -> list[Question]:
    """Up to n questions of the `kinds` asked for (default the generic ones), read off the
    documents' sentences (`prose_questions`); an unknown kind raises ValueError."""
    kinds = tuple(kinds)
    unknown = sorted(set(kinds) - set(ALL_KINDS))
    if unknown:
        raise ValueError(f"unknown question kinds {unknown}; choose from {list(ALL_KINDS)}")
    return prose_questions(chunks, n, seed, kinds) if kinds and n > 0 else []


# Generic kinds: questions from the sentences of any document. They read English sentence
# shapes (a subject and a verb, "A … is a …", "There are N …"), never one domain's words.

# A sentence starts with a capital letter (or a quoted or emphasised term) and ends at a
# full stop; a chunk's lines are joined first, since hard-wrapped prose breaks them anywhere.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"“*(]?[A-Z])")
# Characters of code, grammars, tables and links: a sentence with several is no prose.
_CODE_CHARS = frozenset("()[]{}=<>|#@\\/+~^`$%")
_MAX_CODE_CHARS = 4
# Emphasis marks around words ("a *block* is"): not part of the words. "**" alone is text.
_EMPHASIS = re.compile(r"(?<![\w*])\*{1,2}(\w[^*]*?)\*{1,2}(?![\w*])")
# Verbs that say what a thing does to or with another, in their base form.
_ACTION_VERBS = (
    "raise", "return", "yield", "produce", "create", "require", "contain", "accept",
    "support", "define", "denote", "represent", "call", "select", "cause", "convert",
    "generate", "provide", "allow", "store", "include", "take", "use", "print", "hold",
    "need", "give", "determine", "specify", "identify", "protect", "prevent",
    "remove", "heat", "cool", "reduce", "show", "display", "indicate", "control", "connect",
    "send", "receive", "replace", "enable", "disable", "delete", "describe", "mean",
)  # fmt: skip
# Left out: verbs that are as often nouns ("list", "measure", "check", "start"), which read
# "the inheritance list usually gives …" as a subject "the inheritance" that lists.
_ADVERB = r"(?:(?:always|only|also|never|usually|generally|normally|first|then|now)\s+)?"
_OBJECT_END = (
    r"(?=\.(?:\s|$)|[,;:]|\s(?:if|when|unless|because|which|that|so|for|with|in|from|on|by|"
    r"as|and|or|but|while|after|before|instead|rather|unlike)\s|$)"
)
_ACTION = re.compile(
    r"^(?P<subject>[^,;:()]{3,60}?)\s+" + _ADVERB + r"(?P<verb>" + "|".join(_ACTION_VERBS) + r")"
    r"(?P<s>s?)\s+(?P<object>[^,;:]{2,80}?)\s*" + _OBJECT_END
)
# Verbs whose object follows a particle: "X consists of Y" asks what X consists of.
_PHRASAL_VERBS = (
    "consist of", "depend on", "refer to", "belong to", "correspond to", "apply to",
    "result in", "lead to", "rely on", "point to", "differ from", "map to",
)  # fmt: skip
_PHRASAL = re.compile(
    r"^(?P<subject>[^,;:()]{3,60}?)\s+"
    + _ADVERB
    + r"(?P<verb>"
    + "|".join(v.split()[0] for v in _PHRASAL_VERBS)
    + r")(?P<s>s?)\s+(?P<particle>of|on|to|in|from)\s+(?P<object>[^,;:]{2,80}?)\s*"
    + _OBJECT_END
)
# "Code objects are returned by the built-in compile() function" asks by what they are.
_PASSIVE = re.compile(
    r"^(?P<subject>[^,;:()]{3,60}?)\s+(?P<be>is|are)\s+"
    + _ADVERB
    + r"(?P<done>[a-z]{3,}ed)\s+by\s+(?P<object>[^,;:]{2,80}?)\s*"
    + _OBJECT_END
)
_DEFINITION = re.compile(
    r"^(?P<article>An?|The)\s+(?P<term>[^,;:()]{2,40}?)\s+(?P<be>is|are)\s+"
    r"(?P<meaning>(?:an?|the|one)\s+[^;:]{5,160}?)\s*(?=\.(?:\s|$)|[;:]|$)"
)
_NUMBER_WORDS = "two three four five six seven eight nine ten eleven twelve".split()
_COUNT = re.compile(
    r"\b[Tt]here (?:is|are) (?:exactly |only |currently only |currently )?"
    r"(?P<n>\d+|" + "|".join(_NUMBER_WORDS) + r")\s+(?P<noun>[^,;:.()]{3,60}?)"
    r"(?=[.,;:]|\s(?:in|for|that|which|with|on|to|from|at|and|but|whose)\s|$)"
)
# A subject that names nothing a question can ask about on its own.
_VAGUE_WORDS = frozenset(
    "it its this that these those they them there here we you he she which such each both "
    "all some other others one then otherwise also however thus note see if when for in as "
    "any many most several another simply just only not to unless although because since "
    "while whether where after before once until though".split()
)
# Words that point at something said elsewhere ("a similar action", "the above rule"): a
# subject holding one names nothing on its own.
_REFERRING_WORDS = frozenset(
    "similar same following above below former latter previous next such this these that "
    "those".split()
)
_STOP_WORDS = frozenset(
    "the a an of to in on for by with and or but not no is are be been was were as at from "
    "its it this that these those their there which what when where who how than then so "
    "into onto can may might must should will would do does did has have had".split()
)
# A subject holding one of these is a clause, not a name ("the statement will bind …").
_CLAUSE_WORDS = frozenset(
    "is are was were be been can may might must should will would shall could cannot has have "
    "had".split()
)
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_'-]*")
_MAX_ANSWER_WORDS = 16
# A word names something distinctive when at most this share of the chunks hold it.
_RARE_SHARE = 0.05
_SHAPES_ACTION = (
    "What {does} {s} {v}?",
    "According to the documents, what {does} {s} {v}?",
    "Do you know what {s} {vs}?",
)
_SHAPES_DEFINITION = (
    "What {be} {art}{t}?",
    "What does the term {t} mean?",
    "How {be} {art}{t} defined?",
)
_SHAPES_COUNT = ("How many {noun} are there?", "What is the number of {noun}?")


@dataclass(frozen=True)
class _Fact:
    """A question read off one sentence: its kind, the words it asks about (`subject`), the
    question, the answer span and the sentence (the evidence)."""

    kind: str
    subject: str
    question: str
    answer: str
    sentence: str


def prose_questions(
    chunks: Iterable[Chunk],
    n: int = 100,
    seed: int = 0,
    kinds: Iterable[str] = GENERIC_KINDS,
) -> list[Question]:
    """Up to n lookup questions read off prose sentences, the kinds taken in turn: what a
    thing does (`action`), what a term is (`definition`), how many of something there are
    (`count`), which word a quoted sentence is missing (`completion`). The answer is a
    short span of the sentence; golden evidence is every chunk of the document that holds
    the sentence. A question asks only about a subject with a word few chunks hold, and
    names its entity ("In <entity>, …") when the subject's words are also in another
    entity's chunks (a quoted sentence names its passage itself)."""
    kinds = [k for k in GENERIC_KINDS + READING_KINDS if k in set(kinds)]
    chunks = list(chunks)
    if not chunks or not kinds or n < 1:
        return []
    rng = random.Random(seed)
    flat = [(c, " ".join(c.text.split())) for c in chunks]
    holding: dict[str, list[int]] = {}  # a word -> the chunks that hold it
    for i, (_, text) in enumerate(flat):
        for word in {w.lower() for w in _WORD.findall(text)}:
            holding.setdefault(word, []).append(i)
    rare = max(2, _RARE_SHARE * len(chunks))

    def distinctive(phrase: str) -> bool:
        words = [w.lower() for w in _WORD.findall(phrase)]
        return any(w not in _STOP_WORDS and len(holding.get(w, ())) <= rare for w in words)

    def elsewhere(subject: str, entity: str) -> bool:
        """Whether another entity's chunks hold the subject too: then the question must say
        whose documents it asks about. Only chunks holding its rarest word can."""
        words = {w.lower() for w in _WORD.findall(subject)}
        rarest = min(words, key=lambda w: len(holding.get(w, ())))
        needle = subject.lower()
        return any(
            flat[i][0].entity != entity and needle in flat[i][1].lower()
            for i in holding.get(rarest, ())
        )

    by_kind: dict[str, list[tuple[Chunk, _Fact]]] = {k: [] for k in kinds}
    for chunk in chunks:
        for sentence in _sentences(chunk.text):
            for fact in _facts(sentence, kinds, rng, lambda word: len(holding.get(word, ()))):
                if distinctive(fact.subject):
                    by_kind[fact.kind].append((chunk, fact))
    for candidates in by_kind.values():
        rng.shuffle(candidates)
    # Kinds in turn, so that a corpus rich in one sentence shape still gets every kind.
    queue = [c for group in zip_longest(*by_kind.values()) for c in group if c is not None]

    questions: list[Question] = []
    asked: set[tuple] = set()
    by_doc: dict[str, list[tuple[str, str]]] = {}
    for chunk, text in flat:
        by_doc.setdefault(chunk.doc, []).append((chunk.id, text))
    for chunk, fact in queue:
        key = (chunk.doc, fact.kind, fact.subject.lower())
        if key in asked:
            continue
        asked.add(key)
        text = fact.question
        # A quoted sentence names its passage itself; a subject may need its entity named.
        if fact.kind != "completion" and chunk.entity and elsewhere(fact.subject, chunk.entity):
            text = f"In {chunk.entity}, {text[0].lower()}{text[1:]}"
        question = question_from(text, fact.answer, chunk, fact.sentence, f"offline-{fact.kind}")
        golden = [i for i, t in by_doc[chunk.doc] if fact.sentence in t] or [chunk.id]
        question.golden_chunk_ids = golden
        question.evidence[0].chunk_ids = list(golden)
        questions.append(question)
        if len(questions) >= n:
            break
    return questions


def _sentences(text: str) -> list[str]:
    """The prose sentences of a chunk: long enough to say something, short enough to be
    one statement, not code. Headings end where they stand; the rest of the lines are
    joined, since hard-wrapped prose breaks sentences anywhere."""
    out = []
    for block in _blocks(text):
        for sentence in _SENTENCE_END.split(block):
            sentence = sentence.strip().lstrip("•·▪–- ")  # a list item's bullet
            if not 30 <= len(sentence) <= 300 or sentence[-1] != ".":
                continue
            if sum(ch in _CODE_CHARS for ch in sentence) > _MAX_CODE_CHARS:
                continue
            out.append(sentence)
    return out


def _blocks(text: str) -> list[str]:
    """A chunk's text as runs of lines without headings: a heading is a line underlined by
    a rule ("Slicings" over "*****"), or a short line without a full stop before a line that
    starts anew ("Value comparisons" before "The operators …")."""
    lines = [" ".join(line.split()) for line in text.splitlines()]
    blocks: list[list[str]] = [[]]
    for i, line in enumerate(lines):
        following = lines[i + 1] if i + 1 < len(lines) else ""
        rule = not _WORD.search(line)
        underlined = bool(following) and not _WORD.search(following) and len(following) >= 3
        heading = len(line.split()) <= 6 and line[-1:] not in ".,;:" and following[:1].isupper()
        if rule or underlined or heading:
            blocks.append([])
        else:
            blocks[-1].append(line)
    return [" ".join(b) for b in blocks if b]


def _facts(
    sentence: str, kinds: list[str], rng: random.Random, chunks_holding: Callable[[str], int]
) -> list[_Fact]:
    plain = _EMPHASIS.sub(r"\1", sentence)
    facts = []
    if "action" in kinds:
        facts.extend(_action_facts(plain, sentence, rng))
    if "definition" in kinds and (m := _DEFINITION.match(plain)):
        term = m.group("term").strip()
        answer = _span(m.group("meaning"))
        # A term with a determiner or a verb inside is a clause ("constructor builds a
        # tuple whose items"): a term is a few words naming one thing.
        inner = {w.lower() for w in term.split()}
        named = len(term.split()) <= 5 and not inner & {"a", "an", "the", "this", "that"}
        if named and _names_a_thing(term) and answer and not _given_away(answer, term):
            be = m.group("be")
            article = "" if be == "are" else m.group("article").lower() + " "
            text = rng.choice(_SHAPES_DEFINITION).format(be=be, art=article, t=term)
            facts.append(_Fact("definition", term, text, answer, sentence))
    if "completion" in kinds and (fact := _completion_fact(plain, sentence, rng, chunks_holding)):
        facts.append(fact)
    if "count" in kinds:
        for m in _COUNT.finditer(plain):
            noun = m.group("noun").strip()
            content = [w for w in _WORD.findall(noun) if w.lower() not in _STOP_WORDS]
            # "How many levels are there?" asks about nothing in particular; "types of
            # changes we can make" holds a clause.
            lowered = {w.lower() for w in noun.split()}
            if len(content) < 2 or noun.split()[-1].lower() in DANGLING_WORDS:
                continue
            if lowered & (_CLAUSE_WORDS | _VAGUE_WORDS | {"i", "our", "your", "my"}):
                continue
            text = rng.choice(_SHAPES_COUNT).format(noun=noun)
            facts.append(_Fact("count", noun, text, m.group("n"), sentence))
    return facts


_SHAPES_COMPLETION = (
    'Which word is missing from this sentence of the documents: "{s}"?',
    'What word fills the blank in "{s}"?',
    'Complete the sentence with one word: "{s}"',
)
_BLANK = "___"
# A word worth blanking: a name, a keyword, an identifier ("ZeroDivisionError", "__bases__",
# "nonlocal"); no digits alone, nothing shorter than four characters.
_BLANKABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{3,}")


def _completion_fact(
    plain: str, sentence: str, rng: random.Random, chunks_holding: Callable[[str], int]
) -> _Fact | None:
    """The sentence with one of its words blanked: a word that is no stop word, occurs
    once in it and is not its first (a sentence's opening word is its subject more often
    than what it says), one of its two rarest in the corpus (`chunks_holding` a word): a
    name or a term the passage is about, rather than a word any sentence could hold."""
    words = list(_BLANKABLE.finditer(plain))
    counts = Counter(m.group().lower() for m in words)
    candidates = [
        m
        for m in words
        if m.start() > 0 and m.group().lower() not in _STOP_WORDS and counts[m.group().lower()] == 1
    ]
    if not candidates:
        return None
    candidates.sort(key=lambda m: chunks_holding(m.group().lower()))
    m = rng.choice(candidates[:2])
    quoted = (plain[: m.start()] + _BLANK + plain[m.end() :]).replace('"', "'")
    question = rng.choice(_SHAPES_COMPLETION).format(s=quoted)
    return _Fact("completion", m.group(), question, m.group(), sentence)


def _action_facts(plain: str, sentence: str, rng: random.Random) -> list[_Fact]:
    """What a thing does ("X raises Y", "X consists of Y"), or what is done to it ("X is
    returned by Y"), as a question about X answered by Y."""
    found = []
    for pattern in (_ACTION, _PHRASAL, _PASSIVE):
        m = pattern.match(plain)
        if not m:
            continue
        subject = m.group("subject").strip()
        said = m.group("object")
        rest = plain[m.end("object") :].split(". ")[0]
        if rest.startswith(",") and re.search(r"\s(?:and|or)\s", rest):
            said += rest.rstrip(".")  # a list ("the "str", "list" and "tuple" classes")
        answer = _span(said)
        if pattern is _PASSIVE:
            plural = m.group("be") == "are"
        else:
            plural = not m.group("s")
        # Subject and verb agree, or the verb was a noun ("the spot yield curve approach
        # does not …", "unless the context require"): a verb without -s needs a plural.
        agrees = not plural or subject.split()[-1].lower().endswith("s")
        # An object holding a negation or a second verb is a clause cut short, no thing.
        clause = {w.lower() for w in answer.split()} & (_CLAUSE_WORDS | {"does", "do", "not"})
        named = answer and _names_a_thing(subject) and not _given_away(answer, subject)
        if not (agrees and not clause and named):
            continue
        s = _mid_sentence(subject)
        if pattern is _PASSIVE:
            text = f"By what {m.group('be')} {s} {m.group('done')}?"
        else:
            verb = m.group("verb")
            if pattern is _PHRASAL:
                verb = f"{verb} {m.group('particle')}"
            shape = rng.choice(_SHAPES_ACTION)
            first, _, particle = verb.partition(" ")
            text = shape.format(
                does="do" if plural else "does",
                s=s,
                v=verb,
                vs=f"{first}{'' if plural else 's'} {particle}".strip(),
            )
        found.append(_Fact("action", subject, text, answer, sentence))
    return found


def _mid_sentence(subject: str) -> str:
    """A sentence's subject as a question writes it after its first words: an opening
    article in lower case ("A frame" -> "a frame"), a name as written."""
    first, _, rest = subject.partition(" ")
    if first in ("A", "An", "The"):
        return f"{first.lower()} {sentence_subject(rest) if rest else ''}".strip()
    return sentence_subject(subject)


def _names_a_thing(subject: str) -> bool:
    """A subject a question can name on its own: a few words, not a pronoun or a clause,
    and no second sentence run into it ("Frame objects Frame objects represent")."""
    words = subject.split()
    if not 1 <= len(words) <= 8 or words[0].lower().strip('"“') in _VAGUE_WORDS:
        return False
    if words[0].lower() in _STOP_WORDS - {"the", "a", "an"}:
        return False
    if words[-1].lower() in DANGLING_WORDS or words[-1].lower() in _STOP_WORDS:
        return False
    lowered = [w.lower().replace("’", "'") for w in words]
    if any(w in _CLAUSE_WORDS or w in _REFERRING_WORDS or w.endswith("n't") for w in lowered):
        return False
    # A capitalised word after a lower-case one starts a new sentence or heading, unless it
    # is quoted or a name used mid-sentence throughout (then it is capitalised after "the").
    return not any(
        later[:1].isupper() and earlier[:1].islower() and earlier.lower() not in ("the", "a")
        for earlier, later in zip(words, words[1:], strict=False)
    )


def _span(text: str) -> str:
    """An answer span: the words as written, without a leading article, at most
    `_MAX_ANSWER_WORDS` words (cut at a comma if longer; none if still too long), and
    never a bracket or quote left open."""
    text = text.strip(" ,")
    if len(text.split()) > _MAX_ANSWER_WORDS:
        text = text.split(",")[0].strip()
    text = re.sub(r"^(?:the|a|an)\s+", "", text, flags=re.I)
    if "(" in text and ")" not in text.split("(", 1)[1]:
        text = text.split("(", 1)[0].strip()
    if text.count('"') % 2 or text.count(")") > text.count("("):
        return ""
    words = text.split()
    if not 1 <= len(words) <= _MAX_ANSWER_WORDS or not _WORD.search(text):
        return ""
    if words[0].lower() in _STOP_WORDS or words[-1].lower() in DANGLING_WORDS:
        return ""
    if words[0].lower().endswith("ly"):  # "recursively deletes …": a verb phrase, no thing
        return ""
    if re.search(r"\b[A-Z]$", text):  # cut at an abbreviation's point ("a B.S. in …")
        return ""
    if len(words) == 1 and words[0].lower() in {"one", *_NUMBER_WORDS}:
        return ""  # "consists of one or more clauses" cut at "or": no answer
    return text[0].upper() + text[1:]


def _given_away(answer: str, subject: str) -> bool:
    """Whether the question already says the answer: every content word of the answer is
    in the subject."""
    said = {w.lower() for w in _WORD.findall(subject)}
    words = {w.lower() for w in _WORD.findall(answer)} - _STOP_WORDS
    return not words or words <= said


def teacher_questions(
    chunks: Iterable[Chunk], client, model: str, n: int = 100, seed: int = 0
) -> tuple[list[Question], int]:
    """Up to n teacher-written questions and how many replies were rejected (unparsable
    or not self-contained). `client` is an `openai.OpenAI` (any compatible endpoint)."""
    pool = [c for c in chunks if c.entity and len(c.text) >= 200]
    random.Random(seed).shuffle(pool)
    questions, rejected, asked = [], 0, set()
    for chunk in pool:
        if len(questions) >= n:
            break
        text = chunk.text[:4000]
        dated = bool(_PERIOD.search(text))
        prompt = TEACHER_PROMPT.format(
            entity=chunk.entity, doc=chunk.doc, text=text, period=_TEACHER_PERIOD if dated else ""
        )
        reply = client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": prompt}], temperature=0
        )
        pair = _parse_pair(reply.choices[0].message.content or "")
        if (
            pair is None
            or pair[0] in asked
            or not is_self_contained(pair[0], chunk.entity, period=dated)
        ):
            rejected += 1
            continue
        asked.add(pair[0])
        questions.append(question_from(pair[0], pair[1], chunk, chunk.text, f"teacher:{model}"))
    return questions, rejected


def question_from(text: str, answer: str, chunk: Chunk, evidence: str, source: str) -> Question:
    """A synthesized question on `chunk`, its golden evidence the passage `evidence` there;
    `source` says what made it ("offline-action", a pack's kind, "teacher:<model>")."""
    return Question(
        id=question_id(f"{chunk.id} {text}"),
        question=text,
        answer=answer,
        entity=chunk.entity,
        evidence=[Evidence(text=evidence, doc=chunk.doc, page=chunk.page, chunk_ids=[chunk.id])],
        golden_chunk_ids=[chunk.id],
        meta={"source": source},
    )


def _parse_pair(content: str) -> tuple[str, str] | None:
    match = re.search(r"\{.*\}", content, re.DOTALL)
    try:
        data = json.loads(match.group(0)) if match else None
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict):
        return None
    question, answer = (
        str(data.get("question") or "").strip(),
        str(data.get("answer") or "").strip(),
    )
    return (question, answer) if question and answer else None


# A phrase ending in one of these is a clause cut short ("primary factors that").
DANGLING_WORDS = frozenset("that which of the and or in for to by as its their".split())


def sentence_subject(what: str) -> str:
    """A sentence's subject as a question writes it mid-sentence: the first word in lower
    case, unless the next is capitalised too, a name ("Intelligent Cloud revenue")."""
    words = what.split()
    if len(words) > 1 and words[1][:1].isupper():
        return what
    return lower_first(what)


def lower_first(label: str) -> str:
    """`label` as written mid-sentence: an ordinary capitalised first word lowered; acronyms
    ("PP&E", "EBITDA") kept as they are."""
    first, _, rest = label.partition(" ")
    if first[:1].isupper() and first[1:].islower():
        first = first.lower()
    return f"{first} {rest}".strip()
