from django import forms


class ProjectForm(forms.Form):
    name = forms.CharField(
        max_length=120, widget=forms.TextInput(attrs={"placeholder": "e.g. 10-K filings"})
    )


class EntityForm(forms.Form):
    entity = forms.CharField(max_length=200, required=False)


class SearchForm(forms.Form):
    """The search page's query (GET, so a search's address can be shared)."""

    q = forms.CharField(
        label="Search",
        max_length=300,  # corpora.search.QUERY_MAX_CHARS
        required=False,
        widget=forms.TextInput(
            attrs={"placeholder": "[3M 2018] capital expenditure", "autofocus": True}
        ),
    )
