"""Run a published Sleuth search agent on one question, locally.

    python agent/run_agent.py "your question" [--model FOLDER] [--index FOLDER]

Standalone: it needs transformers, torch, numpy, bm25s and PyStemmer, not Sleuth. The model
writes <search>query</search> (or <search>[3M 2018] query</search>, searching only the
documents whose names have words starting with those, or
<search>[3M 2018 | cash flow] query</search>, only their pages whose heading holds those
words, those it titles first; the brackets alone search the question itself there); this script
runs the query on the bundled BM25 index and appends the hits between <results> and </results>,
until the model writes <answer>…</answer> or a limit is reached. Prints the answer (or the whole
transcript with --verbose). This file is copied into every published folder as
agent/run_agent.py, beside the engine's own search, results and rules of decoding
(search_index.py, search_tool.py, agent_protocol.py, agent_tool.py, greedy_rules.py,
grounding.py, and the filings pack's filings_*.py), which the publisher writes from the engine's
source: no second copy.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from types import SimpleNamespace

# The engine's own modules, written beside this script by the publisher from the engine's
# source (`engine/publishing/bundle.py`): the index searched, the results shown and the
# rules of decoding, as in training, evaluation and serving.
import agent_protocol
import agent_tool
import filings_names
import filings_rows
import greedy_rules
import grounding
import search_index

HERE = Path(__file__).resolve().parent


class _StopAfterTag:
    """Stops generation once the new text holds </search> or </answer> (transformers'
    stop_strings needs a byte-level vocabulary; this works with any tokenizer)."""

    def __init__(self, tokenizer, start: int):
        self.tokenizer, self.start = tokenizer, start

    def __call__(self, input_ids, scores, **kwargs):
        import torch

        text = self.tokenizer.decode(input_ids[0, self.start :])
        done = "</search>" in text or "</answer>" in text
        return torch.tensor([done], dtype=torch.bool, device=input_ids.device)


class _GroundedFigures:
    """A logits processor: inside <answer>, only figures the question or results showed
    (`shown`, None: any), and after a row's label that row's first figure (`rows`), masked as
    the engine masks them (`grounding.FigureGrounding`, built once per tokenizer in `masks`)."""

    def __init__(self, tokenizer, start: int, shown, rows, masks: dict):
        self.tokenizer, self.start, self.shown, self.rows, self.masks = (
            tokenizer,
            start,
            shown,
            rows,
            masks,
        )

    def __call__(self, input_ids, scores):
        text = self.tokenizer.decode(input_ids[0, self.start :])
        opened = text.rfind("<answer>")
        if opened < 0:
            return scores
        answer = text[opened + len("<answer>") :]
        quoted = self.rows.quoted(answer) if self.rows is not None else None
        allowed = quoted if quoted is not None else self.shown
        if allowed is None:
            return scores
        width = scores.shape[-1]
        if width not in self.masks:
            self.masks[width] = grounding.FigureGrounding.for_tokenizer(self.tokenizer, width)
        banned = self.masks[width].banned(answer, allowed)
        if banned is None:
            return scores
        return scores.masked_fill(banned.to(scores.device)[None, :], float("-inf"))


class _GreedyRules:
    """A logits processor for greedy decoding: the likeliest token whose turn (the tokens
    from `start`) breaks none of the rules `limits` (agent.json's) turns on, as the engine's
    `greedy_rules.broken` reads them (`companies`: those the question names; `searched`:
    the searches run before this turn)."""

    def __init__(self, tokenizer, start, question, limits: dict, companies=frozenset(), searched=0):
        self.tokenizer, self.start, self.question = tokenizer, start, question
        self.limits = SimpleNamespace(
            **{rule: bool(limits.get(rule)) for rule in greedy_rules.RULES}
        )
        self.companies, self.searched = companies, searched

    def broken(self, text: str) -> bool:
        return greedy_rules.broken(text, self.question, self.limits, self.companies, self.searched)

    def __call__(self, input_ids, scores):
        ids = input_ids[0, self.start :].tolist()
        passed = []  # the likelier tokens, each breaking a rule
        for token in greedy_rules.ranked_tokens(scores[0]):
            if not self.broken(self.tokenizer.decode([*ids, token])):
                if passed:
                    scores = scores.clone()
                    scores[0, passed] = float("-inf")
                return scores
            passed.append(token)
        return scores  # no token keeps to the rules: the model's own


def run(question: str, model_dir: Path, index_dir: Path, settings: dict) -> dict:
    """The agent loop; returns {"answer", "searches", "transcript"}."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    # use_kernels off: transformers 5 would otherwise fetch layers' kernels from the hub.
    model = AutoModelForCausalLM.from_pretrained(
        model_dir, dtype=torch.float32, use_kernels=False
    ).eval()
    index = search_index.SearchIndex.load(index_dir)
    limits = stored_limits(settings["limits"])
    if limits["statement_synonyms"]:  # the filings pack's: a statement under its other names
        index = filings_names.reading_statement_names(index)
    system = settings["system_prompt"]

    def encode(text: str) -> list[int]:
        return tokenizer.encode(text, add_special_tokens=False)

    if getattr(tokenizer, "chat_template", None):
        messages = [{"role": "system", "content": system}, {"role": "user", "content": question}]
        prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    else:
        prompt = f"{system}\n\nQuestion: {question}\n\n"
    ids = encode(prompt)
    transcript, searches, generated = "", [], 0
    seen = question  # the question and every result so far: the figures an answer may write
    results = ""  # every result so far: the rows an answer may quote
    # the companies a scope may begin with (`grounded_scope`), read once
    companies = (
        greedy_rules.companies_named(question, index.names_company)
        if limits.get("grounded_scope")
        else frozenset()
    )
    figure_masks: dict = {}  # by vocabulary width, built at the first figure rule's use
    shown: set[str] = set()  # the chunk ids the results have shown so far
    for _turn in range(limits["max_turns"] + 1):
        budget = limits["max_new_tokens"] - generated
        if budget <= 0:
            break
        turn = limits.get("max_turn_tokens") or 0  # absent in agents saved before it existed
        cut_turn = 0 < turn <= budget
        if cut_turn:
            budget = turn
        rules = []  # per-token rules of decoding; each absent in agents saved before it
        if limits.get("grounded_figures") or limits.get("row_figures"):
            shown = grounding.ShownFigures.of(seen) if limits.get("grounded_figures") else None
            rows = filings_rows.ResultRows.of(results) if limits.get("row_figures") else None
            rules.append(_GroundedFigures(tokenizer, len(ids), shown, rows, figure_masks))
        if any(limits.get(rule) for rule in greedy_rules.RULES):
            rules.append(
                _GreedyRules(tokenizer, len(ids), question, limits, companies, len(searches))
            )
        with torch.no_grad():
            out = model.generate(
                torch.tensor([ids]),
                max_new_tokens=budget,
                do_sample=False,
                stopping_criteria=[_StopAfterTag(tokenizer, len(ids))],
                logits_processor=rules or None,
                pad_token_id=tokenizer.pad_token_id or tokenizer.eos_token_id,
            )
        new = out[0, len(ids) :].tolist()
        if new and new[-1] == tokenizer.eos_token_id:
            new = new[:-1]
        generated += len(new)
        ids += new
        text = tokenizer.decode(new)
        transcript += text
        if cut_turn and len(new) >= turn and (close := agent_protocol.closing_tag(text)):
            # The turn limit cut it: close the tag it left open, as the engine it was
            # trained with does.
            ids += encode(close)
            text += close
            transcript += close
        answer = re.search(r"<answer>(.*?)</answer>", text, re.S)
        if answer:
            return {
                "answer": answer.group(1).strip(),
                "searches": searches,
                "transcript": transcript,
            }
        query = re.search(r"<search>(.*?)</search>", text, re.S)
        if not query or len(searches) >= limits["max_turns"]:
            break
        searches.append(agent_protocol.searched_query(query.group(1).strip(), question))
        head, tail = encode("\n<results>\n"), encode("\n</results>\n")
        k = hits_for(limits, len(searches) - 1)
        hits = agent_tool.new_hits(index, searches[-1], k, shown, question)
        room = max(limits["max_result_tokens"] - len(head) - len(tail), 0)
        body, ids_shown, _cut = agent_tool.fit_hits(hits, room, encode, searches[-1])
        shown.update(ids_shown)
        ids += head + body + tail
        transcript += tokenizer.decode(head + body + tail)
        results += "\n" + tokenizer.decode(head + body + tail)
        seen += "\n" + tokenizer.decode(head + body + tail)
    return {"answer": None, "searches": searches, "transcript": transcript}


def stored_limits(limits: dict) -> dict:
    """agent.json's limits, as the engine's `Limits.stored` reads them: saved before two rules
    were split, the scope rule held the latest year too, the answer-form rule the closing tag;
    saved before the statement names left the index, its search read them."""
    limits = dict(limits)
    limits.setdefault("latest_year_scope", bool(limits.get("grounded_scope")))
    limits.setdefault("answer_tag", bool(limits.get("answer_form")))
    limits.setdefault("statement_synonyms", True)
    return limits


def hits_for(limits: dict, searches_run: int) -> int:
    """Hits shown by a search after `searches_run` searches, as the engine's `Limits`: the
    first search's own number where set (absent in agents saved before it existed)."""
    first = limits.get("first_results_per_search") or 0
    return first if not searches_run and first else limits["results_per_search"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("question")
    parser.add_argument("--model", default=str(HERE.parent), help="the model folder")
    parser.add_argument("--index", default=str(HERE / "index"), help="the index folder")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--verbose", action="store_true", help="print the whole transcript")
    args = parser.parse_args(argv)
    settings = json.loads((HERE / "agent.json").read_text())
    result = run(args.question, Path(args.model), Path(args.index), settings)
    if args.json:
        print(json.dumps(result))
    else:
        if args.verbose:
            print(result["transcript"], file=sys.stderr)
        print(result["answer"] if result["answer"] is not None else "(no answer)")
    return 0 if result["answer"] is not None else 1


if __name__ == "__main__":
    sys.exit(main())
