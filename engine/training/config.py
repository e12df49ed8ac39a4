"""A training run's settings, stored with every checkpoint so a resume trains the same run."""

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Literal, TypeVar

from engine.agent.precision import PRECISIONS
from engine.agent.trajectory import Limits
from engine.evaluation.folds import train_val_split
from engine.packs import check_pack, pack_limits, pack_teacher
from engine.rewards.reward import RewardConfig
from engine.settings import Settings, option

Q = TypeVar("Q")

# The final evaluation's cost on a 2-core CPU, set-up included: 25 validation questions took
# 3.4 minutes (the trained agent, the base, echo@K and echo). A GPU is faster.
EVAL_SETUP_SECONDS = 60
EVAL_SECONDS_PER_QUESTION = 8
# A slower machine evaluates slower, as it trains slower: a question of the final evaluation
# (four policies, 16 questions a batch) took about as long as a cold-start micro-batch of
# 4096 tokens, on a 2-core CPU with bfloat16 (5.8 s against about 6 s) and one without
# (11.1 s against 12.3 s; docs/results/cpu-45min-runs.md).
EVAL_QUESTION_PER_COLD_START_BATCH = 1.0
# A run with a cold start evaluates it too, beside the trained agent (RL's share of the run,
# `training.evaluate`): one agent more, which took 0.4 of a question's time (2.3 of 5.7 s on
# python-reference for the trained agent, the base, echo@K and echo).
EVAL_COLD_START_SHARE = 0.4


def eval_seconds_per_question(cold_start_batch_seconds: float | None = None) -> float:
    """What a question of the final evaluation is given: `EVAL_SECONDS_PER_QUESTION`, more
    on a machine whose cold start ran slower (its measured seconds a micro-batch)."""
    measured = (cold_start_batch_seconds or 0.0) * EVAL_QUESTION_PER_COLD_START_BATCH
    return max(EVAL_SECONDS_PER_QUESTION, measured)


# One machine's devices at most: a run spans the devices of one worker, never a fleet's.
MAX_RANKS = 8

LossKind = Literal["dppo_tv", "dppo_kl", "tis", "mis"]
LOSS_KINDS: tuple[str, ...] = LossKind.__args__
Advantage = Literal["group", "correct"]
ADVANTAGES: tuple[str, ...] = Advantage.__args__


@dataclass
class LossConfig(Settings):
    """The policy loss (training/losses.py); here, apart from torch, so that the web process
    reads and writes run settings without importing it."""

    kind: LossKind = option("dppo_tv", help="policy loss", flag="--loss")
    delta: float = 0.2  # DPPO trust region on π−μ (TV) or on the Bernoulli KL
    is_cap: float = 2.0  # C: importance weights are capped (DPPO, TIS) or masked above it (MIS)
    kl_ref_coef: float = option(0.0, help="KL-to-reference coefficient β", flag="--kl-ref")

    def __post_init__(self) -> None:
        if self.kind not in LOSS_KINDS:
            # PPO-clip is not offered: with one update per batch its ratio π/π_old is 1, and
            # with several (`updates_per_step`) DPPO's trust region on π−μ bounds them.
            raise ValueError(f"unknown loss kind {self.kind!r}; one of {', '.join(LOSS_KINDS)}")

    SETTINGS_LABEL: ClassVar[str] = "loss"
    # Settings stored by older versions carry PPO's clip range (PPO is gone): ignored.
    LEGACY_SETTINGS: ClassVar[frozenset[str]] = frozenset({"clip_low", "clip_high", "clip"})


@dataclass
class TrainConfig(Settings):
    SETTINGS_LABEL: ClassVar[str] = "run"

    model: str = option("default", help="model folder or id (default SmolLM2-135M)")
    # Settings true of one kind of document only (`engine.packs`); none by default, so the
    # engine's default path assumes no domain.
    pack: str = option("", help="a pack of settings for one kind of document: filings (or none)")
    seed: int = option(0, help="training seed")
    # data
    val_fraction: float = option(0.25, help="share of questions held out (whole entities)")
    split_seed: int | None = option(None, help="which entities are held out (default: --seed)")
    # k-fold evaluation (`evaluation.folds`): the k runs of one seed, each holding out its fold
    # instead of `val_fraction`, evaluate every question once, pooled by `sleuth compare`.
    folds: int = option(0, help="hold out one of this many entity folds (0: --val-fraction)")
    fold: int = option(0, help="the fold held out, from 0 (with --folds)")
    # cold start
    sft_epochs: int = option(3, help="cold-start SFT epochs")
    sft_lr: float = option(1e-4, help="cold-start SFT learning rate")
    # The most of a timed run's training budget the cold start may take; RL gets the rest.
    sft_share: float = option(0.5, help="most of the training time the cold start may take")
    # The last share of the cold start (of its epochs or of its time, whichever runs out
    # first) over which its learning rate falls linearly to zero; 0 keeps it constant.
    sft_warmdown: float = option(
        0.0, help="last share of the cold start over which its learning rate falls to zero"
    )
    # The weight of an answer's tokens against a search's in the cold start's loss. A
    # trajectory's answer is a few tokens of its sixty-odd, the figure among them two or three:
    # at weight 1 the cold start is mostly a lesson in searching. At 4 the student learned the
    # answers' form harder, not which figure to copy: no preset takes it.
    sft_answer_weight: float = option(
        1.0, help="cold-start loss weight of the answer's tokens (a search's tokens weigh 1)"
    )
    # Per teacher question, first searches on made-up entity names (see teacher.scope_drills).
    # None by default: they teach a scope for every question that names its entity, and a
    # student taught on them scopes questions that name none, to a word of the question
    # (docs/evaluation.md). The filings pack, whose questions name their company, turns them on.
    scope_drills: int = option(0, help="per question, scoped searches on made-up names")
    # More of them for each of the customer's own questions: their shapes are what the agent
    # is asked (long, a definition after the question, the company named late), and every
    # synthetic question names its entity the same way: taught on those alone, a student wrote
    # a training entity's scope for the long questions of one it never saw.
    customer_scope_drills: int = option(
        0, help="scoped searches on made-up names per question of the customer's own"
    )
    heading_search: bool = option(True, help="the teacher's page-kind heading search (teacher.py)")
    # The teacher's scope names the latest year the question asks about beside its entity
    # (teacher.ScriptedTeacher.scope): a filing's convention, the filings pack's.
    scope_years: bool = option(
        False, help="the teacher's scope names the latest year the question asks about"
    )
    # The teacher's first search is the question alone (written "[]"): a student copying a
    # scoped one guesses which word of a question names a document, and a wrong guess loses
    # the passage; the scope goes to the second search. On, the first search carries the
    # question's scope ("[assert] What …"), as the filings pack's questions name their company.
    scoped_first_search: bool = option(
        False, help="the teacher's first search is scoped to the question's entity"
    )
    refine_search: bool = option(True, help="the teacher's key-term second search after a miss")
    refine_always: bool = option(
        False, help="the key-term second search follows every first search, not only a miss"
    )
    # The second search repeats the question within its scope, written as the scope alone
    # ("[3M]", "[]"): the question's next hits (teacher.ScriptedTeacher.refine_terms).
    refine_terms: bool = option(
        True, help="the teacher's second search writes the key terms, not the scope alone"
    )
    # The teacher searches the key terms within the part of the document the question names
    # ("[3M 2018 | cash flow statement] capital expenditure" for "… shown in the cash flow
    # statement").
    section_search: bool = option(
        False, help="the teacher searches again within the part of the document the question names"
    )
    # Failing a heading phrase, a financial statement the question names by another name
    # than its heading's ("the P&L"): the filings pack's.
    statement_names: bool = option(
        False, help="the section search reads a financial statement named by any of its names"
    )
    # The teacher answers a synthesized lookup with its row's label and figure
    # ("Total assets 236,495 million": teacher.ScriptedTeacher.quoted_answers).
    quoted_answers: bool = option(
        False, help="the teacher answers a synthesized lookup with its row's label and figure"
    )
    # Questions synthesized from the training entities' own documents (documents.synthesis):
    # plentiful, easier, every one checked reachable by the teacher; they feed the cold
    # start and the RL curriculum. The customer's questions stay the validation set.
    synthetic_questions: int = option(
        0, help="questions synthesized from the training entities' documents for cold start and RL"
    )
    # Synthetic questions that quote a sentence of the documents with one word blanked out
    # (documents.synthesis.READING_KINDS), in turn with the other kinds: answers to copy from
    # the results, where the customer's questions are few and the other kinds need sentences
    # of given shapes.
    completion_questions: bool = option(
        False, help="synthetic questions also ask for a word blanked out of a quoted sentence"
    )
    # Synthetic questions whose evidence is on a kind of page the customer's questions name
    # carry one of the customer's own sentences naming it ("… shown in the balance sheet"),
    # so the section search is taught on hundreds of questions (teacher.name_sections).
    synthetic_sections: bool = option(
        False, help="synthetic questions name their statement in the customer's own words"
    )
    # RL
    steps: int = option(20, help="RL steps")
    questions_per_step: int = option(4, help="questions per RL step")
    group_size: int = option(4, help="rollouts per question (GRPO group)")
    lr: float = option(2e-5, help="RL learning rate")
    warmup_steps: int = 2
    loss: LossConfig = field(default_factory=LossConfig)
    # GRPO; False gives Dr. GRPO (advantage = r − mean)
    normalize_std: bool = option(True, help="advantages divided by the group's std (GRPO)")
    # What a sample's advantage is. "group": its reward against its group's (GRPO, Dr. GRPO
    # without the std). "correct": 1 when the judge finds its answer correct, 0 otherwise, and
    # every correct sample is trained on, in groups that tie too: expert iteration
    # (rejection-sampling fine-tuning) on the policy's own verified answers, which learns from
    # a question the policy always answers right, where GRPO's tied group teaches nothing.
    # No preset takes it: it added nothing told from noise over the cold start alone
    # (docs/results.md, "Expert iteration").
    advantage: Advantage = option(
        "group", help="group (GRPO) or correct (expert iteration on answers judged correct)"
    )
    # Groups that teach nothing (rewards that all tie; under expert iteration, no sample
    # judged correct); without refills a step trains on those left.
    refill_rounds: int = option(
        0, help="sampling rounds a step may add to replace groups that teach nothing"
    )
    dgpo_coef: float = option(
        0.2, help="teacher NLL weight on groups with no correct sample (0: off)", flag="--dgpo"
    )
    # Optimizer steps taken on each batch of rollouts. One is on-policy; from the second, π
    # has moved from the μ the batch was sampled with, and DPPO's trust region masks the
    # tokens that have left it: more learning from each batch, where on a CPU the rollouts
    # cost as much as the update. No preset takes more than one: two changed nothing, the
    # trust region never binding at LoRA's step size (docs/results.md, "Two updates a batch").
    updates_per_step: int = option(1, help="optimizer steps on each batch of rollouts")
    # RL samples questions; those the cold start imitated, three epochs over, the policy
    # answers alike in every sample, so their groups tie and teach nothing. This share of the
    # questions the teacher reaches is left out of the cold start, and RL samples those (and
    # the ones the teacher never reached) only: questions the policy is still unsure of. DGPO
    # still pulls a group with no correct sample toward the teacher's trajectory, so a kept
    # question the policy keeps failing is shown its answer then, by RL's own rule.
    rl_fresh_share: float = option(
        0.0, help="share of the teacher's questions kept from the cold start for RL alone"
    )
    # Synthetic questions RL alone samples, never imitated: RL on the questions the cold start
    # showed learns their answers, not how to read; on questions it has never seen, a better
    # reward can only come from reading the results better. No preset takes it: it added
    # nothing over the cold start alone (docs/results.md, "RL on questions it was never shown").
    rl_synthetic_questions: int = option(
        0, help="more synthesized questions for RL alone, never in the cold start"
    )
    # RL's questions asked against results with their answer's words swapped for others of
    # the same shape, in the results and the truth (training.counterfactual): the answer the
    # cold start taught by heart is wrong there, and only reading the results is rewarded.
    # No preset takes it: it added nothing told from noise over the cold start alone
    # (docs/results.md, "Counterfactual questions").
    counterfactual_share: float = option(
        0.0, help="share of RL's groups asked with the answer's words swapped in the results"
    )
    # The same swap in the cold start: a share of the questions it imitates is taught twice,
    # as asked and against results that say another answer, so that the answer written is the
    # one read, not the one the question recalls (training.counterfactual). No preset takes it:
    # held-out reading rose outside its interval on two seeds, accuracy inside it, the answers
    # that must be inferred rather than read falling (docs/results.md, "Counterfactual copies").
    cold_start_counterfactuals: float = option(
        0.0, help="share of the cold start's questions also taught with the answer's words swapped"
    )
    # Beside each copy, a taught question whose answer is not read in its results taught again
    # as it is: the copies alone shift the mix toward answers read, and the answers lost were
    # those that must be inferred (docs/results.md, "Counterfactual copies, a second seed").
    # No preset takes it yet: over two seeds of cold starts, accuracy +0.060 [+0.008, +0.117]
    # on python-reference, but the cold start is 1.8 times as long, not measured inside a
    # preset's clock (docs/results.md, "Copies beside repeats, a second seed").
    cold_start_counterfactual_repeats: bool = option(
        False, help="beside each counterfactual copy, a question whose answer is not read"
    )
    lora: bool = option(False, help="train LoRA adapters, not all weights")
    lora_rank: int = 16
    # Train only the top N decoder layers (and the final norm): backward stops there, which
    # roughly halves a step's cost on CPU. None trains every weight.
    train_layers: int | None = option(None, help="train only the top N decoder layers")
    max_batch_tokens: int = 4096  # padded tokens per micro-batch (gradient accumulation)
    rollout_engine: str = option(
        "hf", help="hf (transformers) or sglang (GPU workers): agent.engines"
    )
    # The share of the GPU an sglang rollout engine takes for its weights and KV cache; the
    # trainer beside it on the same device needs the rest (the hf engine shares the model).
    rollout_memory_share: float = 0.45
    # The number format of rollouts and of the trainer's matmuls (agent.precision): "auto"
    # is bfloat16 where the hardware runs it fast (2x per step on this project's CPUs).
    precision: str = option(
        "float32",
        help="rollouts and trainer matmuls: auto (bfloat16 where fast), float32 or bfloat16",
    )
    # Data-parallel processes, each with the whole model on its own device (a GPU, or a share
    # of the CPU's cores): the run's steps are the same, its time shorter (training.distributed).
    ranks: int = option(1, help="processes the run trains in, one device each (data-parallel)")
    temperature: float = option(1.0, help="rollout sampling temperature")
    top_p: float = 1.0
    limits: Limits = field(default_factory=Limits)
    # Near-impossible questions teach shortcuts, so RL stops sampling a question after this
    # many visits with no correct sample. RL's own questions (`rl_fresh_share`) are ones the
    # policy was not shown: most are failed at first, and two visits held back nearly all.
    hold_back_after: int = option(
        2, help="visits with no correct sample before RL stops asking a question (0: never)"
    )
    # A question every sample answers right, with rewards that tie, teaches nothing the next
    # time either: RL stops asking it after this many such visits in a row, and the steps go
    # to questions the policy sometimes misses. A long run visits each question several times;
    # a 45-minute one rarely twice.
    retire_after: int = option(
        0, help="visits in a row with every sample right before RL stops asking (0: never)"
    )
    reward: RewardConfig = field(default_factory=RewardConfig)
    # bookkeeping
    eval_every: int = option(10, help="validate every N steps (0: only at the end)")
    eval_samples: int = 4
    # A large validation set costs the clock training needs: the final evaluation takes a
    # fixed random sample of it (its intervals in eval.json), the rest evaluated after the run.
    final_eval_sample: int = option(
        0, help="final evaluation on this many held-out questions, a seeded sample (0: all)"
    )
    save_every: int = option(10, help="checkpoint every N steps")
    # the platform also keeps the best
    keep_checkpoints: int = option(3, help="keep the last N checkpoints (0: all)")
    samples_logged: int = 2
    max_minutes: float | None = option(
        None, help="the whole run's budget, its final evaluation included; stops cleanly"
    )

    @classmethod
    def upgrade_settings(cls, data: dict) -> dict:
        """A run stored before packs existed ran the rules it stored, and a teacher that
        always scoped by the latest year and read statements' other names: it resumes as it
        ran, in the filings pack those habits now belong to. A run stored before its teacher's
        first search could go unscoped resumes with the scoped one it had."""
        data = {"scoped_first_search": True, **data}
        if "pack" in data:
            return data
        return {
            "scope_years": True,
            "statement_names": True,
            **data,
            "pack": "filings",
        }

    def __post_init__(self) -> None:
        check_pack(self.pack)
        for rule, pack in pack_limits().items():
            if getattr(self.limits, rule) and self.pack != pack:
                raise ValueError(_outside_pack(f"limits.{rule}", pack))
        for name, pack in pack_teacher().items():
            if getattr(self, name) and self.pack != pack:
                raise ValueError(_outside_pack(name, pack))
        if self.precision not in PRECISIONS:
            raise ValueError(
                f"unknown precision {self.precision!r}; choose one of {', '.join(PRECISIONS)}"
            )
        if self.hold_back_after < 0:
            raise ValueError(f"hold_back_after must be 0 or more, not {self.hold_back_after}")
        if self.retire_after < 0:
            raise ValueError(f"retire_after must be 0 or more, not {self.retire_after}")
        for name in ("synthetic_questions", "rl_synthetic_questions"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be 0 or more, not {getattr(self, name)}")
        if self.advantage not in ADVANTAGES:
            raise ValueError(
                f"unknown advantage {self.advantage!r}; choose one of {', '.join(ADVANTAGES)}"
            )
        if self.updates_per_step < 1:
            raise ValueError(f"updates_per_step must be 1 or more, not {self.updates_per_step}")
        if not 0 <= self.counterfactual_share <= 1:
            raise ValueError(
                f"counterfactual_share must be from 0 to 1, not {self.counterfactual_share}"
            )
        if not 0 <= self.cold_start_counterfactuals <= 1:
            raise ValueError(
                "cold_start_counterfactuals must be from 0 to 1, "
                f"not {self.cold_start_counterfactuals}"
            )
        if not 0 <= self.rl_fresh_share < 1:
            raise ValueError(
                f"rl_fresh_share must be at least 0 and below 1, not {self.rl_fresh_share}"
            )
        if not 0 < self.sft_share <= 1:
            raise ValueError(f"sft_share must be above 0 and at most 1, not {self.sft_share}")
        if self.sft_answer_weight <= 0:
            raise ValueError(f"sft_answer_weight must be above 0, not {self.sft_answer_weight}")
        if not 0 <= self.sft_warmdown <= 1:
            raise ValueError(f"sft_warmdown must be from 0 to 1, not {self.sft_warmdown}")
        if not 1 <= self.ranks <= MAX_RANKS:
            raise ValueError(f"ranks must be from 1 to {MAX_RANKS}, not {self.ranks}")

    def entity_split_seed(self) -> int:
        return self.seed if self.split_seed is None else self.split_seed

    def split(self, questions: Sequence[Q]) -> tuple[list[Q], list[Q]]:
        """The run's (train, validation) questions: its fold held out when it has folds, else
        whole entities making up `val_fraction`. ValueError for more folds than entities."""
        return train_val_split(
            questions,
            val_fraction=self.val_fraction,
            seed=self.entity_split_seed(),
            folds=self.folds,
            fold=self.fold,
        )

    @property
    def evaluates_cold_start(self) -> bool:
        """Whether the final evaluation runs the cold start beside the agent: a run with a
        cold start and RL steps after it (with none, the two are one)."""
        return self.sft_epochs > 0 and self.steps > 0

    def training_seconds(
        self,
        final_eval_questions: int = 0,
        seconds_per_question: float = EVAL_SECONDS_PER_QUESTION,
    ) -> float | None:
        """What training may spend of max_minutes: the final evaluation (four policies on
        each of `final_eval_questions`, `seconds_per_question` each, and the cold start's
        agent where the run has one) needs the rest, a quarter or ten minutes, more for a
        large validation set, never more than half."""
        if not self.max_minutes:
            return None
        if self.final_eval_sample:
            final_eval_questions = min(final_eval_questions, self.final_eval_sample)
        if self.evaluates_cold_start:
            seconds_per_question *= 1 + EVAL_COLD_START_SHARE
        budget = 60 * self.max_minutes
        reserve = max(
            min(budget / 4, 600),
            EVAL_SETUP_SECONDS + seconds_per_question * final_eval_questions,
        )
        return budget - min(reserve, budget / 2)


def _outside_pack(setting: str, pack: str) -> str:
    return (
        f"{setting} is a setting of the {pack} pack, true of its documents only: "
        f"choose the pack (--pack {pack}, or pack={pack!r})"
    )
