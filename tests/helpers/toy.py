"""The toy corpus the engine's training tests run on: four companies, one fact each, a
word-level tokenizer over its words and the agent's prompt, a tiny random Llama over it, and the
training and evaluation set-ups around them (seconds, not minutes, on a CPU)."""

import json
import re
import shutil

import torch
from tokenizers import Regex, Tokenizer, models, pre_tokenizers
from transformers import LlamaForCausalLM, PreTrainedTokenizerFast

import engine.training.evaluate as evaluate
from engine.agent.hf_engine import HFRolloutEngine
from engine.agent.models import load_model
from engine.agent.protocol import SYSTEM_PROMPT
from engine.agent.trajectory import Limits, SamplingParams
from engine.documents.chunking import Chunk
from engine.documents.questions import Evidence, Question
from engine.search.index import SearchIndex
from engine.training.config import LossConfig, TrainConfig
from engine.training.rl import train
from tests.helpers.models import tiny_llama

FACTS = {  # entity: (year, metric, value)
    "acme": ("2021", "revenue", "seven"),
    "globex": ("2022", "dividend", "nine"),
    "initech": ("2020", "headcount", "five"),
    "umbrella": ("2023", "backlog", "three"),
}


FILLER = "the company reported results for the period in its annual filing"


def chunks() -> list[Chunk]:
    found = []
    for entity, (year, metric, value) in FACTS.items():
        found.append(
            Chunk(
                f"{entity}-1",
                f"{entity}-10k",
                1,
                entity,
                f"{entity} {year} {metric} was {value} . {FILLER}",
            )
        )
        found.append(Chunk(f"{entity}-2", f"{entity}-10k", 2, entity, f"{entity} {FILLER}"))
    return found


def questions() -> list[Question]:
    return [
        Question(
            id=entity,
            question=f"what was {entity} {metric} in {year} ?",
            answer=value,
            entity=entity,
            evidence=[Evidence(f"{metric} was {value}")],
            golden_chunk_ids=[f"{entity}-1"],
        )
        for entity, (year, metric, value) in FACTS.items()
    ]


def tiny_tokenizer() -> PreTrainedTokenizerFast:
    # The prompt's words with its tags apart: a word such as "<search>[name]</search>," would be
    # one token holding a whole search, which an untrained model could write by chance.
    prompt = re.sub(r"(</?(?:search|answer|results)>)", r" \1 ", SYSTEM_PROMPT.lower())
    words = set(prompt.split()) | set(FILLER.split())
    for chunk in chunks():
        words |= set(chunk.text.split()) | {chunk.id, chunk.doc}
    for q in questions():
        words |= set(q.question.split())
    words |= {
        "<search>",
        "</search>",
        "<answer>",
        "</answer>",
        "<results>",
        "</results>",
        "[",
        "]",
        "|",
        "page",
        "1",
        "2",
        "doc",
        ":",
        ".",
        "?",
        "-",
        "error",
        "no",
        "results",
    }
    pieces = ["[PAD]", "[UNK]", "[EOS]"] + sorted(words)
    backend = Tokenizer(models.WordLevel({w: i for i, w in enumerate(pieces)}, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.WhitespaceSplit(),
            pre_tokenizers.Split(Regex(r"</?\w+>|\[EOS\]|[\w-]+|[^\w\s]"), behavior="isolated"),
        ]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=backend, pad_token="[PAD]", unk_token="[UNK]", eos_token="[EOS]"
    )


def tiny_model(tokenizer, seed: int = 0) -> LlamaForCausalLM:
    """The toy's random model over `tokenizer` (tiny_tokenizer()'s), the same for the same seed."""
    torch.manual_seed(seed)
    return tiny_llama(tokenizer)


def tiny_model_folder(root) -> str:
    """A tiny model and its tokenizer saved as a model folder, as a run's `model` names one."""
    tokenizer = tiny_tokenizer()
    tiny_model(tokenizer).save_pretrained(root / "tiny-model")
    tokenizer.save_pretrained(root / "tiny-model")
    return str(root / "tiny-model")


LIMITS = Limits(max_turns=2, max_new_tokens=24, max_result_tokens=120, results_per_search=1)


def config(**overrides) -> TrainConfig:
    settings = dict(
        steps=2,
        questions_per_step=2,
        group_size=2,
        lr=1e-3,
        sft_epochs=0,
        eval_every=0,
        save_every=1,
        limits=LIMITS,
        loss=LossConfig(kind="dppo_tv"),
        temperature=1.0,
        max_batch_tokens=2048,
        samples_logged=1,
    )
    settings.update(overrides)
    return TrainConfig(**settings)


def run_training(tmp_path, cfg, *, resume=False, seed=0, name="run", model=None):
    tokenizer = tiny_tokenizer()
    index = SearchIndex.build(chunks())
    qs = questions()
    model = model or tiny_model(tokenizer, seed)
    result = train(
        cfg,
        model=model,
        tokenizer=tokenizer,
        index=index,
        train_questions=qs,
        val_questions=qs[:2],
        out_dir=tmp_path / name,
        resume=resume,
        progress=False,
        log=lambda message: None,
    )
    return result, [json.loads(line) for line in (tmp_path / name / "metrics.jsonl").open()]


def greedy_recall(model, tokenizer, index) -> float:
    engine = HFRolloutEngine(model, tokenizer, index, limits=LIMITS)
    qs = questions()
    trajectories = engine.rollout([q.question for q in qs], SamplingParams(temperature=0.0))
    found = [
        bool(set(t.retrieved_chunk_ids) & set(q.golden_chunk_ids))
        for t, q in zip(trajectories, qs, strict=True)
    ]
    return sum(found) / len(found)


def bfloat16_rollout_recomputed(device: str = "cpu"):
    """The tiny model's bfloat16 rollout on `device`, and the trainer's recomputation of it:
    (batch, log-probs under bfloat16 autocast, exact float32 log-probs, the loss metrics)."""
    from engine.agent.engines import build_rollout_engine
    from engine.training.batching import collate_packed
    from engine.training.logprobs import batch_logprobs
    from engine.training.losses import policy_loss

    tokenizer = tiny_tokenizer()
    model = tiny_model(tokenizer).to(device).eval()
    engine = build_rollout_engine(
        "hf",
        model,
        tokenizer,
        SearchIndex.build(chunks()),
        limits=Limits(max_new_tokens=24),
        model_name="tiny",
        precision="bfloat16",
    )
    trajectories = engine.rollout(
        [q.question for q in questions()], SamplingParams(temperature=0.7, seed=3)
    )
    batch = collate_packed([[t] for t in trajectories], pad_id=0).to(device)
    with torch.no_grad():
        logp, _ = batch_logprobs(model, batch, temperature=0.7, precision="bfloat16")
        exact, _ = batch_logprobs(model, batch, temperature=0.7)
    _, metrics = policy_loss(
        logp, batch.rollout_logp, torch.ones_like(logp), batch.loss_mask, LossConfig()
    )
    return batch, logp, exact, metrics


def record_loads(monkeypatch, *, load_on: str | None = None) -> list[tuple[str, str]]:
    """Spy on the evaluation's model loads: (device asked for, device the weights are on).
    `load_on` loads there instead of where asked (a CPU machine asked for a GPU)."""
    loads = []

    def spy(name=None, *, device="cpu", dtype=None):
        model, tokenizer = load_model(name, device=load_on or device, dtype=dtype)
        loads.append((str(device), next(model.parameters()).device.type))
        return model, tokenizer

    monkeypatch.setattr(evaluate, "load_model", spy)
    return loads


def evaluate_toy_run(tmp_path) -> dict:
    """A finished run's folder (its final model: a tiny one) evaluated on two questions."""
    base = tiny_model_folder(tmp_path)
    shutil.copytree(base, tmp_path / "run" / "final")
    config = TrainConfig(model=base, limits=LIMITS)
    index = SearchIndex.build(chunks())
    return evaluate.evaluate_run(
        tmp_path / "run", config, index, questions()[:2], show_progress=False
    )
