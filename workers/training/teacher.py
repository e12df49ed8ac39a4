"""Cold-start teachers: correct trajectories for the student to imitate before RL.

The scripted teacher needs no model and knows no domain. It writes the searches a student
could learn to write from the question alone:
1. the entity and period the question names, plus the question's own key words that the
   golden chunk also uses ("revenue", "dividend");
2. if that does not reach a golden chunk, a second search: entity and period plus the
   golden chunk's most telling words — weighted by how often the chunk uses them and how
   rare they are in the corpus, but never words so rare (a handful of chunks) or so
   specific (bare numbers) that no student could guess them — added one at a time until
   BM25 ranks a golden chunk among the results.
Then it answers with the ground truth. A question no such search reaches gets no
trajectory: only correct ones are kept.

Trajectories are built token by token through the same engine and search tool as
rollouts, so the student is taught exactly the sequences it will produce and see.
"""

import math
import re
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
    max_terms: int = 6
    min_df: int = 3  # words in fewer chunks than this are too specific to be learned

    def _idf(self, stem: str) -> float:
        """How rare, and so how telling, a word is in the corpus."""
        return math.log(1 + len(self.index) / (1 + self.index.document_frequency(stem)))

    def base_query(self, question: Question) -> str:
        """What the question itself says about where the answer is: entity and period."""
        periods = dict.fromkeys(m.group(0) for m in _PERIOD.finditer(question.question))
        return " ".join([question.entity or "", *periods]).strip()

    def _words(self, text: str, exclude: set[str]) -> dict[str, tuple[str, int]]:
        """stem -> (first surface form, count) for learnable words of `text`."""
        found: dict[str, tuple[str, int]] = {}
        for word in _WORD.findall(text):
            stems = tokenize(word)
            if not stems or word.isdigit() or stems[0] in exclude:
                continue
            if self.index.document_frequency(stems[0]) < self.min_df:
                continue
            surface, count = found.get(stems[0], (word, 0))
            found[stems[0]] = (surface, count + 1)
        return found

    def _hits_golden(self, query: str, golden: set[str]) -> bool:
        return bool(
            golden & {h.chunk_id for h in self.index.search(query, self.results_per_search)}
        )

    def queries(self, question: Question) -> list[str] | None:
        """One or two searches that retrieve a golden chunk, or None when none can."""
        golden = set(question.golden_chunk_ids)
        if not golden:
            return None
        base = self.base_query(question)
        exclude = set(tokenize(base))
        golden_text = " ".join(self.index.chunk(c).text for c in sorted(golden))
        in_golden = self._words(golden_text, exclude)
        shared = [
            surface
            for stem, (surface, _) in self._words(question.question, exclude).items()
            if stem in in_golden
        ]
        first = " ".join([base, *shared[: self.max_terms]]).strip()
        if first and self._hits_golden(first, golden):
            return [first]
        ranked = sorted(in_golden, key=lambda s: (-in_golden[s][1] * self._idf(s), s))
        second = base
        for stem in ranked[: self.max_terms]:
            second = f"{second} {in_golden[stem][0]}".strip()
            if self._hits_golden(second, golden):
                return [first, second] if first and first != base else [second]
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
            engine.run_search(trajectory, query, k or engine.limits.results_per_search)
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
