from django import forms


class ApiTokenForm(forms.Form):
    name = forms.CharField(
        label="Token name",
        max_length=80,
        help_text="What the token is for, e.g. the program or machine that uses it.",
    )
