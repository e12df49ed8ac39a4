"""The transformers rollout engine: many trajectories generate together, with a KV cache.

Generation runs in rounds. In a round every unfinished trajectory is decoded in one batch
until it writes `</search>` or `</answer>`, hits end-of-sequence, or spends its token
budget; finished rows leave the batch (and the cache) at once. Between rounds, trajectories
that called the tool get their results appended as tokens and rejoin the next round, on
top of the keys/values they kept: only the new tokens are prefilled."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase
from transformers.cache_utils import Cache, DynamicCache, DynamicLayer

from engine.agent.greedy_rules import broken, companies_named, ranked_tokens, rules_on
from engine.agent.grounding import FigureGrounding, ShownFigures
from engine.agent.models import returned_cache, with_cache
from engine.agent.protocol import (
    ANSWER_CLOSE,
    ANSWER_OPEN,
    ANSWER_STOP_STRINGS,
    SEARCH_CLOSE,
    SEARCH_OPEN,
    STOP_STRINGS,
    SYSTEM_PROMPT,
    build_messages,
    closing_tag,
    parse_segment,
    searched_query,
    segment_stopped,
)
from engine.agent.tool import SearchTool, fit_hits, new_hits
from engine.agent.trajectory import (
    MODEL,
    PROMPT,
    TOOL,
    Limits,
    SamplingParams,
    SearchCall,
    Trajectory,
)
from engine.packs.filings.names import reading_statement_names
from engine.packs.filings.rows import ResultRows

_STOP_TAIL_TOKENS = 8  # enough tokens to spell any stop string
_SHARED_PREFIX_MIN = 16  # a prefix shared by fewer tokens is not worth its own prefill


class RolloutEngine:
    """The protocol loop shared by every token-level engine: prompts, rounds, tool calls,
    limits and finish reasons. Subclasses implement `_generate` (one segment per row).

    `check`, when its driver sets one (the trainer's cancel check), runs between rounds
    and between decoded tokens; it may raise to abandon the rollout. `on_results`, when set
    (a live view of a served agent), is told each search's query and the hits it showed."""

    check: Callable[[], None] | None = None
    on_results: Callable[[str, list], None] | None = None

    def __init__(
        self,
        tokenizer: PreTrainedTokenizerBase,
        tool: SearchTool,
        *,
        stop_ids: set[int],
        max_length: int,
        limits: Limits | None = None,
        system_prompt: str = SYSTEM_PROMPT,
        batch_size: int = 16,
        model_name: str = "",
    ) -> None:
        self.tokenizer = tokenizer
        self.tool = tool
        self.limits = limits or Limits()
        self.system_prompt = system_prompt
        self.batch_size = batch_size
        self.model_name = model_name
        self.pad_id = tokenizer.pad_token_id
        if self.pad_id is None:
            self.pad_id = tokenizer.eos_token_id or 0
        self.stop_ids = stop_ids
        self.max_length = max_length

    @contextmanager
    def _generating(self) -> Iterator[None]:
        yield

    def prompt_ids(self, question: str) -> list[int]:
        """The prompt's tokens: the chat template when the tokenizer has one."""
        messages = build_messages(question, self.system_prompt)
        if getattr(self.tokenizer, "chat_template", None):
            text = self.tokenizer.apply_chat_template(
                messages, add_generation_prompt=True, tokenize=False
            )
        else:
            text = f"{self.system_prompt}\n\nQuestion: {question}\n\n"
        return self._encode(text)

    def _generator(self, seed: int) -> torch.Generator:
        """A trajectory's own random stream, on the device its tokens are sampled on."""
        return torch.Generator().manual_seed(seed)

    def rollout(
        self,
        questions: Sequence[str],
        sampling: SamplingParams | None = None,
        *,
        echo_k: int | None = None,
    ) -> list[Trajectory]:
        """Run one trajectory per question (repeat a question for several samples).

        `echo_k` makes the echo baseline: the engine searches the question itself with
        `echo_k` results, writes `<answer>` and lets the model only answer.
        """
        sampling = sampling or SamplingParams()
        started = time.perf_counter()
        trajectories = [
            Trajectory(question=q, sampling=sampling, model_name=self.model_name) for q in questions
        ]
        generators = []
        for i, trajectory in enumerate(trajectories):
            trajectory.append(self.prompt_ids(trajectory.question), PROMPT)
            generators.append(self._generator(sampling.seed + i))
            if echo_k is not None:
                self._echo_search(trajectory, echo_k)
        with self._generating():
            while pending := [i for i, t in enumerate(trajectories) if not t.finished]:
                for start in range(0, len(pending), self.batch_size):
                    if self.check is not None:
                        self.check()
                    rows = pending[start : start + self.batch_size]
                    self._round(
                        [trajectories[i] for i in rows], [generators[i] for i in rows], sampling
                    )
                    now = time.perf_counter() - started
                    for i in rows:
                        if trajectories[i].finished and not trajectories[i].wall_s:
                            trajectories[i].wall_s = now
        return trajectories

    # -- one round: generate a segment for each trajectory, then act on it -------------

    def _round(
        self,
        trajectories: list[Trajectory],
        generators: list[torch.Generator],
        sampling: SamplingParams,
    ) -> None:
        budgets = [self._budget(t) for t in trajectories]
        live = [i for i, b in enumerate(budgets) if b > 0]
        for i, budget in enumerate(budgets):
            if budget <= 0:
                trajectories[i].finish_reason = "max_tokens"
        if not live:
            return
        if turn := self.limits.max_turn_tokens:
            budgets = [min(b, turn) for b in budgets]
        stops = [
            ANSWER_STOP_STRINGS if trajectories[i].meta.get("answer_opened") else STOP_STRINGS
            for i in live
        ]
        segments = self._generate(
            [trajectories[i].token_ids for i in live],
            [generators[i] for i in live],
            [budgets[i] for i in live],
            stops,
            sampling,
            groundings=[self._grounding(trajectories[i]) for i in live],
            questions=[trajectories[i].question for i in live],
            searched=[len(trajectories[i].searches) for i in live],
        )
        for i, (ids, logprobs, ended_by_eos) in zip(live, segments, strict=True):
            self._after_segment(trajectories[i], ids, logprobs, ended_by_eos)

    def _grounding(self, trajectory: Trajectory) -> Grounding | None:
        """What the trajectory's answer may write figures from: under `grounded_figures`, the
        question and every tool token (the results) so far; under `row_figures`, the rows
        those results show."""
        limits = self.limits
        if not (limits.grounded_figures or limits.row_figures):
            return None
        tool_ids = [
            t for t, p in zip(trajectory.token_ids, trajectory.producers, strict=True) if p == TOOL
        ]
        results = self.tokenizer.decode(tool_ids)
        shown = None
        if limits.grounded_figures:  # every start of every figure: built only when it is used
            shown = ShownFigures.of(f"{trajectory.question}\n{results}")
        return Grounding(
            shown,
            ResultRows.of(results) if limits.row_figures else None,
            answer_opened=bool(trajectory.meta.get("answer_opened")),
        )

    def _budget(self, trajectory: Trajectory) -> int:
        by_limit = self.limits.max_new_tokens - trajectory.model_tokens
        by_context = self.max_length - len(trajectory.token_ids)
        return min(by_limit, by_context)

    def _after_segment(
        self, trajectory: Trajectory, ids: list[int], logprobs: list[float], ended_by_eos: bool
    ) -> None:
        text = self.tokenizer.decode(ids, skip_special_tokens=True)
        trajectory.append(ids, MODEL, logprobs)
        trajectory.text += text
        answer_opened = bool(trajectory.meta.get("answer_opened"))
        segment = parse_segment(text, ended_by_eos=ended_by_eos, answer_opened=answer_opened)
        turn = self.limits.max_turn_tokens
        if segment.kind == "unfinished" and turn and len(ids) >= turn:
            # The turn limit cut it: close the tag it left open, as the model would have.
            if close := ANSWER_CLOSE if answer_opened else closing_tag(text):
                self._append_tool(trajectory, close)
                segment = parse_segment(
                    text + close, ended_by_eos=False, answer_opened=answer_opened
                )
        if segment.kind == "answer":
            trajectory.answer = segment.text
            trajectory.finish_reason = "answer"
        elif segment.kind in ("malformed", "no_answer"):
            trajectory.finish_reason = segment.kind
            trajectory.meta["problem"] = segment.text
        elif segment.kind == "unfinished":
            trajectory.finish_reason = "max_tokens"
        elif len(trajectory.searches) >= self.limits.max_turns:
            trajectory.finish_reason = "max_turns"
        elif segment.kind == "search":
            self.run_search(trajectory, segment.text)
        else:  # malformed_call: say what was wrong and let the model try again
            trajectory.searches.append(SearchCall(query=text, malformed=segment.text))
            self._append_tool(
                trajectory,
                f"\n<results>\nerror: {segment.text}. Write {SEARCH_OPEN}query{SEARCH_CLOSE}."
                "\n</results>\n",
            )

    def run_search(self, trajectory: Trajectory, query: str, k: int | None = None) -> None:
        """Run `query` and append its top `k` results (the limits' hits for this search when
        None), those not shown before in the trajectory, as tool tokens (limited, and
        recorded): the query as run (`searched_query`)."""
        query = searched_query(query, trajectory.question)
        k = k or self.limits.hits_for(trajectory.searches_run)
        tool = reading_statement_names(self.tool) if self.limits.statement_synonyms else self.tool
        hits = new_hits(tool, query, k, set(trajectory.retrieved_chunk_ids), trajectory.question)
        head, tail = self._encode("\n<results>\n"), self._encode("\n</results>\n")
        room = max(self.limits.max_result_tokens - len(head) - len(tail), 0)
        # Only chunks whose id survived the cut count as shown to the model.
        body, shown, truncated = fit_hits(hits, room, self._encode, query)
        trajectory.searches.append(SearchCall(query=query, chunk_ids=shown, truncated=truncated))
        self._append_tool(trajectory, None, head + body + tail)
        if self.on_results is not None:
            self.on_results(query, [hit for hit in hits if hit.chunk_id in shown])

    def _echo_search(self, trajectory: Trajectory, k: int) -> None:
        self._append_tool(trajectory, f"{SEARCH_OPEN}{trajectory.question}{SEARCH_CLOSE}")
        self.run_search(trajectory, trajectory.question, k)
        self._append_tool(trajectory, ANSWER_OPEN)
        trajectory.meta["answer_opened"] = True

    def _append_tool(self, trajectory: Trajectory, text: str | None, ids: list[int] | None = None):
        ids = ids if ids is not None else self._encode(text or "")
        trajectory.append(ids, TOOL)
        trajectory.text += self.tokenizer.decode(ids)

    def _encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False)

    def _generate(
        self,
        sequences: list[list[int]],
        generators: list[torch.Generator],
        budgets: list[int],
        stops: list[tuple[str, ...]],
        sampling: SamplingParams,
        groundings: list[Grounding | None] | None = None,
        questions: list[str] | None = None,
        searched: list[int] | None = None,
    ) -> list[tuple[list[int], list[float], bool]]:
        """Decode one segment per sequence; returns (token ids, log-probs, ended_by_eos).
        A sequence's grounding, where given, bans unshown figures inside its answer; its
        question is what the rules of greedy decoding read (`agent.greedy_rules`)."""
        raise NotImplementedError


class HFRolloutEngine(RolloutEngine):
    """Batched multi-turn rollouts with a transformers causal LM and a search tool.

    A trajectory keeps its keys/values between rounds: a round prefills only what is new
    (the last sampled token and the tool's tokens) on top of them, one row at a time (no
    padding). Rows with the same tokens (the samples of one question) are prefilled once,
    on top of one prefill of the prefix every new prompt shares (the system prompt).
    Decoding runs the round's rows as one batch over a preallocated cache, rows
    right-aligned, that each step writes in place. A trajectory's keys/values are freed
    when it finishes, and all of them when `rollout` returns.

    The engine holds a reference to `model`, so a trainer that shares the object sees its
    updates at the next rollout; `load_state_dict` takes weights from elsewhere.
    """

    def __init__(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        tool: SearchTool,
        *,
        limits: Limits | None = None,
        system_prompt: str = SYSTEM_PROMPT,
        batch_size: int | None = None,
        model_name: str = "",
    ) -> None:
        if batch_size is None:
            # A GPU decodes a whole RL step's rows at once for little more than one row
            # costs; a CPU works best on rows whose caches stay in its caches.
            batch_size = 256 if model.device.type == "cuda" else 16
        super().__init__(
            tokenizer,
            tool,
            stop_ids=_eos_ids(model, tokenizer),
            max_length=getattr(model.config, "max_position_embeddings", None) or 1 << 30,
            limits=limits,
            system_prompt=system_prompt,
            batch_size=batch_size,
            model_name=model_name,
        )
        self.model = model
        # id(trajectory.token_ids) -> keys/values of its first tokens, kept between rounds
        self.kept: dict[int, _Kept] = {}
        self.figure_grounding: FigureGrounding | None = None  # built at its first use

    def _generator(self, seed: int) -> torch.Generator:
        # On the model's device: tokens are sampled where the logits are (no copy per token).
        return torch.Generator(device=self.model.device).manual_seed(seed)

    def load_state_dict(self, state_dict: dict[str, torch.Tensor]) -> None:
        """Take updated weights from the trainer between steps."""
        self.model.load_state_dict(state_dict)

    @contextmanager
    def _generating(self) -> Iterator[None]:
        was_training = self.model.training
        self.model.eval()
        self.kept.clear()
        try:
            yield
        finally:
            self.kept.clear()  # computed with these weights: never reused by a later rollout
            self.model.train(was_training)

    def _round(
        self,
        trajectories: list[Trajectory],
        generators: list[torch.Generator],
        sampling: SamplingParams,
    ) -> None:
        super()._round(trajectories, generators, sampling)
        for trajectory in trajectories:
            if trajectory.finished:
                self.kept.pop(id(trajectory.token_ids), None)

    @torch.inference_mode()
    def _generate(
        self,
        sequences: list[list[int]],
        generators: list[torch.Generator],
        budgets: list[int],
        stops: list[tuple[str, ...]],
        sampling: SamplingParams,
        groundings: list[Grounding | None] | None = None,
        questions: list[str] | None = None,
        searched: list[int] | None = None,
    ) -> list[tuple[list[int], list[float], bool]]:
        """Decode one segment per sequence; returns (token ids, log-probs, ended_by_eos).
        `questions` and `searched` (the searches each has run) are for the rules of greedy
        decoding."""
        device = self.model.device
        grounded = groundings is not None and any(g is not None for g in groundings)
        ruled = sampling.temperature <= 0 and rules_on(self.limits) and questions is not None
        n, width = len(sequences), max(len(s) for s in sequences)
        logits, cache = self._prefill(sequences, width, max(budgets))
        attention = torch.zeros((n, width), dtype=torch.long)
        for row, seq in enumerate(sequences):
            attention[row, width - len(seq) :] = 1
        attention = attention.to(device)

        out: list[tuple[list[int], list[float], bool]] = [([], [], False) for _ in range(n)]
        rows = list(range(n))  # batch row -> sequence index
        last_pos = torch.tensor([len(s) - 1 for s in sequences], device=device)
        while True:
            if self.check is not None:
                self.check()
            if grounded:
                logits = self._ground(logits, [(groundings[i], out[i][0]) for i in rows])
            if ruled:
                logits = self._rule(
                    logits,
                    [(questions[i], out[i][0], searched[i] if searched else 0) for i in rows],
                )
            tokens, logprobs = _sample(logits, [generators[i] for i in rows], sampling)
            tokens = tokens.to(device)
            # One copy to the host per step, not one per row and value.
            sampled, sampled_logprobs = tokens.tolist(), logprobs.tolist()
            keep = []
            for r, seq in enumerate(rows):
                ids, lps, _ = out[seq]
                ids.append(sampled[r])
                lps.append(sampled_logprobs[r])
                if ids[-1] in self.stop_ids:
                    out[seq] = (ids, lps, True)
                    continue
                tail = self.tokenizer.decode(ids[-_STOP_TAIL_TOKENS:])
                if len(ids) >= budgets[seq] or (
                    any(s in tail for s in stops[seq])
                    and segment_stopped(self.tokenizer.decode(ids), tail, stops[seq])
                ):
                    # It may go on next round: keep its keys/values (all but the last token).
                    start = width - len(sequences[seq])
                    self.kept[id(sequences[seq])] = _Kept(
                        sequences[seq] + ids[:-1],
                        [
                            (k[r : r + 1, :, start:].clone(), v[r : r + 1, :, start:].clone())
                            for k, v in cache
                        ],
                    )
                    continue
                keep.append(r)
            if not keep:
                return out
            if len(keep) < len(rows):
                index = torch.tensor(keep, device=device)
                cache.batch_select_indices(index)
                attention, last_pos, tokens = attention[index], last_pos[index], tokens[index]
                rows = [rows[r] for r in keep]
            attention = torch.cat([attention, attention.new_ones((len(rows), 1))], dim=1)
            last_pos = last_pos + 1
            result = self.model(
                input_ids=tokens[:, None],
                attention_mask=attention,
                position_ids=last_pos[:, None],
                use_cache=True,
                **with_cache(self.model, cache),
            )
            logits = result.logits[:, -1, :]

    def _ground(
        self, logits: torch.Tensor, rows: list[tuple[Grounding | None, list[int]]]
    ) -> torch.Tensor:
        """`logits` with the tokens each grounded row's answer may not write masked out
        (`rows`: each batch row's grounding and the segment's tokens so far)."""
        bans = {}
        for r, (grounding, ids) in enumerate(rows):
            if grounding is None:
                continue
            answer = grounding.answer_text(self.tokenizer.decode(ids))
            if answer is None:
                continue
            allowed = grounding.allowed(answer)
            if allowed is None:
                continue
            if self.figure_grounding is None:
                width = logits.shape[-1]
                self.figure_grounding = FigureGrounding.for_tokenizer(self.tokenizer, width)
            banned = self.figure_grounding.banned(answer, allowed)
            if banned is not None:
                bans[r] = banned
        if not bans:
            return logits
        logits = logits.clone()
        for r, banned in bans.items():
            logits[r, banned.to(logits.device)] = float("-inf")
        return logits

    def _rule(
        self, logits: torch.Tensor, rows: list[tuple[str, list[int]] | tuple[str, list[int], int]]
    ) -> torch.Tensor:
        """`logits` with each row's likeliest tokens masked out while they would break a
        rule of greedy decoding (`agent.greedy_rules`) that is on (`rows`: each batch row's
        question, the segment's tokens so far and, optionally, the searches it has run); a
        row no token keeps to is left as it is (`greedy_rules.ranked_tokens`)."""
        names_company = getattr(self.tool, "names_company", None)  # a SearchIndex has it
        masked = None
        for r, (question, ids, *rest) in enumerate(rows):
            searched = rest[0] if rest else 0
            companies = companies_named(question, names_company) if names_company else frozenset()
            passed = []  # the likelier tokens, each breaking a rule
            for token in ranked_tokens(logits[r]):
                text = self.tokenizer.decode([*ids, token])
                if not broken(text, question, self.limits, companies, searched):
                    break
                passed.append(token)
            else:  # no token keeps to the rules: the row is the model's own
                continue
            if passed:  # the first token keeping to the rules, past the likeliest
                masked = logits.clone() if masked is None else masked
                masked[r, passed] = float("-inf")
        return masked if masked is not None else logits

    def _prefill(
        self, sequences: list[list[int]], width: int, room: int
    ) -> tuple[torch.Tensor, _SlabCache]:
        """Bring each row's keys/values up to its whole sequence; return the last position's
        logits per row and the decode cache (rows right-aligned at column `width`, `room`
        columns free after it)."""
        groups: dict[tuple[int, ...], list[int]] = {}
        for row, seq in enumerate(sequences):
            groups.setdefault(tuple(seq), []).append(row)
        states: dict[tuple[int, ...], tuple[torch.Tensor, list[_KV]]] = {}
        fresh = []
        for key, rows in groups.items():
            # Rows with equal tokens share one prefill, on the longest cache any of them kept.
            held = [self._take(sequences[r]) for r in rows]
            kept = max(
                (k for k in held if k is not None), key=lambda k: len(k.tokens), default=None
            )
            if kept is None:
                fresh.append(key)
            else:
                states[key] = self._extend(kept.layers, key[len(kept.tokens) :])
        # New prompts share a prefix (the system prompt): prefill it once for all of them.
        shared, base = 0, None
        if len(fresh) > 1:
            shared = min(len(os.path.commonprefix(fresh)), min(map(len, fresh)) - 1)
            if shared >= _SHARED_PREFIX_MIN:
                base = self._extend(None, fresh[0][:shared])[1]
        for key in fresh:
            states[key] = self._extend(base, key[shared:] if base else key)
        logits = torch.stack([states[tuple(seq)][0] for seq in sequences])
        cache = _SlabCache([states[tuple(seq)][1] for seq in sequences], width, width + room)
        return logits, cache

    def _take(self, seq: list[int]) -> _Kept | None:
        """Remove and return the keys/values kept for `seq`, if they hold its first tokens."""
        kept = self.kept.pop(id(seq), None)
        if kept is None or len(kept.tokens) >= len(seq) or seq[: len(kept.tokens)] != kept.tokens:
            return None
        return kept

    def _extend(
        self, layers: list[_KV] | None, tokens: Sequence[int]
    ) -> tuple[torch.Tensor, list[_KV]]:
        """Prefill `tokens` on top of one row's keys/values; return the last logits and the
        keys/values of the whole row."""
        device = self.model.device
        start = layers[0][0].shape[-2] if layers else 0
        result = self.model(
            input_ids=torch.tensor([tokens], device=device),
            position_ids=torch.arange(start, start + len(tokens), device=device)[None],
            use_cache=True,
            logits_to_keep=1,
            **with_cache(
                self.model, DynamicCache(ddp_cache_data=layers) if layers else DynamicCache()
            ),
        )
        return result.logits[0, -1], [(k, v) for k, v, *_ in returned_cache(result)]


_KV = tuple[torch.Tensor, torch.Tensor]  # one layer's keys and values: (rows, heads, tokens, dim)


@dataclass
class _Kept:
    """A trajectory's keys/values between rounds: those of `tokens` (all but the last)."""

    tokens: list[int]
    layers: list[_KV]


class _SlabLayer(DynamicLayer):
    """One layer's keys/values for a decode batch, in memory allocated once: rows are
    right-aligned at the first decode column and each step writes its column in place
    (a growing cache would copy everything at every step)."""

    def __init__(self, rows: list[_KV], width: int, capacity: int) -> None:
        super().__init__()
        keys = rows[0][0]
        shape = (len(rows), keys.shape[1], max(capacity, width), keys.shape[3])
        self._k, self._v = keys.new_empty(shape), keys.new_empty(shape)
        for row, (k, v) in enumerate(rows):
            pad = width - k.shape[-2]
            self._k[row, :, :pad] = self._v[row, :, :pad] = 0  # masked, but must not be NaN
            self._k[row, :, pad:width] = k[0]
            self._v[row, :, pad:width] = v[0]
        self.dtype, self.device, self.is_initialized = keys.dtype, keys.device, True
        self.rows, self.length = len(rows), width
        self._view()

    def _view(self) -> None:
        self.keys = self._k[: self.rows, :, : self.length]
        self.values = self._v[: self.rows, :, : self.length]

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        end = self.length + key_states.shape[-2]
        if end > self._k.shape[2]:
            grown = (*self._k.shape[:2], 2 * end, self._k.shape[3])
            self._k = torch.cat([self._k, self._k.new_empty(grown)], dim=2)
            self._v = torch.cat([self._v, self._v.new_empty(grown)], dim=2)
        self._k[: self.rows, :, self.length : end] = key_states
        self._v[: self.rows, :, self.length : end] = value_states
        self.length = end
        self._view()
        return self.keys, self.values

    def get_seq_length(self) -> int:
        return self.length

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        # Keep rows in place, moved down over the ones that left (kept rows are increasing).
        for new, old in enumerate(indices.tolist()):
            if new != old:
                self._k[new, :, : self.length] = self._k[old, :, : self.length]
                self._v[new, :, : self.length] = self._v[old, :, : self.length]
        self.rows = len(indices)
        self._view()


class _SlabCache(Cache):
    """The decode batch's cache: one `_SlabLayer` per model layer."""

    def __init__(self, rows: list[list[_KV]], width: int, capacity: int) -> None:
        layers = [
            _SlabLayer([row[i] for row in rows], width, capacity) for i in range(len(rows[0]))
        ]
        super().__init__(layers=layers)

    def __iter__(self):
        for layer in self.layers:
            yield layer.keys, layer.values


@dataclass(frozen=True)
class Grounding:
    """A trajectory's figures shown (None: any may be written), the rows its results show
    (None: `row_figures` is off), and whether the harness opened its answer (echo)."""

    shown: ShownFigures | None
    rows: ResultRows | None = None
    answer_opened: bool = False

    def allowed(self, answer: str) -> ShownFigures | None:
        """The figures the answer written so far may go on with; None: any."""
        quoted = self.rows.quoted(answer) if self.rows is not None else None
        return quoted if quoted is not None else self.shown

    def answer_text(self, segment: str) -> str | None:
        """The answer written so far in this segment; None before `<answer>`."""
        if self.answer_opened:
            return segment
        start = segment.rfind(ANSWER_OPEN)
        return None if start < 0 else segment[start + len(ANSWER_OPEN) :]


def _sample(
    logits: torch.Tensor, generators: list[torch.Generator], sampling: SamplingParams
) -> tuple[torch.Tensor, torch.Tensor]:
    """Sample one token per row; return (tokens, rollout log-probs).

    The log-prob is under the temperature-scaled distribution before top-p truncation
    (what trainers recompute and compare against); greedy (temperature 0) uses raw logits.
    Sampling runs where the rows' generators live (the model's device).
    """
    logits = logits.float().to(generators[0].device if generators else "cpu")
    if sampling.temperature <= 0:
        logprobs = torch.log_softmax(logits, dim=-1)
        tokens = logits.argmax(dim=-1)
        return tokens, logprobs.gather(1, tokens[:, None])[:, 0]
    logprobs = torch.log_softmax(logits / sampling.temperature, dim=-1)
    probs = logprobs.exp()
    if sampling.top_p < 1.0:
        sorted_probs, order = probs.sort(dim=-1, descending=True)
        # Drop a token when the tokens ranked above it already reach top_p.
        drop = sorted_probs.cumsum(-1) - sorted_probs >= sampling.top_p
        sorted_probs = sorted_probs.masked_fill(drop, 0.0)
        probs = torch.zeros_like(probs).scatter(1, order, sorted_probs)
    tokens = torch.stack(
        [torch.multinomial(p, 1, generator=g)[0] for p, g in zip(probs, generators, strict=True)]
    )
    return tokens, logprobs.gather(1, tokens[:, None])[:, 0]


def _eos_ids(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase) -> set[int]:
    ids = {tokenizer.eos_token_id}
    configured = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    ids.update(configured if isinstance(configured, list) else [configured])
    return {i for i in ids if i is not None}
