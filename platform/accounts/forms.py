from django import forms
from django.contrib.auth.password_validation import validate_password


class SignupForm(forms.Form):
    """Sign-up through an invite: the email comes from the invite, not from the form."""

    name = forms.CharField(label="Your name", max_length=150, required=False)
    password1 = forms.CharField(
        label="Password", widget=forms.PasswordInput(attrs={"autocomplete": "new-password"})
    )
    password2 = forms.CharField(
        label="Password again", widget=forms.PasswordInput(attrs={"autocomplete": "new-password"})
    )

    def __init__(self, *args, email: str, **kwargs):
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)
        self.email = email

    def clean(self):
        cleaned = super().clean()
        password = cleaned.get("password1")
        if password and password != cleaned.get("password2"):
            self.add_error("password2", "The two passwords differ.")
        elif password:
            from django.contrib.auth import get_user_model

            try:
                validate_password(password, user=get_user_model()(email=self.email))
            except forms.ValidationError as error:
                self.add_error("password1", error)
        return cleaned
