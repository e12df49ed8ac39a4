from django import forms

from .models import CHAT, READ, SCOPE_LABELS, SCOPES
from .services import QUESTION_MAX_CHARS, TOKEN_LIFETIMES


class ApiTokenForm(forms.Form):
    """A new token: its name, what it may do, how long it lives, and the account's password
    (a session left open, or stolen, mints nothing without it)."""

    name = forms.CharField(
        label="Token name",
        max_length=80,
        help_text="What the token is for, e.g. the program or machine that uses it.",
    )
    scopes = forms.MultipleChoiceField(
        label="It may",
        choices=[(scope, SCOPE_LABELS[scope]) for scope in SCOPES],
        initial=[READ, CHAT],
        widget=forms.CheckboxSelectMultiple,
        error_messages={"required": "Choose at least one thing the token may do."},
    )
    expires_in_days = forms.TypedChoiceField(
        label="Expires",
        choices=[
            (str(d or ""), f"in {d} days" if d else "never (until revoked)")
            for d in TOKEN_LIFETIMES
        ],
        coerce=lambda value: int(value) if value else None,
        empty_value=None,
        initial="90",
        required=False,
    )
    password = forms.CharField(
        label="Your password",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}),
    )

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.user = user

    def clean_password(self):
        password = self.cleaned_data["password"]
        if not self.user.check_password(password):
            raise forms.ValidationError("That is not your password.")
        return password


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
