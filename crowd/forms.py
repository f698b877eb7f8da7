"""Forms for crowd workers and organisers."""
from django import forms


class ConsentForm(forms.Form):
    agree = forms.BooleanField(required=True, label="I have read the above and agree to take part")


class AnswerForm(forms.Form):
    """The worker's query (kept verbatim: no stripping) and the optional question.

    Length and copy rules are applied by the service (``crowd.quality``), so the form only
    bounds the raw size it will accept at all.
    """

    query = forms.CharField(
        required=False, strip=False, max_length=5000,
        widget=forms.TextInput(attrs={"autocomplete": "off", "autofocus": True, "id": "query"}),
    )

    def __init__(self, *args, question: str = "", choices=(), **kwargs):
        super().__init__(*args, **kwargs)
        if question:
            if choices:
                self.fields["estimate"] = forms.ChoiceField(
                    label=question, choices=[(c, c) for c in choices],
                    widget=forms.RadioSelect,
                )
            else:
                self.fields["estimate"] = forms.CharField(label=question, max_length=50)

