"""Cold-start teachers: correct trajectories for the student to imitate before RL.

The scripted teacher needs no model and knows no domain. It writes the searches a student
could learn to write from the question alone, and that generalize to entities it never saw.
Each is scoped to the documents the question names ("[3M] …": the entity as the question
writes it; with `scope_years`, a filing's convention, "[3M 2018] …" and the latest year it
asks about), which the student learns by copying, and which keeps other entities' documents
that share the question's words out of the results:
1. the question, as written;
2. when that misses (or always, with `refine_always`) and `refine_search` is on, the
   question's key terms alone (the scope kept): its words less the entity, the years and
   the words most questions share ("what", "was", "report": `boilerplate`, counted over
   the question pool) and its instructions ("Answer in USD millions.": `asked`), so the row
   or concept asked about weighs in the ranking. The student learns to search again,
   shorter, when its first results do not hold the answer (or, always, to search twice:
   it cannot see a miss);
3. with `section_search`, when the question names the part of its document the evidence is
   on ("… shown in the cash flow statement"), instead of 2.: the key terms within the
   pages whose heading holds that phrase of the question: "[3M 2018 | cash flow statement]
   capital expenditure". Always, found or not: the habit is "look where the question says", and
   the words are copied from the question, so they carry to a company the student never
   saw (`section_words`). With few customer questions naming a part, `name_sections` gives
   synthetic questions on such pages one of the customer's own sentences that name it
   ("Base your judgments on the balance sheet."), so the copying is taught more often;
4. optionally (`heading_search`), the key terms again, within the pages whose heading
   names the evidence's kind of page: "[3M 2018 | cash] capital expenditure" (the search
   tool's page filter). The word is the first in a golden page's heading that names a
   kind of page, not a company: one the headings of most entities hold and few pages do
   ("cash", "balance", "segment"; `page_kinds`), one the first search missed if it can.
   Pages of one kind share their headings across entities, so the student can learn
   which kind a question needs: knowledge a search with the question lacks, and one word
   of it, which it can learn, rather than a heading, which it memorizes.
Then it answers with the ground truth, a yes/no truth with its "Yes" or "No" alone (with
`quoted_answers`, a lookup synthesized from a table with its row's label and figure). A
question neither search reaches gets no trajectory: only correct ones are kept
(`scope_drills` still teaches its searches). A question synthesized from a table
(`readable_answers`) also needs in the results the figure it asks for, or the two figures
it compares: the search tool shows each hit in part (its share of the result budget), and
an answer the student cannot read there teaches it to write figures it never saw, not to
copy the one it read. A customer's own question is kept without that check: its answer may
be worked out from the figures shown (a ratio, a margin), which a larger student can learn.

Trajectories are built token by token through the same engine and search tool as
rollouts, so the student is taught exactly the sequences it will produce and see.
"""

import random
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace

from engine.agent.hf_engine import RolloutEngine
from engine.agent.protocol import (
    ANSWER_CLOSE,
    ANSWER_OPEN,
    SEARCH_CLOSE,
    SEARCH_OPEN,
    written_query,
)
from engine.agent.trajectory import MODEL, PROMPT, TOOL, Trajectory
from engine.documents.questions import Question
from engine.packs.filings.names import reading_statement_names
from engine.packs.filings.teaching import latest_year, statement_named
from engine.rewards.quantities import extract_quantities, same_quantity, scale_hint
from engine.rewards.text import content_terms, polarity
from engine.search.index import (
    HEADING_CHARS,
    SearchIndex,
    mend_split_letters,
    tokenize,
)

_WORD = re.compile(r"[A-Za-z0-9]*[A-Za-z][A-Za-z0-9&'.-]*[A-Za-z0-9]|[A-Za-z]")  # "3M" too
_YEAR = re.compile(r"(?:19|20)\d{2}")
_DIGIT = re.compile(r"\d")
_POSSESSIVE = re.compile(r"['’]s?$")
_CLAUSE = re.compile(r"(?<=[.!?:])\s+")  # sentences, and a preamble ending in a colon
# A synthesized reason is taught when this share of its words is shown: the judge credits
# an answer holding 60 % of the truth's words, and the student copies what it reads.
CAUSE_SHOWN = 0.8
# The longest phrase of a question taken as naming a part of the document ("statement of
# cash flows" is four words): longer runs are sentences that happen to share a heading's words.
SECTION_WORDS = 4


@dataclass
class ScriptedTeacher:
    index: SearchIndex
    results_per_search: int = 3
    first_results_per_search: int = 0  # the first search's hits (0: results_per_search)
    # The scope names the latest year the question asks about beside its entity (`scope`):
    # a filing's convention, which names nothing in most documents (the filings pack's
    # habit: `packs.filings.teaching.latest_year`).
    scope_years: bool = False
    # Failing a heading phrase, the section search reads a financial statement the question
    # names by another of its names ("the P&L"; `section`): the filings pack's habit
    # (`packs.filings.teaching.statement_named`).
    statement_names: bool = False
    # A second search within the evidence's kind of page (3. above): what a student cannot
    # find with the question's words, if it learns which kind a question needs.
    heading_search: bool = True
    refine_search: bool = True
    # The key-terms search (2. above) after every first search, found or not: a student
    # cannot see whether its results hold the evidence, so "search again after a miss"
    # taught only on misses is learnt by some runs and not by others.
    refine_always: bool = False
    # The second search writes the question's key terms (2. above). Off, it is the question
    # again within its scope, written as the scope alone ("[3M]", or "[]" where the question
    # names no documents): the question's next hits, as the tool shows only new ones. A
    # small student copies a scope and two brackets without fail where it garbles a list of
    # key terms after 400 tokens of results (docs/results.md, "A second search the student
    # can write": recall up, accuracy down, not adopted).
    refine_terms: bool = True
    # The key terms within the part of the document the question names (3. above).
    section_search: bool = False
    # The first search carries the scope (1. above); off, it is the question alone and the
    # scope goes to the second search (TrainConfig.scoped_first_search).
    scoped_first_search: bool = True
    # A lookup synthesized from a table is answered with its row's label, then the figure
    # as the row writes it ("Total assets 236,495 million"), not the figure alone. Having
    # written the label it read, a small student finds the figure where the label is
    # followed by it in its results, a copy it makes, rather than the row it must pick
    # without a word written: a student shown the figure without the label seldom copies it
    # (docs/packs.md#quoted-answers).
    quoted_answers: bool = False
    # Stems that most questions share (question words, templates): not key terms.
    boilerplate: frozenset[str] = frozenset()
    min_df: int = 3  # words in fewer chunks than this are too specific to be learned
    max_df_share: float = 0.3  # words in more chunks than this share tell nothing
    # A page kind's word is in the headings of at least this share of the entities, and of
    # at most this share of all pages ("consolidated", "inc" and months are everywhere).
    kind_entity_share: float = 0.5
    kind_page_share: float = 0.02
    _pages: dict | None = field(default=None, init=False, repr=False)
    _page_kinds: dict[str, int] = field(default_factory=dict, init=False, repr=False)

    def years(self, question: Question) -> list[str]:
        """The years a question names, in order."""
        return list(dict.fromkeys(_YEAR.findall(question.question)))

    def _learnable(self, stem: str) -> bool:
        df = self.index.document_frequency(stem)
        return self.min_df <= df <= self.max_df_share * len(self.index)

    def _read_pages(self) -> None:
        """Chunk texts by page, and the page kinds: heading words (stems) that the pages of
        many entities open with, and few pages do."""
        if self._pages is not None:
            return
        self._pages = {}
        entity_of = {}
        for c in self.index.chunks:
            self._pages.setdefault((c.doc, c.page), []).append(c.text)
            entity_of[c.doc] = c.entity or c.doc
        entities_with: dict[str, set[str]] = {}
        pages_with: Counter = Counter()
        for (doc, _), texts in self._pages.items():
            for stem in set(tokenize(mend_split_letters(texts[0][:HEADING_CHARS]))):
                entities_with.setdefault(stem, set()).add(entity_of[doc])
                pages_with[stem] += 1
        n_entities = len(set(entity_of.values()))
        # The most shared first: one word per kind of page, the same for every entity.
        self._page_kinds = {
            stem: len(entities)
            for stem, entities in entities_with.items()
            if len(entities) >= self.kind_entity_share * n_entities
            and pages_with[stem] <= self.kind_page_share * len(self._pages)
            and not stem.isdigit()
        }

    def entity_mention(self, question: Question) -> str:
        """The entity as the question writes it ("JPM", "Coca Cola"); "" when the question
        does not name it. The student can copy what it reads, but cannot know the canonical
        name of an entity it never saw, nor the label of one a question leaves unnamed (a
        manual's questions rarely name their page): a scope taught from the label alone
        teaches a habit no question can feed."""
        entity = question.entity or ""
        names = {w.lower() for w in re.findall(r"\w+", entity)}
        joined = re.sub(r"\W", "", entity.lower())
        mention: list[str] = []
        for word in question.question.split():
            word = _POSSESSIVE.sub("", word.strip(',.?:;()"'))
            bare = re.sub(r"\W", "", word.lower())
            if bare and (bare in names or (len(bare) >= 3 and joined.startswith(bare))):
                mention.append(word)
            elif mention:
                break
        return " ".join(mention)

    def learn_boilerplate(self, questions: Sequence[Question], share: float = 0.2) -> None:
        """Stems in at least `share` of `questions` are how questions are asked, not what."""
        counts = Counter(s for q in questions for s in set(tokenize(q.question)))
        self.boilerplate = frozenset(s for s, n in counts.items() if n >= share * len(questions))

    def names(self, question: Question) -> set[str]:
        """The stems of the question's entity, as the data names it and as the question does."""
        return set(tokenize(question.entity or "")) | set(tokenize(self.entity_mention(question)))

    def instructions(self, question: Question) -> list[str]:
        """The sentences of the question that ask nothing of one company or period ("Answer
        in USD millions.", "Base your judgments on the balance sheet.": no "?", no digit, no
        word of its entity)."""
        names = self.names(question)
        return [
            s
            for s in _CLAUSE.split(question.question.strip())
            if not ("?" in s or _DIGIT.search(s) or set(tokenize(s)) & names)
        ]

    def asked(self, question: Question) -> str:
        """The question less its `instructions`: what is left names what is asked (the whole
        question when every sentence of it is one)."""
        told = set(self.instructions(question))
        kept = [s for s in _CLAUSE.split(question.question.strip()) if s not in told]
        return " ".join(kept) if kept and told else question.question

    def key_terms(self, question: Question) -> str:
        """What the question asks (`asked`) less its entity, years and boilerplate, words in
        order, once each."""
        skip = self.names(question) | self.boilerplate
        words: list[str] = []
        for word in _WORD.findall(self.asked(question)):
            stems = tokenize(word)
            if not stems or stems[0] in skip or _YEAR.search(word) or word.lower() in words:
                continue
            words.append(word.lower())
        return " ".join(words)

    def page_heading(self, chunk_id: str) -> str:
        """The heading of a chunk's page: its section's title and its page's first lines, as
        a page filter reads them ("Balance Shee t" as "Balance Sheet")."""
        self._read_pages()
        chunk = self.index.chunk(chunk_id)
        heading = self._pages[(chunk.doc, chunk.page)][0] if chunk.page is not None else ""
        return mend_split_letters(f"{chunk.section or ''}\n{heading[:HEADING_CHARS]}")

    def is_page_kind(self, stem: str) -> bool:
        self._read_pages()
        return stem in self._page_kinds

    def page_kind(self, chunk_id: str) -> list[str]:
        """The words of a chunk's page heading that name a kind of page, once each, those
        more entities' headings hold first."""
        shared: dict[str, int] = {}
        for word in _WORD.findall(self.page_heading(chunk_id)):
            stems = tokenize(word)
            if stems and stems[0] in self._page_kinds:
                shared.setdefault(word.lower(), self._page_kinds[stems[0]])
        return sorted(shared, key=lambda word: -shared[word])  # stable: heading order next

    def _shown(self, query: str, first: bool = False) -> set[str]:
        k = (first and self.first_results_per_search) or self.results_per_search
        # With the pack's habit of writing a statement's other names, the tool reads them.
        index = reading_statement_names(self.index) if self.statement_names else self.index
        return {h.chunk_id for h in index.search(query, k)}

    def scope(self, question: Question) -> str:
        """`"[3M] "`: the entity as the question names it, when it names documents; else no
        scope. With `scope_years`, `"[3M 2018] "`: the latest year it asks about too (the
        tool falls back to the entity's documents when none has the year): a filing reports
        its year beside earlier ones, so "between FY2021 and FY2022" is read in the FY2022
        filing."""
        year = latest_year(question.question) if self.scope_years else []
        named = " ".join([self.entity_mention(question), *year]).strip()
        return f"[{named}] " if named and self.index.documents_named(named) else ""

    def queries(self, question: Question) -> list[str] | None:
        """The drilled searches (`drilled_searches`), then (with `heading_search`) a heading
        search, as far as they retrieve golden chunks; None when none does."""
        golden = set(question.golden_chunk_ids)
        if not golden:
            return None
        first, *refined = drilled = self.drilled_searches(question)
        searches, found = [first], golden & self._shown(first, first=True)
        if refined and golden & (found | self._shown(refined[0])):
            return drilled
        if not self.heading_search:
            return searches if found else None
        # The page-kind search comes always when one works, so the student learns one habit:
        # preferably one that adds missing evidence, else one that finds it again.
        missing = [cid for cid in sorted(golden) if cid not in found]
        names = self.scope(question).strip()[1:-1].strip()
        terms = self.key_terms(question) or question.question
        for wanted, candidates in ((golden - found, missing), (golden, sorted(found))):
            for cid in candidates:
                for word in self.page_kind(cid):
                    second = f"[{names} | {word}] {terms}"
                    if wanted & self._shown(second):
                        return [*searches, second]
        return searches if found else None

    def section_words(self, question: Question) -> list[str]:
        """The phrase of the question naming the part of the document its evidence is on
        (`section`)."""
        return self.section(question)[0]

    def section(self, question: Question) -> tuple[list[str], frozenset[str]]:
        """The phrase of the question that names the part of the document its evidence is
        on, word for word: "cash flow statement", "statement of cash flows", "balance
        sheet". The first run of the question's words (no punctuation between them, short
        words inside kept) that the heading of a golden chunk's page holds, one of them
        naming a kind of page (`page_kind`: a word many entities' headings share), none a
        name or a figure. Copied, not recalled: a student learns to repeat the phrase it
        reads, where it could only memorize a heading the question does not name, and a
        whole phrase is copied sooner than one word of it chosen ("flow"), which a small
        student learns as the commonest one whatever the question says.

        Failing that, with `statement_names`, a financial statement the question names by a
        name no golden heading holds ("the P&L statement" for "Consolidated Statements of
        Income") is that name, as written: the search tool's page filter reads it as any of
        the statement's names.

        Returned with the stems the golden page's heading holds of it (of the name the
        heading gives a statement), or `([], frozenset())`."""
        skip = self.names(question)
        headings = [set(tokenize(self.page_heading(c))) for c in sorted(question.golden_chunk_ids)]
        for held in headings:

            def heading_word(word: str, held: set[str] = held) -> bool:
                stems = set(tokenize(word))
                return stems <= held and not stems & skip and not _DIGIT.search(word)

            for run in _word_runs(question.question, heading_word):
                if phrase := self._phrase_or_nothing(run):
                    return phrase, frozenset(tokenize(" ".join(phrase)))
        for held in headings if self.statement_names else []:
            if named := statement_named(question.question, held):
                return named
        return [], frozenset()

    def _phrase_or_nothing(self, run: list[str]) -> list[str]:
        """`run` less its trailing short words, when one of its words names a kind of page
        and it is no longer than `SECTION_WORDS`; else nothing."""
        while run and not tokenize(run[-1]):
            run = run[:-1]
        kind = any(self.is_page_kind(s) for w in run for s in tokenize(w))
        return run if kind and len(run) <= SECTION_WORDS else []

    def section_query(self, question: Question, scope: str | None = None) -> str | None:
        """`"[3M 2018 | cash flow statement] capital expenditure"`: the key terms within the
        pages the question names (`section_words`), under `scope`'s names (the question's own
        by default); None when it names none, or no scope."""
        words = self.section_words(question) if self.section_search else []
        names = (scope if scope is not None else self.scope(question)).strip()[1:-1].strip()
        if not (words and names):
            return None
        return f"[{names} | {' '.join(words)}] {self.key_terms(question) or question.question}"

    def drilled_searches(self, question: Question) -> list[str]:
        """The searches a student should make for a question whether or not they reach its
        evidence: the scoped question; then, where the question names the part of the
        document to look in (`section_query`), the key terms there; else its key terms
        when the first misses the golden chunks, or always with `refine_always` (and
        `refine_search` on). Searching again is the habit, not the luck."""
        first = (self.scope(question) if self.scoped_first_search else "") + question.question
        golden = set(question.golden_chunk_ids)
        if not golden:
            return [first]
        if section := self.section_query(question):
            return [first, section]
        if not self.refine_always and golden & self._shown(first, first=True):
            return [first]
        refined = self.refine_query(question)
        return [first, refined] if refined else [first]

    def refine_query(self, question: Question, scope: str | None = None) -> str | None:
        """`"[3M 2018] capital expenditure"`: the key terms under `scope` (the question's own
        by default), or without `refine_terms` the question itself under it; None when
        `refine_search` is off or the question has no key terms."""
        scope = scope if scope is not None else self.scope(question)
        if not self.refine_search:
            return None
        if not self.refine_terms:
            return scope + question.question
        terms = self.key_terms(question)
        return scope + terms if terms else None

    def segments(self, question: Question) -> list[str] | None:
        """The model-side text of the teacher's trajectory, one string per turn: a search
        of the scoped question is written as its scope alone (`written_query`)."""
        queries = self.queries(question)
        if queries is None:
            return None
        bare = not self.scoped_first_search  # the question written as "[]", not copied
        return [
            *(search_segment(q, question.question, bare) for q in queries),
            f"{ANSWER_OPEN}{self.answer(question)}{ANSWER_CLOSE}",
        ]

    def answer(self, question: Question) -> str:
        """What the teacher answers: the row's quote of a synthesized lookup with
        `quoted_answers`, else `taught_answer`."""
        quoted = question.meta.get("quoted")
        return quoted if self.quoted_answers and quoted else taught_answer(question.answer)


def _word_runs(text: str, keep: Callable[[str], bool]) -> Iterator[list[str]]:
    """The runs of `text`'s words that `keep` accepts, lowercased, in order: a word it
    refuses or punctuation between two words ends a run; a short word ("of", no stems)
    stays inside one but never starts it."""
    run: list[str] = []
    end = 0
    for match in _WORD.finditer(text):
        word = match.group()
        if run and (text[end : match.start()].strip() or (tokenize(word) and not keep(word))):
            yield run
            run = []
        end = match.end()
        if run or (tokenize(word) and keep(word)):
            run.append(word.lower())
    if run:
        yield run


@dataclass(frozen=True)
class SectionPhrase:
    """A sentence of a customer's question that names the part of the document to answer
    from ("Base your answer on the balance sheet."): its text, the stems of the page-kind
    words it holds (`section_words`) and whether it comes before the question (it ends in
    a colon) or after it."""

    text: str
    stems: frozenset[str]
    before: bool


def section_phrases(teacher: ScriptedTeacher, questions: Sequence[Question]) -> list[SectionPhrase]:
    """The sentences in which `questions` (the customer's) name the part of the document
    their evidence is on, once each: among their `instructions`, so about no one company or
    period, and any question can carry them."""
    phrases: dict[str, SectionPhrase] = {}
    for question in questions:
        _, held = teacher.section(question)  # a statement as its heading names it
        stems = {s for s in held if teacher.is_page_kind(s)}
        if not stems:
            continue
        for sentence in teacher.instructions(question):
            words = set(tokenize(sentence))
            if not sentence[:1].isupper() or "defin" in words:
                continue  # a clause of another sentence, or a definition of what it asks
            if held := frozenset(stems & words):
                phrases.setdefault(sentence, SectionPhrase(sentence, held, sentence.endswith(":")))
    return list(phrases.values())


def name_sections(
    teacher: ScriptedTeacher,
    questions: Sequence[Question],
    phrases: Sequence[SectionPhrase],
    seed: int = 0,
) -> list[Question]:
    """`questions` (synthesized), each whose evidence is on a kind of page that a customer's
    phrase names given that phrase, before or after it as the customer wrote it ("Using
    the cash flow statement, …"): the student then meets the section words it must copy
    after the bar in hundreds of questions, not in the customer's few dozen, and learns to
    copy them rather than recall the common ones. The rest are returned as they were."""
    rng = random.Random(seed)
    named = []
    for question in questions:
        kinds = {
            stem
            for chunk_id in question.golden_chunk_ids
            for word in teacher.page_kind(chunk_id)
            for stem in tokenize(word)
        }
        fitting = [p for p in phrases if p.stems <= kinds]
        if not fitting:
            named.append(question)
            continue
        phrase = rng.choice(fitting)
        text = question.question
        if phrase.before:
            first, _, rest = text.partition(" ")
            # "What was …" reads on after a colon as "what was …"; a name stays as written.
            entity_words = {w.lower() for w in re.findall(r"\w+", question.entity or "")}
            if first.isalpha() and first[1:].islower() and first.lower() not in entity_words:
                first = first.lower()
            text = f"{phrase.text} {first} {rest}".strip()
        else:
            text = f"{text} {phrase.text}"
        meta = {**question.meta, "section_phrase": phrase.text}
        named.append(replace(question, question=text, meta=meta))
    return named


def taught_answer(truth: str) -> str:
    """The answer the teacher writes: the truth, or only its "Yes" or "No" when it opens
    with one. The explanation after a yes or no is the question writer's reasoning, often
    over figures the results do not show; a student taught to write it learns to write
    what it never read, where the yes or no alone answers the question asked."""
    said = polarity(truth)
    return said.capitalize() if said else truth


def forced_trajectory(
    engine: RolloutEngine, question: str, segments: Sequence[str], k: int | None = None
) -> Trajectory:
    """A trajectory whose model turns are given: each `</search>` turn runs the real tool and
    appends its results as tool tokens, exactly as in a rollout. Model tokens carry a 0.0
    log-prob (no engine sampled them); SFT needs only their mask."""
    tokenizer = engine.tokenizer
    trajectory = Trajectory(question=question, model_name="teacher")
    trajectory.append(engine.prompt_ids(question), PROMPT)
    for segment in segments:
        ids = tokenizer.encode(segment, add_special_tokens=False)
        trajectory.append(ids, MODEL, [0.0] * len(ids))
        trajectory.text += segment
        if segment.endswith(SEARCH_CLOSE):
            query = segment[len(SEARCH_OPEN) : -len(SEARCH_CLOSE)]
            engine.run_search(trajectory, query, k)
        elif segment.endswith(ANSWER_CLOSE):
            trajectory.answer = segment[len(ANSWER_OPEN) : -len(ANSWER_CLOSE)]
            trajectory.finish_reason = "answer"
    if tokenizer.eos_token_id is not None:
        trajectory.append([tokenizer.eos_token_id], MODEL, [0.0])
    trajectory.meta["teacher"] = "scripted"
    return trajectory


def teacher_trajectories(
    engine: RolloutEngine,
    teacher: ScriptedTeacher,
    questions: Sequence[Question],
    readable_answers: bool = False,
) -> dict[str, Trajectory]:
    """One correct teacher trajectory per question it can solve, keyed by question id: its
    searches show a golden chunk, and with `readable_answers` its results also show every
    figure its answer states."""
    found = {}
    for question in questions:
        segments = teacher.segments(question)
        if segments is None:
            continue
        trajectory = forced_trajectory(engine, question.question, segments)
        if not set(trajectory.retrieved_chunk_ids) & set(question.golden_chunk_ids):
            continue
        if readable_answers and not answer_readable(
            question, results_text(engine.tokenizer, trajectory)
        ):
            continue
        found[question.id] = trajectory
    return found


def results_text(tokenizer, trajectory: Trajectory) -> str:
    """What the tool showed the model in a trajectory: its tool tokens, decoded."""
    ids = [t for t, p in zip(trajectory.token_ids, trajectory.producers, strict=True) if p == TOOL]
    return tokenizer.decode(ids)


def answer_readable(question: Question, shown: str) -> bool:
    """Whether every figure the answer states, or is worked out from (a synthesized
    comparison's `meta["reads"]`), is among the figures `shown` ("$1,577 million" and a
    statement's "(1,577)" under "in millions" are one), and a synthesized reason ("what
    drove…") is shown in its words. Any other answer without figures (a yes or no, a name)
    passes: only figures and copied words can be checked this simply."""
    if question.meta.get("source") == "offline-completion":  # the blanked word, to copy
        return re.search(rf"(?<!\w){re.escape(question.answer)}(?!\w)", shown) is not None
    if question.meta.get("source") == "offline-cause":
        said = content_terms(question.answer, keep_numbers=True)
        if len(said & content_terms(shown, keep_numbers=True)) < CAUSE_SHOWN * len(said):
            return False
    hint = scale_hint(question.question)
    # A yes/no comparison is worked out from figures its answer does not state.
    stated = " ; ".join([question.answer, *question.meta.get("reads", [])])
    wanted = extract_quantities(stated, hint)
    if not wanted:
        return True
    seen = extract_quantities(shown)
    return all(any(same_quantity(w, s) for s in seen) for w in wanted)


def scope_drills(
    engine: RolloutEngine,
    teacher: ScriptedTeacher,
    questions: Sequence[Question],
    per_question: int = 2,
    seed: int = 0,
    taught: frozenset[str] = frozenset(),
) -> list[Trajectory]:
    """Extra cold-start examples of the first search: for each question, the real one
    unless its id is in `taught` (a whole teacher trajectory already shows it), and for each
    scoped one, `per_question` copies whose entity and years are swapped for made-up ones.
    The real one, scoped or not, as the question asks it: drilled on scoped questions alone,
    a student scopes those that name no entity to a word of theirs. The real one goes on to the
    key-terms search when its first misses (`drilled_searches`), so that the student learns
    to search again after a miss from every question, not only from those the second search
    happens to answer. A training set names few
    companies (16 here), and a student taught only on them writes one of their names into
    the scope of a question about another ("[Pfizer]" for PepsiCo); on names it has never
    seen, it can only learn to copy what it reads. Half the made-up names begin as a
    training company's does ("Pfidger", "Besled"), so that the first letters of a name
    never decide the rest. Each drill stops at its last `</search>`: a made-up scope names
    no document, and a question the teacher could not answer has no true continuation.
    Without `scoped_first_search` (the default path) a copy's first search is the bare
    question, as the teacher's is, and the made-up name goes to its second search."""
    rng = random.Random(seed)
    known = sorted({m for q in questions if (m := teacher.entity_mention(q))})
    words = _name_words(teacher.index, rng)
    drills = []
    for question in questions:
        if question.id not in taught:  # scoped or not: the first search as the question asks it
            searches = teacher.drilled_searches(question)
            bare = not teacher.scoped_first_search
            drills.append(_search_turns(engine, question.question, searches, bare))
        if not teacher.scope(question):
            continue
        mention, years = teacher.entity_mention(question), teacher.years(question)
        if mention not in question.question:
            continue  # nothing to swap
        for _ in range(per_question):
            name = _made_up_name(rng, known, words)
            while teacher.index.documents_named(name):  # made up: it must name no document
                name = _made_up_name(rng, known, words)
            new_years = {year: str(rng.randint(2000, 2030)) for year in years}
            # One pass, so a year swapped in is never swapped again.
            text = _YEAR.sub(
                lambda m, new_years=new_years: new_years.get(m.group(), m.group()),
                question.question.replace(mention, name),
            )
            named = " ".join([name, *(latest_year(text) if teacher.scope_years else [])])
            swapped = replace(question, question=text, entity=name)
            # The section the question names, else (with refine_always) its key terms or
            # (without refine_terms) the question again, within the made-up scope.
            second = teacher.section_query(swapped, f"[{named}] ")
            if not second and teacher.refine_always:
                second = teacher.refine_query(swapped, f"[{named}] ")
            if teacher.scoped_first_search:
                searches = [f"[{named}] {text}", *([second] if second else [])]
            elif second:  # the first search is the bare question; the name goes to the second
                searches = [text, second]
            else:
                continue  # nothing named to copy
            drills.append(_search_turns(engine, text, searches, not teacher.scoped_first_search))
    return drills


_CAPITALS = "ABCDEFGHJKLMNPRSTUVWXZ"


def _name_words(index: SearchIndex, rng: random.Random, n: int = 5000) -> list[str]:
    """Words of the corpus to build made-up names from: names built from a few fixed
    syllables gave the student a prior of their own (it wrote "[Pero]" for PepsiCo)."""
    chunks = rng.sample(index.chunks, min(len(index.chunks), 400))
    found = {w for c in chunks for w in re.findall(r"\b[a-z]{4,10}\b", c.text.lower())}
    return rng.sample(sorted(found), min(n, len(found))) or ["acme", "globex", "initech"]


def _made_up_name(rng: random.Random, known: Sequence[str], words: Sequence[str]) -> str:
    """A company-like name of one of the shapes filings use, from the corpus's words:
    "Harbor", "Pension Lattice", "KQM", "4T"; or, half the time when `known` names are given,
    one that begins with a known name's first two or three letters and goes on as another
    word does ("Pfizer" + "ledger" → "Pfidger")."""
    if known and rng.random() < 0.5:
        stem, tail = rng.choice(known)[: rng.randint(2, 3)], rng.choice(words)
        return stem + tail[rng.randint(1, max(1, len(tail) - 3)) :]
    shape = rng.random()
    if shape < 0.2:
        return "".join(rng.choice(_CAPITALS) for _ in range(rng.randint(2, 4)))
    if shape < 0.3:
        return f"{rng.randint(2, 9)}{rng.choice(_CAPITALS)}"
    return " ".join(rng.choice(words).capitalize() for _ in range(rng.choice((1, 1, 2))))


def search_segment(query: str, question: str, bare_question: bool = False) -> str:
    """A search turn as the model writes it: `<search>[3M 2018]</search>` for the scoped
    question, which the engine searches as the scope and the question (protocol 6); with
    `bare_question`, `<search>[]</search>` for the question itself, unscoped."""
    if bare_question and query.strip() == question.strip():
        return f"{SEARCH_OPEN}[]{SEARCH_CLOSE}"
    return f"{SEARCH_OPEN}{written_query(query, question)}{SEARCH_CLOSE}"


def _search_turns(
    engine: RolloutEngine, question: str, queries: Sequence[str], bare_question: bool = False
) -> Trajectory:
    """A trajectory of the prompt and search turns, each but the last followed by its real
    results, nothing after the last: the turns are the only targets."""
    trajectory = Trajectory(question=question, model_name="teacher")
    trajectory.append(engine.prompt_ids(question), PROMPT)
    for i, query in enumerate(queries):
        segment = search_segment(query, question, bare_question)
        ids = engine.tokenizer.encode(segment, add_special_tokens=False)
        trajectory.append(ids, MODEL, [0.0] * len(ids))
        trajectory.text += segment
        if i < len(queries) - 1:
            engine.run_search(trajectory, query)
    trajectory.meta["teacher"] = "scope drill"
    return trajectory
