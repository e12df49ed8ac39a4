"""Trajectory records: one growing token sequence with who produced each token.

Token-in/token-out: the engine appends token ids as they are sampled (model) or encoded
once from tool text (tool), and never re-tokenizes the whole text. The trainer reads
`token_ids`, `loss_mask` and `logprobs` directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from engine.settings import option

# Who produced a token. Harness-forced text (the echo policy's search) counts as TOOL.
PROMPT, MODEL, TOOL = 0, 1, 2

FinishReason = Literal["answer", "max_turns", "max_tokens", "malformed", "no_answer"]


@dataclass(frozen=True)
class SamplingParams:
    """Sampling settings of one rollout call; `seed + i` seeds trajectory i, so a
    trajectory's tokens do not depend on which others share its batch."""

    temperature: float = 1.0
    top_p: float = 1.0
    seed: int = 0


@dataclass(frozen=True)
class Limits:
    """Bounds on one trajectory. Breaking max_turns or max_new_tokens ends it with that
    reason; results longer than max_result_tokens are cut (and counted). A turn (a query
    or the answer) that reaches max_turn_tokens is cut and closed by the engine: the query
    runs as written so far, the answer is taken as written. That keeps a small model's
    greedy loops ("Answer in USD millions. Answer in USD millions. …") from spending the
    whole budget inside one query."""

    SETTINGS_LABEL: ClassVar[str] = "limits"

    max_turns: int = option(4, help="searches per trajectory, malformed ones included")
    max_new_tokens: int = option(512, help="model tokens per trajectory")
    max_result_tokens: int = option(512, help="tokens of one results block")
    results_per_search: int = option(3, help="hits per search")
    max_turn_tokens: int = option(
        0, help="model tokens of one turn; a query cut there runs as written (0: no limit)"
    )
    # Hits of the first search (0: results_per_search). The first search is broad (the
    # question itself, scoped); a later one is narrow (a section, key terms), and its third
    # hit finds more evidence per chunk shown than the first search's does.
    first_results_per_search: int = option(
        0, help="hits of the first search (0: --results-per-search)"
    )
    # Rules of decoding, applied where the agent is used (evaluation, serving), never in the
    # trainer's rollouts, whose log-probs must be the model's own. Those below are written for
    # any documents: a small model decoding greedily loops, writes scopes and terms its
    # question never named, and closes an answer with another turn's tag (`agent.greedy_rules`;
    # the filings pack turns them on, the default path leaves them off).
    loop_guard: bool = option(
        False, help="greedy decoding never writes a run of words three times in a row"
    )
    grounded_scope: bool = option(
        False,
        help="greedy decoding writes only pieces of the question's words into a search's "
        "[scope], beginning with a name of the documents the question names",
    )
    grounded_terms: bool = option(
        False,
        help="greedy decoding writes only the question's words, each once, as a search's terms",
    )
    answer_tag: bool = option(
        False, help="greedy decoding closes an answer with its own tag, no other"
    )
    # An answer writes only figures the question or its results show (`agent.grounding`).
    grounded_figures: bool = option(
        False,
        help="answers write only figures the question or results show (evaluation, serving)",
    )
    # Rules of the filings pack (`engine.packs`): true of annual reports, not of any
    # documents. A run turns them on with its pack; each says why in the pack.
    latest_year_scope: bool = option(
        False,
        help="greedy decoding writes no year into a [scope] but the latest the question names",
    )
    yes_no_answers: bool = option(
        False, help="greedy decoding answers a question that asks yes or no with Yes or No first"
    )
    statement_filter: bool = option(
        False,
        help="greedy decoding searches, after the first search, within the financial statement "
        "the question names",
    )
    answer_form: bool = option(
        False,
        help="greedy decoding answers a question offering two options with one of them, one "
        "opening with a question word never with Yes or No, one asking why in words",
    )
    row_figures: bool = option(
        False,
        help="an answer that begins with a row's label writes that row's first figure "
        "(evaluation, serving)",
    )
    # Not a rule of decoding (rollouts keep it): what the search tool reads a page filter as.
    # Every agent stored before it existed searched so (`upgrade_settings`).
    statement_synonyms: bool = option(
        False,
        help="the search tool reads a page filter naming a financial statement under any of "
        "its names ('P&L' for 'Statements of Operations')",
    )

    @classmethod
    def upgrade_settings(cls, data: dict) -> dict:
        """Limits as stored before two rules were split in two (no `latest_year_scope` or
        `answer_tag` among them): the scope rule then held a scope to the latest year too,
        and the answer-form rule an answer to its own closing tag. Stored before the filings
        pack's statement names left the search index (no `statement_synonyms`): its search
        tool read them, whatever its pack."""
        data = dict(data)
        data.setdefault("latest_year_scope", bool(data.get("grounded_scope")))
        data.setdefault("answer_tag", bool(data.get("answer_form")))
        data.setdefault("statement_synonyms", True)
        return data

    @classmethod
    def stored(cls, data: dict) -> Limits:
        """Limits as an agent.json or a run's settings stored them, older versions' too."""
        return cls(**cls.upgrade_settings(data))

    def hits_for(self, searches_run: int) -> int:
        """Hits shown by a search after `searches_run` searches have run."""
        if not searches_run and self.first_results_per_search:
            return self.first_results_per_search
        return self.results_per_search


@dataclass
class SearchCall:
    """One tool call as the model made it, and what it was shown."""

    query: str
    chunk_ids: list[str] = field(default_factory=list)
    malformed: str | None = None  # why the call could not be run, if it could not
    truncated: bool = False


@dataclass
class Trajectory:
    """A question, the tokens of the agent's attempt, and how it ended."""

    question: str
    token_ids: list[int] = field(default_factory=list)
    producers: list[int] = field(default_factory=list)  # PROMPT / MODEL / TOOL per token
    logprobs: list[float] = field(default_factory=list)  # rollout log-prob; 0.0 if not MODEL
    loss_mask: list[int] = field(default_factory=list)  # 1 for MODEL tokens only
    searches: list[SearchCall] = field(default_factory=list)
    answer: str | None = None
    finish_reason: FinishReason | None = None
    text: str = ""  # everything after the prompt, for people to read
    model_tokens: int = 0  # tokens the model generated (from usage for API models)
    wall_s: float = 0.0
    sampling: SamplingParams | None = None
    model_name: str = ""
    reward: dict[str, float] = field(default_factory=dict)  # per component, once scored
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def finished(self) -> bool:
        return self.finish_reason is not None

    @property
    def prompt_length(self) -> int:
        return next((i for i, p in enumerate(self.producers) if p != PROMPT), len(self.producers))

    @property
    def malformed_calls(self) -> int:
        return sum(1 for s in self.searches if s.malformed)

    @property
    def valid_searches(self) -> list[SearchCall]:
        return [s for s in self.searches if not s.malformed]

    @property
    def retrieved_chunk_ids(self) -> list[str]:
        """Distinct chunks shown to the model, in the order it first saw them."""
        return list(dict.fromkeys(c for s in self.searches for c in s.chunk_ids))

    @property
    def searches_run(self) -> int:
        """Searches that ran (malformed calls did not)."""
        return sum(1 for s in self.searches if s.malformed is None)

    @property
    def answer_mask(self) -> list[int]:
        """1 on the model tokens of the answer's turn (those after the last prompt or tool
        token, when the trajectory ended in an answer), 0 elsewhere."""
        if self.finish_reason != "answer":
            return [0] * len(self.producers)
        start = next(
            (i + 1 for i in range(len(self.producers) - 1, -1, -1) if self.producers[i] != MODEL),
            0,
        )
        return [0] * start + [1] * (len(self.producers) - start)

    def append(self, ids: list[int], producer: int, logprobs: list[float] | None = None) -> None:
        """Append tokens from one producer; only MODEL tokens carry log-probs and loss."""
        if producer == MODEL and (logprobs is None or len(logprobs) != len(ids)):
            raise ValueError("model tokens need one log-prob each")
        self.token_ids.extend(ids)
        self.producers.extend([producer] * len(ids))
        self.logprobs.extend(logprobs if producer == MODEL else [0.0] * len(ids))
        self.loss_mask.extend([1 if producer == MODEL else 0] * len(ids))
        if producer == MODEL:
            self.model_tokens += len(ids)

    def to_reward_input(self, question: Any, *, confidence: float | None = None) -> Any:
        """The rewards area's input for this trajectory. `question` has `.question`,
        `.answer` and `.golden_chunk_ids` (a `engine.documents.questions.Question`)."""
        from engine.rewards.reward import RewardInput

        return RewardInput(
            question=question.question,
            ground_truth=question.answer,
            answer=self.answer,
            retrieved_chunk_ids=self.retrieved_chunk_ids,
            golden_chunk_ids=list(getattr(question, "golden_chunk_ids", []) or []),
            searches=len(self.valid_searches),
            finish_reason=self.finish_reason or "no_answer",
            malformed_calls=self.malformed_calls,
            confidence=confidence,
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly summary (no token arrays) for logs and dashboards."""
        return {
            "question": self.question,
            "searches": [
                {"query": s.query, "chunk_ids": s.chunk_ids, "malformed": s.malformed}
                for s in self.searches
            ],
            "answer": self.answer,
            "finish_reason": self.finish_reason,
            "model_tokens": self.model_tokens,
            "wall_s": round(self.wall_s, 3),
            "reward": self.reward,
            "judge_score": self.meta.get("judge_score"),
            "correct": self.meta.get("judge_correct"),
            "text": self.text,
        }
