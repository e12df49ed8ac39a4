"""The new-run form (a preset plus optional advanced options) and the reward preview's
sample answers. Forms only check input and shape it; the run is created by the service."""

from django import forms

from corpora.models import Question, QuestionSet
from corpora.selectors import project_suggested_pack
from engine.packs import PACKS
from engine.rewards.reward import (
    COMPONENTS,
    DEFAULT_WEIGHTS,
    MAX_ANSWER_CHARS,
    MAX_TRUTH_CHARS,
    RewardConfig,
)
from runs.presets import DEFAULT_PRESET, PRESETS
from runs.services import allowed_models, judge_choices, judge_config_for

LOSS_CHOICES = [
    ("", "Preset's choice"),
    ("dppo_tv", "DPPO, Binary-TV trust region (default)"),
    ("dppo_kl", "DPPO, Binary-KL trust region"),
    ("tis", "Truncated importance sampling (TIS)"),
    ("mis", "Masked importance sampling (MIS)"),
]
MAX_PREVIEW_ANSWERS = 5
# The reward preview's menu of questions to pick from (others can be typed in).
PREVIEW_QUESTIONS_OFFERED = 50


# What an optional component pays for, beside its field: both are off (0) unless weighted.
OPTIONAL_HELP = {
    "calibration": "Pays a stated confidence that matches being right; 0 leaves it off.",
    "novelty": (
        "Marks down a wrong answer made only of the question's own words; 0 leaves it off."
    ),
}


def _weight_field(component: str) -> forms.FloatField:
    return forms.FloatField(
        label=component.replace("_", " ").capitalize(),
        help_text=OPTIONAL_HELP.get(component, ""),
        required=False,
        min_value=0,
        max_value=10,
        widget=forms.NumberInput(attrs={"step": "0.05", "placeholder": DEFAULT_WEIGHTS[component]}),
    )


class RewardOptionsForm(forms.Form):
    """Reward weights and the judge (chosen, never typed): shared by the new run and its
    reward preview. A judge's URL is set on the project's judge page, not here."""

    judge = forms.ChoiceField(label="Answer judge", required=False)

    def __init__(self, *args, project, **kwargs):
        super().__init__(*args, **kwargs)
        self.project = project
        self.fields["judge"].choices = judge_choices(project)
        for component in COMPONENTS:
            self.fields[f"weight_{component}"] = _weight_field(component)

    def clean(self):
        data = super().clean()
        weights = self.reward_weights()
        if weights and not any(value > 0 for value in {**DEFAULT_WEIGHTS, **weights}.values()):
            raise forms.ValidationError("At least one reward weight must be above 0.")
        return data

    @property
    def weight_fields(self) -> list:
        """One field per reward component, in the reward's order (the page lists them all)."""
        return [self[f"weight_{component}"] for component in COMPONENTS]

    def reward_weights(self) -> dict[str, float]:
        """The weights the customer changed (the others keep the preset's)."""
        data = getattr(self, "cleaned_data", {})
        return {c: data[f"weight_{c}"] for c in COMPONENTS if data.get(f"weight_{c}") is not None}

    def reward_overrides(self) -> dict:
        """The `reward` part of the run's TrainConfig overrides."""
        overrides: dict = {}
        weights = self.reward_weights()
        if weights:
            overrides["weights"] = {**DEFAULT_WEIGHTS, **weights}
        judge = judge_config_for(choice=self.cleaned_data.get("judge", ""), project=self.project)
        if judge:
            overrides["judge"] = judge
        return overrides

    def reward_config(self, base: dict | None = None) -> RewardConfig:
        """The RewardConfig these options give on top of `base` (a RewardConfig dict)."""
        data = dict(base or RewardConfig().to_dict())
        overrides = self.reward_overrides()
        if "weights" in overrides:
            data["weights"] = overrides["weights"]
        if "judge" in overrides:
            data["judge"] = overrides["judge"]
        return RewardConfig.from_dict(data)


class RunForm(RewardOptionsForm):
    name = forms.CharField(label="Run name", max_length=120)
    question_set = forms.ModelChoiceField(
        label="Questions",
        queryset=QuestionSet.objects.none(),
        required=False,
        empty_label="Generate questions from my documents",
    )
    preset = forms.ChoiceField(
        label="Preset",
        choices=[(key, preset["label"]) for key, preset in PRESETS.items()],
        initial=DEFAULT_PRESET,
        widget=forms.RadioSelect,
    )
    # A choice among the operator's models (SLEUTH_ALLOWED_MODELS), never free text or a path.
    model = forms.ChoiceField(
        label="Model",
        required=False,
        help_text="The models this platform offers; the preset's own when left alone.",
    )
    # What is true of one kind of document only (engine.packs), opted into per run; the
    # documents' own kind is offered (pre-selected and said), never chosen behind the back.
    pack = forms.ChoiceField(
        label="Domain pack",
        required=False,
        choices=[("", "None: the engine's default path, for any documents")]
        + [(name, pack.label) for name, pack in PACKS.items()],
    )
    loss = forms.ChoiceField(label="Algorithm (policy loss)", choices=LOSS_CHOICES, required=False)
    steps = forms.IntegerField(label="RL steps", required=False, min_value=1, max_value=10_000)
    group_size = forms.IntegerField(
        label="Group size",
        required=False,
        min_value=2,
        max_value=64,
        help_text="Answers sampled per question; rewards are compared within the group.",
    )

    def __init__(self, *args, project, **kwargs):
        super().__init__(*args, project=project, **kwargs)
        # A generated set still in review (a draft) is not offered: runs.services refuses it.
        self.fields["question_set"].queryset = project.question_sets.filter(needs_review=False)
        self.fields["model"].choices = [("", "Preset's choice")] + [
            (name, "SmolLM2-135M (default, runs on CPU)" if name == "default" else name)
            for name in allowed_models()
        ]
        self.suggested_pack = project_suggested_pack(project=project)
        if self.suggested_pack:
            pack = PACKS[self.suggested_pack]
            self.fields["pack"].initial = self.suggested_pack
            self.fields["pack"].help_text = (
                f"Suggested: most of your documents look like {pack.label.lower()}. "
                f"{pack.description}"
            )
        else:
            self.fields["pack"].help_text = "Packs: " + " ".join(
                f"{p.label}: {p.description}" for p in PACKS.values()
            )
        # Advanced fields first in the form's order would bury the essentials.
        essentials = [
            "name",
            "question_set",
            "preset",
            "pack",
            "model",
            "loss",
            "steps",
            "group_size",
        ]
        self.order_fields(essentials)

    def options(self) -> dict:
        """TrainConfig overrides (nested as in TrainConfig.to_dict) for the options set."""
        data = self.cleaned_data
        options: dict = {}
        if data.get("model"):
            options["model"] = data["model"]
        if data.get("pack"):
            options["pack"] = data["pack"]
        if data.get("loss"):
            options["loss"] = {"kind": data["loss"]}
        for key in ("steps", "group_size"):
            if data.get(key) is not None:
                options[key] = data[key]
        reward = self.reward_overrides()
        if reward:
            options["reward"] = reward
        return options


class RewardPreviewForm(RewardOptionsForm):
    """A question with its ground truth (typed, or picked from a question set) and a few
    sample answers, scored with the reward the run would use."""

    sample_question = forms.ModelChoiceField(
        label="Pick a question",
        queryset=Question.objects.none(),
        required=False,
        empty_label="— or type one below —",
    )
    question_text = forms.CharField(label="Question", required=False, max_length=2000)
    ground_truth = forms.CharField(
        label="Ground truth answer", required=False, max_length=MAX_TRUTH_CHARS
    )
    sample_answers = forms.CharField(
        label="Sample answers, one per line",
        required=False,
        # Each answer is capped below; this bounds the whole field before it is split.
        max_length=MAX_PREVIEW_ANSWERS * (MAX_ANSWER_CHARS + 2),
        widget=forms.Textarea(attrs={"rows": 4}),
    )
    searched = forms.BooleanField(
        label="The agent searched before answering", required=False, initial=True
    )
    found_golden = forms.BooleanField(
        label="Its searches found the passage that answers it", required=False, initial=True
    )

    def __init__(self, *args, project, **kwargs):
        super().__init__(*args, project=project, **kwargs)
        field = self.fields["sample_question"]
        # Any of the project's questions is accepted, but the menu offers only the first few:
        # a set may hold 100,000 questions, and each would be an <option> on the page.
        field.queryset = Question.objects.filter(question_set__project=project).order_by(
            "question_set", "position"
        )
        field.widget.choices = [("", field.empty_label)] + [
            (question.pk, question.question[:120])
            for question in field.queryset[:PREVIEW_QUESTIONS_OFFERED]
        ]
        if len(field.widget.choices) > PREVIEW_QUESTIONS_OFFERED:
            total = field.queryset.count()
            if total > PREVIEW_QUESTIONS_OFFERED:
                field.help_text = (
                    f"The first {PREVIEW_QUESTIONS_OFFERED} of your {total} questions; "
                    "type any other below."
                )

    def clean(self):
        data = super().clean()
        picked = data.get("sample_question")
        if picked:
            data["question_text"] = picked.question
            data["ground_truth"] = picked.answer
        if not data.get("question_text") and "question_text" not in self.errors:
            self.add_error("question_text", "Pick a question or type one.")
        if not data.get("ground_truth") and "ground_truth" not in self.errors:
            self.add_error("ground_truth", "Give the correct answer to compare with.")
        answers = [line.strip() for line in data.get("sample_answers", "").splitlines()]
        answers = [a for a in answers if a]
        if "sample_answers" in self.errors:
            pass  # over the field's length: already said
        elif not answers:
            self.add_error("sample_answers", "Write at least one sample answer.")
        elif len(answers) > MAX_PREVIEW_ANSWERS:
            self.add_error(
                "sample_answers", f"Preview at most {MAX_PREVIEW_ANSWERS} answers at a time."
            )
        elif any(len(a) > MAX_ANSWER_CHARS for a in answers):
            self.add_error(
                "sample_answers", f"Keep each sample answer under {MAX_ANSWER_CHARS} characters."
            )
        data["answers"] = answers
        return data


class ProjectJudgeForm(forms.Form):
    """The project's own judge endpoint. The key field is never filled back in."""

    base_url = forms.URLField(
        assume_scheme="https",
        label="Endpoint",
        max_length=500,
        help_text="An OpenAI-compatible base URL on the public internet (https).",
        widget=forms.URLInput(attrs={"placeholder": "https://api.example.com/v1"}),
    )
    model = forms.CharField(label="Model", max_length=200)
    api_key = forms.CharField(
        label="API key",
        required=False,
        max_length=500,
        strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
        help_text="Stored encrypted and sent to this endpoint only. Leave empty to keep the "
        "saved key; a new endpoint needs its key again.",
    )
