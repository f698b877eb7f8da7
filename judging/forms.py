"""Forms of the judging pages: a judgment (a grade row per intent), organisers' forms, and
the menu of judgment sets that later pages (the paper gallery, the evaluation forms) narrow
to one topic set's."""
from __future__ import annotations

from typing import Callable

from django import forms
from django.core import signing

from topics import selectors as topics_selectors

from . import selectors
from .stopping import parse_rule

REF_SALT = "judging.ref"
MAX_REF_AGE = 7 * 24 * 3600  # a page left open for a week can still be submitted


def ref_dumps(*, task_id: int, item_id: int | None = None,
              gold: tuple[str, str] | None = None, submit_key: str, shown: float,
              intents: list[str] | None = None) -> str:
    """The signed reference a judgment form carries: the task, the item (or gold
    document), the form's idempotency key, when the page was shown (server time) and the
    intents graded on it (so the submit needs no query to rebuild the form). Compressed,
    so an item and a gold document look alike."""
    value = {"task": task_id, "k": submit_key, "t": shown}
    if intents is not None:
        value["n"] = list(intents)
    if gold is not None:
        value["g"] = list(gold)
    else:
        value["i"] = item_id
    return signing.dumps(value, salt=REF_SALT, compress=True)


def ref_loads(ref: str) -> dict:
    return signing.loads(ref, salt=REF_SALT, max_age=MAX_REF_AGE)


class JudgmentForm(forms.Form):
    """One page: ``grade_0 … grade_{n-1}`` for the intents in order (a single row in topic
    and user modes), an optional rationale, or a reason the document cannot be judged."""

    ref = forms.CharField(widget=forms.HiddenInput)
    js_seconds = forms.FloatField(required=False, min_value=0, widget=forms.HiddenInput)
    rationale = forms.CharField(required=False, max_length=5000, widget=forms.Textarea(
        attrs={"rows": 2, "id": "rationale", "placeholder": "Why (optional)"}))
    cannot_judge = forms.CharField(required=False, max_length=200, widget=forms.TextInput(
        attrs={"id": "cannot-judge-reason", "autocomplete": "off",
               "placeholder": "e.g. the page did not load, not in a language I read"}))

    def __init__(self, *args, intents=(), grades=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.intents = list(intents)
        choices = [(str(g["value"]), f"{g['label']} [{g['key']}]") for g in grades]
        for n, _intent in enumerate(self.intents):
            self.fields[f"grade_{n}"] = forms.TypedChoiceField(
                choices=choices, coerce=int, required=False, widget=forms.RadioSelect)

    def clean_ref(self):
        try:
            return ref_loads(self.cleaned_data["ref"])
        except signing.BadSignature:
            raise forms.ValidationError("This page has expired; please judge the document "
                                        "again.") from None

    def clean(self):
        data = super().clean()
        if self.data.get("action") == "cannot":
            if not (data.get("cannot_judge") or "").strip():
                self.add_error("cannot_judge", "Say why you cannot judge this document.")
            return data
        data["cannot_judge"] = ""
        for n, _ in enumerate(self.intents):
            if data.get(f"grade_{n}") in (None, ""):
                self.add_error(f"grade_{n}", "Choose a grade.")
        return data

    def grades(self) -> dict[str, int]:
        if self.cleaned_data.get("cannot_judge"):
            return {}
        return {i: self.cleaned_data[f"grade_{n}"] for n, i in enumerate(self.intents)}


def _collection_choices() -> list[tuple[str, str]]:
    from retrieval.selectors import collection_list

    return [(c.name, c.name) for c in collection_list()]


class CollectionForm(forms.Form):
    """The collection a task's documents are read from: a select of the collections there
    are, with ``current`` (the one the task reads now) selected."""

    collection = forms.ChoiceField(error_messages={
        "invalid_choice": "There is no collection named %(value)r; upload it first."})

    def __init__(self, *args, current: str = "", **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["collection"].choices = _collection_choices()
        self.fields["collection"].initial = current or None


class PublishForm(forms.Form):
    title = forms.CharField(max_length=200, required=False,
                            help_text="What workers see (empty: a default title)")
    consent_text = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}))
    completion_code = forms.CharField(max_length=100)
    judgments = forms.IntegerField(min_value=1, label="Judgments for the code")
    gold_set = forms.CharField(max_length=100, required=False, label="Gold judgment set")
    gold_rate = forms.FloatField(min_value=0, max_value=0.99, initial=0.0,
                                 label="Share of pages that are gold")
    gold_min_accuracy = forms.FloatField(min_value=0, max_value=1, initial=0.7,
                                         label="Gold accuracy needed")
    prolific_study_id = forms.CharField(max_length=200, required=False)
    mturk_hit_ids = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))


class StopRuleForm(forms.Form):
    """The task's stopping rule (``judging.stopping.parse_rule``); empty: none."""

    rule = forms.CharField(max_length=40, required=False, help_text=(
        "recall:TARGET:CONFIDENCE (e.g. recall:0.9:0.95) or knee; empty: judge everything"))

    def clean_rule(self) -> str:
        value = self.cleaned_data["rule"].strip()
        if value:
            try:
                value = str(parse_rule(value))
            except ValueError as exc:
                raise forms.ValidationError(str(exc)) from None
        return value


class InviteForm(forms.Form):
    """A new invite link to a task: how many days it stays open."""

    days = forms.IntegerField(min_value=1, max_value=90, initial=7,
                              help_text="the link works once, until this many days from now")


def topic_set_named(name: str | None):
    """The topic set ``name`` names, to narrow a form's menus of judgment sets by; ``None``
    when none is chosen yet or the name is unknown (the form's topic-set field refuses
    that, naming the known ones)."""
    if not name:
        return None
    try:
        return topics_selectors.topic_set_get(name)
    except ValueError:
        return None


def judgment_set_refusal(name: str, topic_set) -> str:
    """Why judgment set ``name`` is not on the menu of ``topic_set``'s judgment sets: it
    judges another topic set (named), none, or does not exist."""
    try:
        jset = selectors.judgment_set_get(name)
    except ValueError:
        return f"no judgment set {name!r} of topic set {topic_set.name!r}: choose one of the list"
    if jset.topic_set_id is None:
        return (f"judgment set {name!r} belongs to no topic set, not to {topic_set.name!r} "
                "(import it with --topic-set to use it here): choose one of the list")
    return (f"judgment set {name!r} is of topic set {jset.topic_set.name!r}, not of "
            f"{topic_set.name!r}: choose one of the list")


class JudgmentSetField(forms.ChoiceField):
    """A menu of judgment sets: every one until :meth:`narrow` is given a topic set, then
    only that topic set's (as a project's page and a pool's menu list them), a value off
    the menu refused naming the judgment set, the topic set it judges and the one chosen.
    ``name_of`` reads the judgment set's name from a value (``"qrels:NAME"`` → ``NAME``)."""

    def __init__(self, *args, name_of: Callable[[str], str] = str, **kwargs):
        super().__init__(*args, **kwargs)
        self.name_of = name_of
        self.topic_set = None

    def narrow(self, topic_set, choices) -> None:
        """Offer ``choices``: those of ``topic_set``, or of every topic set when ``None``."""
        self.topic_set = topic_set
        self.choices = choices

    def validate(self, value):
        try:
            super().validate(value)
        except forms.ValidationError as exc:
            if self.topic_set is None or exc.code != "invalid_choice":
                raise
            raise forms.ValidationError(judgment_set_refusal(self.name_of(value), self.topic_set),
                                        code="invalid_choice") from None
