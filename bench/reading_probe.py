"""How well a model reads an answer out of passages put in front of it, with no search.

    python bench/reading_probe.py --index var/pyref-index \
        --questions datasets/python-reference/questions.jsonl --models base \
        --runs var/pyref-f0-s0 var/pyref-f1-s0

The trained agent's accuracy mixes two skills: finding the passage and reading the answer out
of it. This measures the second alone. Each model answers every question in a plain
question-answer prompt (the chat template, a system line, the passages, the question; no
tools, no search tags) twice: given the question's golden evidence alone (a few lines: the
ceiling of reading), and given echo's top k chunks (what a search that is the question itself
shows). Answers are judged by the strict offline judge; each cell is the share judged correct
with its 95 % bootstrap interval over questions, split into yes/no questions and the rest
(the "open" ones, answered by a name, a figure or a phrase the passages hold), and each model
after the first is compared with the first question by question (paired interval).

`base` is the untrained default model; any other value of `--models` is a model folder. The
runs of `--runs` (one setting's folds) are one row: each question is read by the run that held
it out (its `final/` weights), and the other rows are scored on the questions they cover.
A model that was taught the agent's transcript may read worse here than in its own format:
the agent's own accuracy is `sleuth compare`'s, this is the reading its weights keep.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
from tqdm import tqdm  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402

from engine.agent.models import resolve_model_path  # noqa: E402
from engine.documents.questions import load_questions  # noqa: E402
from engine.evaluation.pooled import held_out, read_run  # noqa: E402
from engine.evaluation.stats import bootstrap_mean, paired_difference  # noqa: E402
from engine.rewards.judge import OfflineJudge  # noqa: E402
from engine.rewards.text import polarity  # noqa: E402
from engine.search.index import SearchIndex  # noqa: E402

SYSTEM = "Answer the question with a few words copied from the passages, or with Yes or No."


def prompt(tokenizer, passages: list[str], question: str) -> dict:
    body = "\n\n".join(passages)
    messages = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"Passages:\n{body}\n\nQuestion: {question}"},
    ]
    return tokenizer.apply_chat_template(
        messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
    )


def answers(path: str, label: str, contexts: dict[str, list[list[str]]], questions, max_new):
    """The model's greedy answer to each question, in each context."""
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    out: dict[str, list[str]] = {}
    for context, passages in contexts.items():
        said = []
        for q, shown in tqdm(
            list(zip(questions, passages, strict=True)), desc=f"{label} · {context}"
        ):
            inputs = prompt(tokenizer, shown, q.question)
            with torch.no_grad():
                ids = model.generate(**inputs, max_new_tokens=max_new, do_sample=False)
            new = ids[0, inputs["input_ids"].shape[1] :]
            said.append(tokenizer.decode(new, skip_special_tokens=True).strip())
        out[context] = said
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--index", required=True)
    p.add_argument("--questions", required=True)
    p.add_argument("--models", nargs="*", default=["base"], help="base, or model folders")
    p.add_argument("--runs", nargs="*", default=[], help="one setting's fold runs, as one row")
    p.add_argument("--k", type=int, default=5, help="echo's chunks shown")
    p.add_argument("--chars", type=int, default=400, help="characters shown of each chunk")
    p.add_argument("--max-new-tokens", type=int, default=24)
    p.add_argument("--limit", type=int, default=0, help="the first N questions only")
    args = p.parse_args()

    index = SearchIndex.load(args.index)
    every = load_questions(args.questions)  # a run's split is made again from them all
    questions = every[: args.limit] if args.limit else every
    # Who reads what: a model every question, a fold run the questions it held out.
    readers: dict[str, list[tuple[str, list]]] = {
        name: [(resolve_model_path(None) if name == "base" else name, questions)]
        for name in args.models
    }
    if args.runs:
        readers["trained (--runs)"] = [
            (str(Path(run) / "final"), held_out(read_run(run), every)) for run in args.runs
        ]
        covered = {q.id for _, asked in readers["trained (--runs)"] for q in asked}
        questions = [q for q in questions if q.id in covered]
    judge = OfflineJudge()
    polar = [bool(polarity(q.answer)) for q in questions]
    contexts = ["golden passage", f"echo@{args.k}"]
    wanted = {q.id for q in questions}
    scores = {}  # (reader, context) -> 1.0/0.0 per question, in `questions`' order
    for label, parts in readers.items():
        judged: dict[tuple[str, str], float] = {}  # (context, question id) -> verdict
        for path, asked in parts:
            asked = [q for q in asked if q.id in wanted]
            shown = {
                contexts[0]: [[e.text for e in q.evidence] for q in asked],
                contexts[1]: [
                    [h.text[: args.chars] for h in index.search(q.question, args.k)] for q in asked
                ],
            }
            said = answers(path, label, shown, asked, args.max_new_tokens)
            for context, replies in said.items():
                for q, a in zip(asked, replies, strict=True):
                    judged[context, q.id] = float(judge.judge(q.question, q.answer, a).correct)
        for context in contexts:
            scores[label, context] = [judged[context, q.id] for q in questions]

    def only(values: list[float], keep: list[bool]) -> list[float]:
        return [v for v, k in zip(values, keep, strict=True) if k]

    def cell(values: list[float], keep: list[bool]) -> str:
        kept = only(values, keep)
        return f"{bootstrap_mean(kept)} ({int(sum(kept))}/{len(kept)})" if kept else "—"

    everything = [True] * len(questions)
    opened = [not x for x in polar]
    print(f"\n{len(questions)} questions ({sum(polar)} yes/no); strict judge, 95 % intervals\n")
    print("| model | passages | accuracy | open questions | yes/no questions |")
    print("|---|---|---|---|---|")
    for (name, context), values in scores.items():
        row = [cell(values, everything), cell(values, opened), cell(values, polar)]
        print(f"| {name} | {context} | " + " | ".join(row) + " |")
    first, *others = readers
    for name in others:
        print(f"\n| {name} − {first} | Δ accuracy [95 %] | Δ open questions [95 %] |")
        print("|---|---|---|")
        for context in contexts:
            a, b = scores[first, context], scores[name, context]
            opened_difference = paired_difference(only(b, opened), only(a, opened))
            print(f"| {context} | {paired_difference(b, a)} | {opened_difference} |")


if __name__ == "__main__":
    main()
