from django import forms


class ProjectForm(forms.Form):
    name = forms.CharField(
        max_length=120, widget=forms.TextInput(attrs={"placeholder": "e.g. 10-K filings"})
    )


class EntityForm(forms.Form):
    entity = forms.CharField(max_length=200, required=False)
