"""Cold-start teachers: correct trajectories for the student to imitate before RL.

The scripted teacher needs no model and knows no domain. For each question it writes the
queries a student could learn to write from the question alone: the entity and period the
question names, plus the golden chunk's most distinctive words — added one at a time,
rarest in the corpus first, until BM25 ranks a golden chunk among the results. Then it
answers with the ground truth. A question whose golden chunks no such query reaches gets
no trajectory (only correct ones are kept).

Trajectories are built token by token through the same engine and search tool as
rollouts, so the student is taught exactly the sequences it will produce and see.
"""

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from workers.agent.hf_engine import HFRolloutEngine
from workers.agent.protocol import ANSWER_CLOSE, ANSWER_OPEN, SEARCH_CLOSE, SEARCH_OPEN
from workers.agent.trajectory import MODEL, PROMPT, Trajectory
from workers.documents.questions import Question
from workers.search.index import SearchIndex, tokenize

_WORD = re.compile(r"[A-Za-z][A-Za-z&'-]{2,}|\d{4}")
_PERIOD = re.compile(
    r"\b(?:FY\s?\d{2,4}|Q[1-4]\s?(?:FY)?\s?\d{2,4}|(?:19|20)\d{2}|first|second|third|fourth)\b",
    re.IGNORECASE,
)


@dataclass
class ScriptedTeacher:
    index: SearchIndex
    results_per_search: int = 3
    max_terms: int = 8
    max_searches: int = 2

    def __post_init__(self) -> None:
        # Document frequency of each stemmed word: how rare, and so how telling, it is.
        self._df: Counter[str] = Counter()
        for chunk in self.index.chunks:
            self._df.update(set(tokenize(chunk.text)))
        self._n = max(len(self.index), 1)

    def _idf(self, stem: str) -> float:
        return math.log(1 + self._n / (1 + self._df.get(stem, 0)))

    def base_query(self, question: Question) -> str:
        """What the question itself says about where the answer is: entity and period."""
        periods = dict.fromkeys(m.group(0) for m in _PERIOD.finditer(question.question))
        return " ".join([question.entity or "", *periods]).strip()

    def distinctive_words(self, text: str, exclude: set[str]) -> list[str]:
        """The chunk's words, rarest in the corpus first (one surface form per stem)."""
        seen: dict[str, str] = {}
        for word in _WORD.findall(text):
            stems = tokenize(word)
            if stems and stems[0] not in exclude and stems[0] not in seen:
                seen[stems[0]] = word
        ranked = sorted(seen, key=lambda stem: (-self._idf(stem), stem))
        return [seen[stem] for stem in ranked]

    def queries(self, question: Question) -> list[str] | None:
        """Queries that together retrieve a golden chunk, or None when none can."""
        golden = set(question.golden_chunk_ids)
        if not golden:
            return None
        base = self.base_query(question)
        queries: list[str] = []
        for chunk_id in sorted(golden)[: self.max_searches]:
            exclude = set(tokenize(base))
            words = self.distinctive_words(self.index.chunk(chunk_id).text, exclude)
            query = base
            for word in words[: self.max_terms]:
                query = f"{query} {word}".strip()
                hits = self.index.search(query, k=self.results_per_search)
                if golden & {h.chunk_id for h in hits}:
                    return [*queries, query]
            queries.append(query)
        return None

    def segments(self, question: Question) -> list[str] | None:
        """The model-side text of the teacher's trajectory, one string per turn."""
        queries = self.queries(question)
        if queries is None:
            return None
        return [
            *(f"{SEARCH_OPEN}{q}{SEARCH_CLOSE}" for q in queries),
            f"{ANSWER_OPEN}{question.answer}{ANSWER_CLOSE}",
        ]


def forced_trajectory(
    engine: HFRolloutEngine, question: str, segments: Sequence[str], k: int | None = None
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
            engine._run_search(trajectory, query, k or engine.limits.results_per_search)
        elif segment.endswith(ANSWER_CLOSE):
            trajectory.answer = segment[len(ANSWER_OPEN) : -len(ANSWER_CLOSE)]
            trajectory.finish_reason = "answer"
    if tokenizer.eos_token_id is not None:
        trajectory.append([tokenizer.eos_token_id], MODEL, [0.0])
    trajectory.meta["teacher"] = "scripted"
    return trajectory


def teacher_trajectories(
    engine: HFRolloutEngine, teacher: ScriptedTeacher, questions: Sequence[Question]
) -> dict[str, Trajectory]:
    """One correct teacher trajectory per question it can solve, keyed by question id."""
    found = {}
    for question in questions:
        segments = teacher.segments(question)
        if segments is None:
            continue
        trajectory = forced_trajectory(engine, question.question, segments)
        if set(trajectory.retrieved_chunk_ids) & set(question.golden_chunk_ids):
            found[question.id] = trajectory
    return found
