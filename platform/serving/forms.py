from django import forms

from .services import QUESTION_MAX_CHARS


class ApiTokenForm(forms.Form):
    name = forms.CharField(
        label="Token name",
        max_length=80,
        help_text="What the token is for, e.g. the program or machine that uses it.",
    )


class PlaygroundForm(forms.Form):
    question = forms.CharField(
        label="Question",
        max_length=QUESTION_MAX_CHARS,
        widget=forms.Textarea(attrs={"rows": 3, "maxlength": QUESTION_MAX_CHARS}),
    )
    compare = forms.ChoiceField(label="Side by side with", required=False, choices=())

    def __init__(self, *args, others=(), base_label: str | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["compare"].choices = [
            ("", "nothing"),
            ("echo", "echo: BM25 with the question as the query, no model"),
            # serving.playground.BASE: the run's own starting model, never a typed name.
            *(
                [("base", f"the base model ({base_label}), untrained, with this agent's settings")]
                if base_label
                else []
            ),
            *((agent.name, agent.name) for agent in others),
        ]


class PlaygroundFeedbackForm(forms.Form):
    column = forms.IntegerField(min_value=0, max_value=1)
    helpful = forms.ChoiceField(choices=[("up", "up"), ("down", "down")])
    correction = forms.CharField(required=False, max_length=1000)
