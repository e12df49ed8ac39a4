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


class QueuedPasswordResetForm(forms.Form):
    """Django's reset form, but the mail goes through a Celery task for every address, so the
    request does the same work whether or not an account has it (no timing oracle)."""

    email = forms.EmailField(
        label="Email", max_length=254, widget=forms.EmailInput(attrs={"autocomplete": "email"})
    )

    def save(self, **_):
        """Queue the mail; Django's view passes the request's host and templates, which the
        task does not take (accounts.tasks: the link's host is `SITE_URL`)."""
        from .services import password_reset_request

        password_reset_request(email=self.cleaned_data["email"])


class AccountDeleteForm(forms.Form):
    """Deleting an account asks for its password, so a session left open cannot do it."""

    password = forms.CharField(
        label="Your password",
        widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}),
    )

    def __init__(self, *args, user, **kwargs):
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)
        self.user = user

    def clean_password(self):
        password = self.cleaned_data["password"]
        if not self.user.check_password(password):
            raise forms.ValidationError("That is not your password.")
        return password
