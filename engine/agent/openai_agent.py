"""An OpenAI-compatible chat model as the agent, through the same tool loop and tags.

The API returns text, not tokens: each reply is one segment (generation stops at
`</search>` or `</answer>` through `stop`), the search results come back as the next
user message, and token counts come from the API's usage numbers. Results are cut at
about `max_result_tokens * 4` characters, since there is no tokenizer to count with.
"""

from __future__ import annotations

import time
from typing import Any

from engine.agent.protocol import (
    SEARCH_CLOSE,
    SEARCH_OPEN,
    STOP_STRINGS,
    SYSTEM_PROMPT,
    build_messages,
    closing_tag,
    format_results,
    parse_segment,
    searched_query,
)
from engine.agent.tool import SearchTool, fit_hits, new_hits
from engine.agent.trajectory import Limits, SamplingParams, SearchCall, Trajectory
from engine.packs.filings.names import reading_statement_names

_CHARS_PER_TOKEN = 4


class OpenAIAgent:
    """Runs trajectories with `client.chat.completions` (an `openai.OpenAI` client)."""

    def __init__(
        self,
        client: Any,
        model: str,
        tool: SearchTool,
        *,
        limits: Limits | None = None,
        system_prompt: str = SYSTEM_PROMPT,
    ) -> None:
        self.client = client
        self.model = model
        self.tool = tool
        self.limits = limits or Limits()
        self.system_prompt = system_prompt

    def rollout(
        self, questions: list[str], sampling: SamplingParams | None = None
    ) -> list[Trajectory]:
        sampling = sampling or SamplingParams()
        return [self._one(q, sampling, sampling.seed + i) for i, q in enumerate(questions)]

    def _one(self, question: str, sampling: SamplingParams, seed: int) -> Trajectory:
        started = time.perf_counter()
        trajectory = Trajectory(question=question, sampling=sampling, model_name=self.model)
        messages = build_messages(question, self.system_prompt)
        while not trajectory.finished:
            budget = self.limits.max_new_tokens - trajectory.model_tokens
            if budget <= 0:
                trajectory.finish_reason = "max_tokens"
                break
            turn = self.limits.max_turn_tokens
            cut_turn = 0 < turn <= budget  # a reply cut there is closed, as the hf engine does
            response = self.client.chat.completions.create(
                model=self.model,
                messages=messages,
                temperature=sampling.temperature,
                top_p=sampling.top_p,
                seed=seed,
                max_tokens=turn if cut_turn else budget,
                stop=list(STOP_STRINGS),
            )
            choice = response.choices[0]
            text = choice.message.content or ""
            cut = choice.finish_reason == "length"
            # APIs drop the stop string that ended a reply: put back the tag that was open
            # (and close the one a cut turn left open).
            if not text.endswith(STOP_STRINGS) and (not cut or cut_turn):
                text += closing_tag(text)
            usage = getattr(response, "usage", None)
            trajectory.model_tokens += getattr(usage, "completion_tokens", 0) or 0
            trajectory.text += text
            messages.append({"role": "assistant", "content": text})
            if cut and not text.endswith(STOP_STRINGS):
                trajectory.finish_reason = "max_tokens"
                break
            ended_by_eos = not text.endswith(STOP_STRINGS)
            segment = parse_segment(text, ended_by_eos=ended_by_eos)
            if segment.kind == "answer":
                trajectory.answer, trajectory.finish_reason = segment.text, "answer"
            elif segment.kind in ("malformed", "no_answer"):
                trajectory.finish_reason = segment.kind
                trajectory.meta["problem"] = segment.text
            elif segment.kind == "unfinished":
                trajectory.finish_reason = "max_tokens"
            elif len(trajectory.searches) >= self.limits.max_turns:
                trajectory.finish_reason = "max_turns"
            elif segment.kind == "search":
                results = self._search(trajectory, segment.text)
                messages.append({"role": "user", "content": results})
                trajectory.text += results
            else:
                trajectory.searches.append(SearchCall(query=text, malformed=segment.text))
                error = format_results(
                    f"error: {segment.text}. Write {SEARCH_OPEN}query{SEARCH_CLOSE}."
                )
                messages.append({"role": "user", "content": error})
                trajectory.text += error
        trajectory.wall_s = time.perf_counter() - started
        return trajectory

    def _search(self, trajectory: Trajectory, query: str) -> str:
        query = searched_query(query, trajectory.question)
        shown = set(trajectory.retrieved_chunk_ids)
        k = self.limits.hits_for(trajectory.searches_run)
        tool = reading_statement_names(self.tool) if self.limits.statement_synonyms else self.tool
        hits = new_hits(tool, query, k, shown, trajectory.question)
        room = self.limits.max_result_tokens * _CHARS_PER_TOKEN
        # Characters stand in for tokens (no tokenizer here); as in the hf engine, every
        # hit gets an equal share of the room.
        body, shown, truncated = fit_hits(hits, room, list, query)
        trajectory.searches.append(SearchCall(query=query, chunk_ids=shown, truncated=truncated))
        return format_results("".join(body))
