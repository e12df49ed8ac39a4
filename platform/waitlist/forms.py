from django import forms


class WaitlistForm(forms.Form):
    email = forms.EmailField(widget=forms.EmailInput(attrs={"placeholder": "you@company.com"}))
    company = forms.CharField(max_length=200, required=False)
    use_case = forms.CharField(
        label="What do you want to search?",
        required=False,
        max_length=2000,
        widget=forms.Textarea(
            attrs={"rows": 3, "placeholder": "e.g. our 10-K filings and contracts"}
        ),
    )

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)
