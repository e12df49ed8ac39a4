"""The RL loop, top to bottom: sample, reward, advantage, loss, step, log, save.

What it is (and where it departs from the papers):
- Cold start (`training.cold_start`; DGPO, Kotoge et al. 2025): SFT on correct teacher
  trajectories first; a 0.1B student gets no reward to learn from otherwise.
- Each step: `questions_per_step` training questions, `group_size` rollouts each through
  the real search tool; rewards from `engine.rewards` (every component logged);
  group-relative advantages (GRPO, or Dr. GRPO without the std division), or with
  `advantage="correct"` expert iteration: 1 on each sample the judge finds correct, which
  alone are trained on, as fine-tuning on the policy's own verified answers.
- Curriculum: groups whose rewards are all equal carry no signal and are dropped (under
  expert iteration, groups with no correct sample); a
  question with no correct sample in `hold_back_after` visits is held back (near-impossible
  questions teach shortcuts), and with `retire_after`, one every sample answered right, with
  equal rewards, that many visits in a row (a mastered question's groups tie).
- Policy loss per token, tool output and prompt masked (`losses.policy_loss`: DPPO
  Binary-TV/KL, TIS, MIS against the rollout engine's μ), normalized over all model tokens
  of the step (`policy_update`).
- DGPO's teacher term: on groups where every rollout failed, add the NLL of the teacher's
  correct trajectory (the sampled forward KL to the teacher); nothing where the student
  already succeeds.
- One optimizer step per batch of rollouts (on-policy), or `updates_per_step` of them, DPPO's
  trust region masking the tokens the policy has moved past. The transformers rollout engine
  shares the model object, or holds a bfloat16 copy of it (`precision`, agent.precision),
  and sglang engines receive the weights through their weight-update API: either way the
  next step samples from the updated weights.
- The function `train` reads top to bottom: set-up (the policy, its rollout engine, the
  teacher's data, the cold start, kept as an agent (`keep_cold_start`), the optimizer and a
  resume's state: `LoopState`), then the loop, then the agent handed over (`save_agent`).
- Data-parallel (`training.distributed`): with several ranks, each samples its share of a
  step's questions, everything after the rollouts is computed alike on every rank from
  the gathered trajectories, and the gradients are summed; rank 0 alone scores, writes
  and saves. One rank is the single-process run, unchanged.
"""

import copy
import dataclasses
import hashlib
import json
import random
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch
from tqdm import tqdm

from engine.agent.engines import build_rollout_engine, sync_weights
from engine.agent.greedy_rules import unruled
from engine.agent.models import NO_HUB_KERNELS
from engine.agent.precision import resolve_precision
from engine.agent.settings import ADAPTER_DIR, write_agent_settings
from engine.agent.trajectory import SamplingParams, Trajectory
from engine.documents.questions import Question
from engine.evaluation.metrics import behaviour, summarize
from engine.evaluation.pooled import COLD_START_DIR
from engine.rewards.judge import build_judge
from engine.rewards.reward import compute_rewards
from engine.search.index import SearchIndex
from engine.training.batching import collate_packed, packed_micro_batches
from engine.training.checkpoint import (
    latest_checkpoint,
    load_trainer_state,
    prune_checkpoints,
    restore_rng_states,
    save_checkpoint,
)
from engine.training.cold_start import ColdStartReport, cold_start, cold_start_set, teacher_data
from engine.training.config import TrainConfig, eval_seconds_per_question
from engine.training.counterfactual import Counterfactuals, counterfactual, results_swapped
from engine.training.distributed import SINGLE, Ranks
from engine.training.logprobs import batch_logprobs
from engine.training.losses import group_advantages, policy_loss, teacher_nll


def stream_seed(seed: int, stream: str, index: int = 0) -> int:
    """The seed of one random stream of a run (its question order in an epoch, its rollouts
    at a step, its validation at a step), derived from the run's seed: every stream its own,
    none overlapping another's as sums and products of small numbers can."""
    digest = hashlib.sha256(f"{seed}:{stream}:{index}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def kept_for_rl(teacher_for: dict[str, Trajectory], share: float, seed: int) -> set[str]:
    """`share` of the questions the teacher reaches, a seeded draw, that the cold start leaves
    to RL (TrainConfig.rl_fresh_share): the same for a run and its resumption."""
    ids = sorted(teacher_for)
    random.Random(stream_seed(seed, "kept for rl")).shuffle(ids)
    return set(ids[: round(share * len(ids))])


@dataclass
class QuestionSampler:
    """Walks the training questions in a seeded shuffled order, epoch after epoch, skipping
    held-back ones. Its state is the data cursor saved with every checkpoint."""

    ids: list[str]
    seed: int
    epoch: int = 0
    cursor: int = 0
    held_back: set[str] = field(default_factory=set)

    def _order(self) -> list[str]:
        order = sorted(self.ids)
        random.Random(stream_seed(self.seed, "questions", self.epoch)).shuffle(order)
        return order

    def take(self, n: int) -> list[str]:
        picked: list[str] = []
        available = [i for i in self.ids if i not in self.held_back]
        while len(picked) < min(n, len(available)):
            order = self._order()
            if self.cursor >= len(order):
                self.epoch, self.cursor = self.epoch + 1, 0
                continue
            candidate = order[self.cursor]
            self.cursor += 1
            if candidate not in self.held_back and candidate not in picked:
                picked.append(candidate)
        return picked

    def state(self) -> dict:
        return {"epoch": self.epoch, "cursor": self.cursor, "held_back": sorted(self.held_back)}

    def load(self, state: dict) -> None:
        self.epoch, self.cursor = state["epoch"], state["cursor"]
        self.held_back = set(state["held_back"])


@dataclass
class LoopState:
    """What a checkpoint keeps besides the weights (the optimizer, its schedule, the
    curriculum's place and counts, the last step), so that a resumed run goes on as if it
    had never stopped."""

    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    sampler: QuestionSampler
    visits: dict[str, int] = field(default_factory=dict)
    solved: set[str] = field(default_factory=set)
    # Visits in a row on which every sample was right and the rewards tied.
    mastered: dict[str, int] = field(default_factory=dict)
    step: int = 0

    @classmethod
    def begin(cls, model, config: TrainConfig, question_ids, saved: dict | None) -> "LoopState":
        """A new loop over `question_ids`, or the one `saved` (a checkpoint's trainer state)
        left, random number generators included."""
        trainable = [p for p in model.parameters() if p.requires_grad]
        optimizer = torch.optim.AdamW(trainable, lr=config.lr, weight_decay=0.0)
        scheduler = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda s: min(1.0, (s + 1) / max(config.warmup_steps, 1))
        )
        loop = cls(optimizer, scheduler, QuestionSampler(sorted(question_ids), seed=config.seed))
        if saved:
            optimizer.load_state_dict(saved["optimizer"])
            scheduler.load_state_dict(saved["scheduler"])
            # The learning rate is the config's, not the one saved with the optimizer: a run's
            # config.json says what it trains with, also after it was changed for a resume.
            scheduler.base_lrs = [config.lr for _ in optimizer.param_groups]
            for group in optimizer.param_groups:
                group["initial_lr"] = config.lr
                group["lr"] = config.lr * scheduler.lr_lambdas[0](scheduler.last_epoch)
            loop.sampler.load(saved["sampler"])
            loop.visits, loop.solved = saved["visits"], set(saved["solved"])
            loop.mastered = saved.get("mastered", {})  # absent from older checkpoints
            loop.step = saved["step"]
            restore_rng_states(saved["rng"])
        return loop

    def count_group(
        self,
        question_id: str,
        any_correct: bool,
        hold_back_after: int,
        mastered: bool = False,
        retire_after: int = 0,
    ) -> None:
        """The curriculum's count of one sampled group: a question with no correct sample in
        `hold_back_after` visits is held back (near-impossible questions teach shortcuts); one
        `mastered` (every sample right, the rewards tied) `retire_after` visits in a row is
        retired, held back too: its groups would tie again and take a step's place."""
        self.visits[question_id] = self.visits.get(question_id, 0) + 1
        self.mastered[question_id] = self.mastered.get(question_id, 0) + 1 if mastered else 0
        if retire_after and self.mastered[question_id] >= retire_after:
            self.sampler.held_back.add(question_id)
        if any_correct:
            self.solved.add(question_id)
        elif (
            hold_back_after
            and question_id not in self.solved
            and self.visits[question_id] >= hold_back_after
        ):
            self.sampler.held_back.add(question_id)

    def saved(self, config: TrainConfig) -> dict:
        """The trainer state a checkpoint holds (`begin` reads it back)."""
        return {
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "sampler": self.sampler.state(),
            "visits": self.visits,
            "solved": sorted(self.solved),
            "mastered": self.mastered,
            "config": config.to_dict(),
        }


def rollout_stats(trajectories: Sequence[Trajectory], tokenizer) -> dict[str, float]:
    """Behaviour of the agent (`evaluation.metrics.behaviour`), tokens counted as trained."""
    return behaviour(
        trajectories, lambda text: len(tokenizer.encode(text, add_special_tokens=False))
    )


def score(trajectories, questions, config: TrainConfig, judge) -> list[dict[str, float]]:
    """Reward every trajectory; each keeps its per-component values in `.reward`."""
    inputs = [t.to_reward_input(q) for t, q in zip(trajectories, questions, strict=True)]
    breakdowns = compute_rewards(inputs, config.reward, judge)
    for trajectory, breakdown in zip(trajectories, breakdowns, strict=True):
        trajectory.reward = breakdown.to_metrics()
    return [t.reward for t in trajectories]


def rollout_share(engine, questions: Sequence[str], sampling: SamplingParams, ranks: Ranks):
    """The trajectories of `questions`, each rank sampling its contiguous share with the
    random streams a single process would give those rows (`seed + row`), on every rank."""
    rows = ranks.share(len(questions))
    mine = dataclasses.replace(sampling, seed=sampling.seed + rows.start)
    sampled = engine.rollout([questions[i] for i in rows], mine) if rows else []
    return ranks.gather(sampled)


def has_signal(group_totals: torch.Tensor) -> bool:
    """A group whose rewards all tie has no advantage to learn from."""
    return bool(group_totals.std() > 1e-6)


def teaches(group_totals: torch.Tensor, group_correct: Sequence[bool], advantage: str) -> bool:
    """Whether a group is trained on: under GRPO when its rewards do not all tie, under
    expert iteration when one of its samples is judged correct (ties or not)."""
    return any(group_correct) if advantage == "correct" else has_signal(group_totals)


def step_advantages(
    totals: torch.Tensor, correct: Sequence[bool], config: TrainConfig
) -> torch.Tensor:
    """Each sample's advantage: its reward against its group's (GRPO), or 1 when judged
    correct and 0 otherwise (expert iteration: the policy fine-tuned on its own answers
    that the judge verified)."""
    if config.advantage == "correct":
        return torch.tensor(correct, dtype=torch.float32)
    return group_advantages(totals, config.group_size, normalize_std=config.normalize_std)


def sample_groups(
    engine,
    sampler,
    by_id,
    config: TrainConfig,
    judge,
    ranks: Ranks,
    step: int,
    counterfactuals: Counterfactuals | None = None,
):
    """A step's groups: `group_size` rollouts for each of `questions_per_step` questions,
    scored (by rank 0, sent to the others). With `refill_rounds`, groups that teach nothing
    (rewards that all tie; under expert iteration, no sample judged correct) are replaced by
    fresh questions' groups, up to that many more rounds (dynamic sampling, as DAPO does):
    the step trains on a full batch where the questions allow. With `counterfactual_share`,
    that share of the groups is asked with its answer's words swapped, as `counterfactuals`
    chooses (training.counterfactual; the question's `meta["swapped"]` says so).
    Returns the question ids, one question per row, the trajectories, their rewards and the
    rounds sampled."""
    G = config.group_size
    ids, questions, trajectories, rewards = [], [], [], []
    wanted, rounds = config.questions_per_step, 0
    while wanted > 0 and rounds <= config.refill_rounds:
        taken = sampler.take(wanted)
        if not taken:
            break
        stream = "rollouts" if rounds == 0 else f"rollouts/refill-{rounds}"
        swaps = (
            counterfactuals.choose(
                [by_id[i] for i in taken],
                config.counterfactual_share,
                stream_seed(config.seed, f"counterfactual/{stream}", step),
            )
            if counterfactuals
            else {}
        )
        posed = {i: counterfactual(by_id[i], swaps[i]) if i in swaps else by_id[i] for i in taken}
        asked = [posed[i] for i in taken for _ in range(G)]
        sampling = SamplingParams(
            config.temperature, config.top_p, seed=stream_seed(config.seed, stream, step)
        )
        with results_swapped(engine, {by_id[i].question: swaps[i] for i in swaps}):
            sampled = rollout_share(engine, [q.question for q in asked], sampling, ranks)
        scored = ranks.broadcast(score(sampled, asked, config, judge) if ranks.main else None)
        for trajectory, reward in zip(sampled, scored, strict=True):
            trajectory.reward = reward
        ids, questions = ids + taken, questions + asked
        trajectories, rewards = trajectories + sampled, rewards + scored
        rounds += 1
        totals = torch.tensor([r["total"] for r in rewards])
        correct = [r["correct"] > 0 for r in rewards]
        trained = sum(
            teaches(totals[g * G : (g + 1) * G], correct[g * G : (g + 1) * G], config.advantage)
            for g in range(len(ids))
        )
        wanted = config.questions_per_step - trained
    return ids, questions, trajectories, rewards, rounds


def validate(
    engine,
    questions: Sequence[Question],
    config: TrainConfig,
    judge,
    seed: int,
    ranks: Ranks = SINGLE,
) -> dict:
    """Sampled validation, `eval_samples` rollouts per question, measured exactly as
    `sleuth eval` and eval.json measure (`evaluation.metrics.summarize`), under `val/`; the
    rollouts shared among the ranks, the metrics on rank 0 (empty on the others)."""
    k = config.eval_samples
    expanded = [q for q in questions for _ in range(k)]
    trajectories = rollout_share(
        engine,
        [q.question for q in expanded],
        SamplingParams(temperature=config.temperature, top_p=config.top_p, seed=seed),
        ranks,
    )
    if not ranks.main:
        return {}
    samples = [trajectories[i * k : (i + 1) * k] for i in range(len(questions))]
    tokens = engine.tokenizer

    def count_tokens(text: str) -> int:
        return len(tokens.encode(text, add_special_tokens=False))

    metrics = summarize(questions, samples, judge, count_tokens)
    metrics[f"pass@{k}"] = metrics.pop("pass@k")  # the page labels pass@k with its k
    return {f"val/{key}": value for key, value in metrics.items()}


def freeze_below(model, top_layers: int) -> None:
    """Leave only the top `top_layers` decoder layers and the final norm trainable."""
    model.requires_grad_(False)
    decoder = model.get_decoder()
    for layer in decoder.layers[-top_layers:]:
        layer.requires_grad_(True)
    decoder.norm.requires_grad_(True)


def _mean(values) -> float:
    values = list(values)
    return sum(values) / len(values) if values else 0.0


def policy_model(model, config: TrainConfig, checkpoint: Path | None):
    """The model the run trains: LoRA-wrapped or whole, from the checkpoint on a resume,
    frozen below its top `train_layers` when asked."""
    if config.lora:
        from peft import LoraConfig, PeftModel, get_peft_model

        if checkpoint:
            model = PeftModel.from_pretrained(model, checkpoint / "model", is_trainable=True)
        else:
            model = get_peft_model(
                model,
                LoraConfig(
                    r=config.lora_rank,
                    lora_alpha=2 * config.lora_rank,
                    target_modules="all-linear",
                    task_type="CAUSAL_LM",
                ),
            )
    elif checkpoint:
        from transformers import AutoModelForCausalLM

        device = model.device  # the worker's GPU, if it has one
        model = AutoModelForCausalLM.from_pretrained(
            checkpoint / "model", dtype=torch.float32, **NO_HUB_KERNELS
        )
        model.to(device)
    if config.train_layers and not config.lora:
        freeze_below(model, config.train_layers)
    return model


def policy_update(
    model,
    trajectories: Sequence[Trajectory],
    advantages: torch.Tensor,
    train_rows: Sequence[int],
    dgpo: Sequence[Trajectory],
    *,
    config: TrainConfig,
    precision: str,
    reference=None,
    pad_id: int = 0,
    check: Callable[[], None] = lambda: None,
    ranks: Ranks = SINGLE,
) -> dict:
    """Accumulate the step's gradient: the policy loss over every kept model token (in
    packed micro-batches, each weighted by its share of the tokens) and DGPO's teacher NLL;
    clip it. Returns the loss metrics, entropy, grad norm, tokens run and whether there is
    anything to step on. The caller steps the optimizer. `check()` runs before each
    micro-batch (it may raise to abandon the update). With several ranks (each holding the
    whole step's trajectories) each runs its share of the rows and of DGPO's targets, the
    shares weighted by the whole step's counts, and the gradients are summed."""
    model.train()
    policy_tokens = sum(trajectories[i].model_tokens for i in train_rows)
    lengths = [len(t.token_ids) for t in trajectories]
    mine = [train_rows[i] for i in ranks.share(len(train_rows))]
    metrics: dict[str, float] = {}
    entropy_sum, trained_tokens = 0.0, 0
    for rows in packed_micro_batches(mine, lengths, config.max_batch_tokens):
        check()
        batch = collate_packed(
            [[trajectories[i] for i in row] for row in rows],
            [[advantages[i].item() for i in row] for row in rows],
            pad_id=pad_id,
        ).to(model.device)
        # π of the distribution the rollout sampled from (its temperature), as μ is.
        logp, entropy = batch_logprobs(
            model, batch, with_entropy=True, temperature=config.temperature, precision=precision
        )
        ref_logp = None
        if reference is not None:
            with torch.no_grad():
                ref_logp, _ = batch_logprobs(
                    reference, batch, temperature=config.temperature, precision=precision
                )
        loss, batch_metrics = policy_loss(
            logp,
            batch.rollout_logp,
            batch.advantages,
            batch.loss_mask,
            config.loss,
            ref_logp=ref_logp,
        )
        share = batch.model_tokens / max(policy_tokens, 1)
        (loss * share).backward()
        for key, value in batch_metrics.items():
            metrics[key] = metrics.get(key, 0.0) + value * share
        entropy_sum += float((entropy * batch.loss_mask).sum())
        trained_tokens += batch.tokens
    for rows in packed_micro_batches(
        list(ranks.share(len(dgpo))), [len(t.token_ids) for t in dgpo], config.max_batch_tokens
    ):
        check()
        batch = collate_packed([[dgpo[i] for i in row] for row in rows], pad_id=pad_id).to(
            model.device
        )
        logp, _ = batch_logprobs(model, batch, precision=precision)
        share = sum(len(row) for row in rows) / len(dgpo)
        (config.dgpo_coef * teacher_nll(logp, batch.loss_mask) * share).backward()
        trained_tokens += batch.tokens
    stepped = bool(train_rows or dgpo)
    trainable = [p for p in model.parameters() if p.requires_grad]
    if stepped:
        ranks.sum_gradients(trainable)
    if ranks.distributed:
        totals = {}
        for part in ranks.gather([metrics]):
            for key, value in part.items():
                totals[key] = totals.get(key, 0.0) + value
        metrics = totals
        entropy_sum, trained_tokens = ranks.total(entropy_sum, trained_tokens)
    grad_norm = float(torch.nn.utils.clip_grad_norm_(trainable, 1.0)) if stepped else 0.0
    model.eval()
    return {
        "entropy": entropy_sum / max(policy_tokens, 1),
        **metrics,
        "grad_norm": grad_norm,
        "trained_tokens": int(trained_tokens),
        "stepped": stepped,
    }


def save_agent(
    model, tokenizer, config: TrainConfig, folder: Path, *, keep_model: bool = False
) -> Path:
    """The trained agent as it is handed over: its weights (LoRA merged), its tokenizer and
    the agent settings it was trained under. `keep_model` leaves a LoRA model unmerged, to
    train on (the merge works on a copy)."""
    if config.lora:
        if keep_model:
            model = copy.deepcopy(model)
        # The adapter alone too, so that agents from one base can share it when served.
        model.save_pretrained(folder / ADAPTER_DIR)
        model = model.merge_and_unload()
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    write_agent_settings(folder, config.limits, base_model=config.model)
    return folder


def keep_cold_start(model, tokenizer, config: TrainConfig, folder: Path, log) -> Path | None:
    """The agent the cold start left, saved beside where `final/` will be: RL's share of this
    very run is then measured against it (`sleuth compare`, the final evaluation), with no
    second training stopped before RL. Written whole or not at all (a folder half written
    would not load); a LoRA model is merged in a copy, which a GPU must have room for. Whatever
    fails here, the run goes on without it and says so: the cold start itself is not lost."""
    partial = folder.with_name(folder.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    try:
        if config.lora and model.device.type == "cuda":
            torch.cuda.empty_cache()  # what the cold start's batches left cached counts as free
            free, _ = torch.cuda.mem_get_info(model.device)
            needed = sum(p.numel() * p.element_size() for p in model.parameters())
            if free < 1.2 * needed:
                log(f"cold start not kept: no room on {model.device} for a merged copy")
                return None
        save_agent(model, tokenizer, config, partial, keep_model=True)
        partial.rename(folder)
    except (OSError, RuntimeError) as error:  # a full disk, a GPU out of memory
        shutil.rmtree(partial, ignore_errors=True)
        log(f"cold start not kept: {error}")
        return None
    return folder


class StopRequested(Exception):
    """`should_stop()` turned true in the middle of a step (or of the set-up): `train`
    drops that step's work and raises this, so a cancel acts within seconds."""


def drop_steps_after(path: Path, step: int) -> None:
    """Keep only the lines of a metrics or samples log up to `step` (a resume rewinds)."""
    if path.exists():
        kept = [
            line
            for line in path.read_text().splitlines()
            if line and json.loads(line)["step"] <= step
        ]
        path.write_text("".join(line + "\n" for line in kept))


def train(
    config: TrainConfig,
    *,
    model,
    tokenizer,
    index: SearchIndex,
    train_questions: Sequence[Question],
    val_questions: Sequence[Question],
    out_dir: Path,
    resume: bool = False,
    progress: bool = True,
    log: Callable[[str], None] = print,
    should_stop: Callable[[], bool] = lambda: False,
    on_step: Callable[[dict, list[dict]], None] | None = None,
    on_checkpoint: Callable[[Path, int], None] | None = None,
    judge=None,  # a ready judge (the platform's, with its key); default: from config.reward
    final_eval_questions: int | None = None,  # what the time budget keeps room for
    ranks: Ranks = SINGLE,  # this process's place in a data-parallel run
) -> dict:
    """Train in place; returns a summary. Writes metrics.jsonl, samples.jsonl, checkpoints.

    Hooks for whoever drives the run (the platform's Celery task): `on_step(record,
    samples)` after each step is logged, `on_checkpoint(folder, step)` after each save,
    and `should_stop()`, checked after every step and inside long work (between rollout
    rounds and decoded tokens, cold-start and update micro-batches): true after a step ends
    training there; true mid-step drops the step and raises StopRequested. In a
    data-parallel run the hooks run on rank 0 (`training.distributed.train_on_ranks`).
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    if final_eval_questions is None:
        final_eval_questions = len(val_questions)
    budget = config.training_seconds(final_eval_questions)
    deadline = started + budget if budget else None
    if judge is None and ranks.main:  # rank 0 scores every rank's rollouts
        judge = build_judge(config.reward)
    pad_id = tokenizer.pad_token_id or 0
    torch.manual_seed(config.seed)
    random.seed(config.seed)

    checkpoint = latest_checkpoint(out_dir) if resume else None
    state = load_trainer_state(checkpoint) if checkpoint else None
    if checkpoint:
        log(f"resuming from {checkpoint.name}")
    elif resume:
        log("nothing to resume: starting a new run")

    # Set-up: the policy, the engine it samples with, the teacher's data, the cold start.
    model = policy_model(model, config, checkpoint)
    ranks.same_parameters([p for p in model.parameters() if p.requires_grad])
    precision = resolve_precision(config.precision, model.device)
    log(f"precision: {precision} (rollouts and the trainer's matmuls)")
    engine = build_rollout_engine(
        config.rollout_engine,
        model,
        tokenizer,
        index,
        # Log-probs the trainer recomputes are the model's own: no decoding rule in rollouts.
        limits=unruled(config.limits),
        model_name=config.model,
        precision=precision,
        memory_share=config.rollout_memory_share,  # sglang's; the rest is the trainer's
    )

    def check_stop() -> None:  # inside long work: cancel acts within seconds, not a step
        if should_stop():
            raise StopRequested("stop requested mid-step")

    engine.check = check_stop
    teacher, teacher_for, by_id = teacher_data(engine, index, train_questions, config, log)
    # Only a run with a cold start keeps questions from it (a resumed one keeps the same).
    share = config.rl_fresh_share if config.sft_epochs > 0 else 0.0
    rl_only = {qid for qid, q in by_id.items() if q.meta.get("rl_only")}
    kept = kept_for_rl(
        {q: t for q, t in teacher_for.items() if q not in rl_only}, share, config.seed
    )
    kept |= rl_only  # RL's own synthetic questions (TrainConfig.rl_synthetic_questions)
    imitated = {qid: t for qid, t in teacher_for.items() if qid not in kept}
    # RL samples what the cold start did not imitate (all of it with no share kept back).
    rl_questions = [qid for qid in by_id if qid not in imitated] if kept else list(by_id)
    if kept:
        log(
            f"RL's own questions: {len(kept)} of the {len(teacher_for)} the teacher reaches, "
            f"kept from the cold start; RL samples {len(rl_questions)}"
        )
    counterfactuals = (
        Counterfactuals([by_id[qid] for qid in rl_questions], index)
        if config.counterfactual_share
        else None
    )
    warmed = ColdStartReport()
    if not checkpoint and ranks.main:  # a new run in an old folder: no earlier cold start
        shutil.rmtree(out_dir / COLD_START_DIR, ignore_errors=True)
    if not checkpoint and config.sft_epochs > 0:
        warmed = cold_start(
            model,
            cold_start_set(
                engine,
                teacher,
                imitated,
                # Nor drilled on the first search of a question kept for RL.
                {qid: q for qid, q in by_id.items() if qid not in kept},
                [q for q in train_questions if q.id not in kept],
                config,
                log,
            ),
            config,
            precision=precision,
            pad_id=pad_id,
            # The cold start may use at most its share of the training budget: RL the rest.
            deadline=started + budget * config.sft_share if budget else None,
            progress=progress,
            check=check_stop,
            log=log,
            ranks=ranks,
        )
        if ranks.main and warmed.batches:  # no batch taught: the base model, no cold start
            keep_cold_start(model, tokenizer, config, out_dir / COLD_START_DIR, log)
    if warmed.seconds_per_batch and budget:
        # The final evaluation runs at this machine's speed, which the cold start measured:
        # RL ends early enough for it on a slow machine with a large validation set.
        budget = config.training_seconds(
            final_eval_questions, eval_seconds_per_question(warmed.seconds_per_batch)
        )
        deadline = started + budget
    sync_weights(engine, model)  # the cold start's weights, before the first rollout

    reference = None
    if config.loss.kl_ref_coef > 0:
        reference = copy.deepcopy(model).eval().requires_grad_(False)
    loop = LoopState.begin(model, config, rl_questions, state)
    metrics_path, samples_path = out_dir / "metrics.jsonl", out_dir / "samples.jsonl"
    for path in (metrics_path, samples_path) if ranks.main else ():
        # Logged after the checkpoint we resume from (a run resumed before its first step
        # measures its cold start's level again).
        drop_steps_after(path, loop.step if loop.step else -1)

    def save(step: int) -> Path:
        folder = save_checkpoint(out_dir, step, model, tokenizer, loop.saved(config))
        if on_checkpoint:
            on_checkpoint(folder, step)
        prune_checkpoints(out_dir, config.keep_checkpoints)
        return folder

    if loop.step == 0 and config.eval_every and val_questions:
        # Step 0: the cold start's level, before any RL step, which RL's curve is read against
        # (the run page draws it as a line).
        seed = stream_seed(config.seed, "validation", 0)
        level = {"step": 0, **validate(engine, val_questions, config, judge, seed, ranks)}
        if ranks.main:
            with metrics_path.open("a") as f:
                f.write(json.dumps(level) + "\n")
            if on_step:
                on_step(level, [])

    G = config.group_size
    step = start_step = loop.step
    bar = tqdm(
        total=config.steps,
        initial=start_step,
        desc="RL",
        disable=not progress or not ranks.main,
        unit="step",
        dynamic_ncols=True,
    )
    stopped_early = None
    for step in range(start_step + 1, config.steps + 1):
        step_started = time.perf_counter()

        # 1-2. sample G rollouts for each question through the real search tool, and reward
        # them, every component kept on the trajectory
        ids, questions, trajectories, rewards, rounds = sample_groups(
            engine, loop.sampler, by_id, config, judge, ranks, step, counterfactuals
        )
        if not ids:
            stopped_early = "every training question is held back or retired"
            step -= 1
            break
        rollout_s = time.perf_counter() - step_started
        totals = torch.tensor([r["total"] for r in rewards])
        correct = [r["correct"] > 0 for r in rewards]  # the judge's verdict (rewards.reward)

        # 3. advantages within each question's group; curriculum
        advantages = step_advantages(totals, correct, config)
        train_rows, failed_groups, trained_groups = [], [], 0
        for g, qid in enumerate(ids):
            rows = range(g * G, (g + 1) * G)
            any_correct = any(correct[i] for i in rows)
            # A counterfactual group says how well the policy reads, not whether the question
            # is within reach, and the teacher's trajectory (DGPO's target) gives its real answer.
            if not questions[g * G].meta.get("swapped"):
                loop.count_group(
                    qid,
                    any_correct,
                    config.hold_back_after,
                    mastered=all(correct[i] for i in rows) and not has_signal(totals[list(rows)]),
                    retire_after=config.retire_after,
                )
                if not any_correct:
                    failed_groups.append(qid)
            if teaches(totals[list(rows)], [correct[i] for i in rows], config.advantage):
                trained_groups += 1
                # Expert iteration trains on the correct samples alone: the others' advantage
                # is 0, and in the token mean they would only dilute the correct ones.
                kept = [i for i in rows if correct[i]] if config.advantage == "correct" else rows
                train_rows.extend(kept)
        dgpo = (
            [teacher_for[q] for q in failed_groups if q in teacher_for] if config.dgpo_coef else []
        )

        # 4. loss, token-level over every kept model token, and `updates_per_step` optimizer
        # steps on it; the first update's metrics are the step's (on-policy), the last's
        # trust-region share is kept beside them (`last_update/…`)
        train_started = time.perf_counter()
        updates = []
        for _ in range(config.updates_per_step):
            update = policy_update(
                model,
                trajectories,
                advantages,
                train_rows,
                dgpo,
                config=config,
                precision=precision,
                reference=reference,
                pad_id=pad_id,
                check=check_stop,
                ranks=ranks,
            )
            stepped = update.pop("stepped")
            if stepped:
                loop.optimizer.step()
            loop.optimizer.zero_grad(set_to_none=True)
            updates.append(update)
            if not stepped:
                break
        if stepped:
            loop.scheduler.step()
            sync_weights(engine, model)
        update = updates[0]
        update["trained_tokens"] = sum(u["trained_tokens"] for u in updates)
        if len(updates) > 1:
            final_update = updates[-1]
            update["updates"] = len(updates)
            for key in ("masked_share", "mismatch_abs", "grad_norm"):
                if key in final_update:
                    update[f"last_update/{key}"] = final_update[key]
        train_s = time.perf_counter() - train_started

        # 5. log: every reward component, behaviour, mismatch, speed
        swapped_rows = [i for i, q in enumerate(questions) if q.meta.get("swapped")]
        step_s = time.perf_counter() - step_started
        generated = sum(t.model_tokens for t in trajectories)
        record = {
            "step": step,
            **{f"reward/{key}": _mean(r[key] for r in rewards) for key in rewards[0]},
            "accuracy": _mean(correct),
            "golden_recall": _mean(r["golden_recall"] for r in rewards),
            **rollout_stats(trajectories, tokenizer),
            **update,
            "lr": loop.scheduler.get_last_lr()[0],
            "groups_dropped": len(ids) - trained_groups,
            "sample_rounds": rounds,
            "dgpo_groups": len(dgpo),
            # How well it read where the answer by heart was wrong (absent when none was).
            **(
                {"counterfactual_accuracy": _mean(correct[i] for i in swapped_rows)}
                if swapped_rows
                else {}
            ),
            "counterfactual_groups": len(swapped_rows) // G,
            "held_back": len(loop.sampler.held_back),
            "retired": sum(
                config.retire_after > 0 and streak >= config.retire_after
                for streak in loop.mastered.values()
            ),
            "judge_errors": sum(r["judge_failed"] for r in rewards),
            "rollout_tokens_per_s": generated / max(rollout_s, 1e-9),
            "train_tokens_per_s": update.pop("trained_tokens") / max(train_s, 1e-9),
            "rollout_s": rollout_s,
            "train_s": train_s,
            "step_s": step_s,
        }
        # Every rank ends on the same step, whichever saw the clock run out or the stop.
        out_of_time = ranks.any(deadline is not None and time.monotonic() > deadline)
        last = step == config.steps or out_of_time or ranks.any(should_stop())
        if config.eval_every and (step % config.eval_every == 0 or last) and val_questions:
            seed = stream_seed(config.seed, "validation", step)
            record.update(validate(engine, val_questions, config, judge, seed=seed, ranks=ranks))
        if not ranks.main:  # rank 0 logs, reports and saves
            if last and step != config.steps:
                break
            continue
        with metrics_path.open("a") as f:
            f.write(json.dumps(record) + "\n")
        samples = [
            {
                "step": step,
                "question_id": questions[i].id,
                "golden_chunk_ids": questions[i].golden_chunk_ids,
                "ground_truth": questions[i].answer,
                **trajectories[i].to_dict(),
            }
            for i in range(0, len(trajectories), G)[: config.samples_logged]
        ]
        with samples_path.open("a") as f:
            f.writelines(json.dumps(sample) + "\n" for sample in samples)
        if on_step:
            on_step(record, samples)
        bar.update(1)
        bar.set_postfix(
            reward=f"{record['reward/total']:.2f}",
            acc=f"{record['accuracy']:.2f}",
            recall=f"{record['golden_recall']:.2f}",
        )

        # 6. save
        if (config.save_every and step % config.save_every == 0) or last:
            save(step)
        if last and step != config.steps:
            stopped_early = "time budget spent" if out_of_time else "stop requested"
            break
    bar.close()
    if not ranks.main:
        return {"steps": step, "rank": ranks.rank}
    if step == start_step and not latest_checkpoint(out_dir):
        save(step)  # nothing trained (or every question held back): still leave a checkpoint
    return {
        "steps": step,
        "checkpoint": str(latest_checkpoint(out_dir)),
        "final": str(save_agent(model, tokenizer, config, out_dir / "final")),
        "stopped_early": stopped_early,
        "minutes": (time.monotonic() - started) / 60,
        "teacher_questions": len(teacher_for),
        # What the time budget bought on this machine: the same preset sees 0.4 of an
        # epoch of cold start on a 2-core CPU without bfloat16 and nearly one with it.
        "precision": precision,
        "cold_start_batches": warmed.batches,
        "cold_start_seconds": (warmed.seconds_per_batch or 0.0) * warmed.batches,
        "cold_start_epochs": warmed.epochs,
    }
