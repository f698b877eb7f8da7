"""Forms of the evaluation pages: real choices (topic sets, runs, judgments, qrels, models),
cleaned into the parameters an analysis stores (the same as its command's options).

Once a topic set is chosen (submitted, preset by a link such as the project page's, or
read from the runs chosen) the menus of judgments list only that topic set's judgment
sets, and one of another topic set is refused naming both
(:class:`judging.forms.JudgmentSetField`); before, they list every judgment set."""
from __future__ import annotations

from django import forms

from common import fileio
from judging.forms import JudgmentSetField, topic_set_named

from evaluation import measures
from evaluation.measures.runs import ORDERS


def _topic_sets():
    from topics.selectors import topic_set_list

    return [(n, n) for n in topic_set_list().values_list("name", flat=True)]


def _system_runs():
    from retrieval.models import Run
    from retrieval.selectors import run_list

    rows = (run_list().filter(kind=Run.KIND_SYSTEM, status="done").order_by("topic_set__name", "tag")
            .values_list("topic_set__name", "tag"))
    return [(f"{ts}/{tag}", f"{tag} ({ts})") for ts, tag in rows]


def _sources(topic_set=None):
    """The judgment sets (of ``topic_set`` when given): those read from a qrels file as
    ``qrels:NAME`` (the kind they hold is checked against the measure), the others as
    ``judgments:NAME``."""
    from judging.selectors import judgment_set_list, qrels_file_sets

    files = dict(qrels_file_sets().values_list("name", "format"))
    names = list(judgment_set_list(topic_set).values_list("name", flat=True))
    judged = [(f"judgments:{n}", f"judgment set {n}") for n in names if n not in files]
    imported = [(f"qrels:{n}", f"imported qrels {n} ({files[n]})") for n in sorted(names) if n in files]
    return [("", "—")] + judged + imported


def _source_name(value: str) -> str:
    return value.partition(":")[2]


def _judgment_sets(topic_set=None, blank: bool = False):
    from judging.selectors import judgment_set_list

    names = [(n, n) for n in judgment_set_list(topic_set).values_list("name", flat=True)]
    return ([("", "—")] if blank else []) + names


def _chosen_topic_set(form: forms.Form):
    """The topic set chosen on ``form``: submitted, else preset by a link (``?topic_set=``),
    else that of the runs submitted when they are of one; ``None`` before any is chosen."""
    if not form.is_bound:
        return topic_set_named(form.initial.get("topic_set"))
    name = form.data.get(form.add_prefix("topic_set"))
    if not name and "runs" in form.fields:
        runs = form.fields["runs"].widget.value_from_datadict(form.data, form.files, form.add_prefix("runs"))
        sets = {r.split("/", 1)[0] for r in runs or () if "/" in r}
        name = sets.pop() if len(sets) == 1 else None
    return topic_set_named(name)


def _models():
    from retrieval.selectors import retrieval_model_list

    return [("", "the only model with variant rankings")] + [
        (n, n) for n in retrieval_model_list().values_list("name", flat=True)]


def _source_params(value: str, suffix: str = "") -> dict:
    kind, _, name = value.partition(":")
    return {("judgments" if kind == "judgments" else "qrels") + suffix: name}


def _check_measures(text: str, one: bool = False) -> str:
    try:
        specs = measures.parse_measures(text)
    except fileio.InputError as exc:
        raise forms.ValidationError(str(exc)) from None
    if one and (len(specs) != 1 or len(specs[0].keys) != 1):
        raise forms.ValidationError("give exactly one measure, e.g. nDCG@10")
    return text.strip()


class _RunsForm(forms.Form):
    """A topic set, some of its stored system runs (none chosen: all of them), judgments."""

    topic_set = forms.ChoiceField()
    runs = forms.MultipleChoiceField(required=False, widget=forms.SelectMultiple(attrs={"size": 8}),
                                     help_text="stored system runs; none chosen: every run of the topic set")
    source = JudgmentSetField(label="judgments or qrels", name_of=_source_name)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["topic_set"].choices = _topic_sets()
        self.fields["runs"].choices = _system_runs()
        self.topic_set = _chosen_topic_set(self)
        self.fields["source"].narrow(self.topic_set, _sources(self.topic_set))

    def clean(self):
        data = super().clean()
        ts = data.get("topic_set")
        if ts is None:
            return data
        chosen = data.get("runs") or [v for v, _ in self.fields["runs"].choices if v.startswith(ts + "/")]
        wrong = [v for v in chosen if not v.startswith(ts + "/")]
        if wrong:
            self.add_error("runs", f"run {wrong[0].split('/', 1)[1]} is not a run of topic set {ts}")
        elif not chosen:
            self.add_error("runs", f"topic set {ts} has no finished system run: upload one (Upload a run) or launch "
                                 "retrieval over the topic titles")
        data["tags"] = [v.split("/", 1)[1] for v in chosen]
        if not data.get("source"):
            self.add_error("source", "choose a judgment set or imported qrels")
        return data

    def params(self) -> dict:
        d = self.cleaned_data
        return {"topic_set": d["topic_set"], "tags": d["tags"], **_source_params(d["source"])}


class EvaluateForm(_RunsForm):
    measures = forms.CharField(initial="AP nDCG@10 P@10 RR", help_text='e.g. "AP nDCG@20 P@10 RBP(p=0.8)" '
                               "or diversity measures with diversity qrels")
    estimator = forms.ChoiceField(
        required=False, initial="", label="estimate from a sample",
        choices=[("", "no: the judgments are complete"),
                 ("xinf", "xinf: xinfAP and infNDCG (sample_eval.pl)"),
                 ("statap", "statap: statAP (statAP_MQ_eval_v3.pl)"),
                 ("infap", "infap: infAP (one uniform sample)")],
        help_text="for a judgment set judged as a sample (a task in sample mode): AP, nDCG, nDCG@k "
                  "and P@k estimated with 95% intervals")
    complete = forms.BooleanField(required=False, help_text="average over every judged topic (trec_eval -c)")
    order = forms.ChoiceField(choices=[(o, o) for o in ORDERS], initial="trec_eval")

    def clean_measures(self):
        return self.cleaned_data["measures"].strip()

    def clean(self):
        data = super().clean()
        text = data.get("measures")
        if text is None:
            return data
        try:
            if data.get("estimator"):
                from evaluation.estimators import parse_estimated_measures

                parse_estimated_measures(text)
            else:
                _check_measures(text)
        except forms.ValidationError as exc:
            self.add_error("measures", exc)
        except fileio.InputError as exc:
            self.add_error("measures", str(exc))
        if data.get("estimator") and data.get("source"):
            from judging.selectors import judgment_set_get, judgment_set_sampled

            name = _source_name(data["source"])
            try:
                sampled = judgment_set_sampled(judgment_set_get(name))
            except ValueError:
                sampled = True  # the menu's own check names an unknown set
            if not sampled:
                self.add_error("source", f"judgment set {name} was not judged as a sample: choose one "
                                         "judged in sample mode, or no estimator")
        return data

    def params(self) -> dict:
        d = self.cleaned_data
        params = {**super().params(), "measures": d["measures"], "complete": d["complete"], "order": d["order"]}
        if d.get("estimator"):
            params["estimator"] = d["estimator"]
        return params


class RankCorrelationForm(_RunsForm):
    source_b = JudgmentSetField(label="second judgments or qrels", name_of=_source_name)
    measure = forms.CharField(initial="AP")
    significance = forms.BooleanField(required=False, help_text="also a randomised two-sided Tukey HSD under each "
                                      "evaluation and the counts TR, PS, TR−PS, TR∩PS, PS−TR "
                                      "(Sakai, Dou & Clarke 2013)")
    trials = forms.IntegerField(required=False, initial=10_000, min_value=100, max_value=100_000,
                                help_text="randomisation trials B")
    seed = forms.IntegerField(required=False, initial=0, min_value=0)
    alpha = forms.FloatField(required=False, initial=0.05, min_value=0.0001, max_value=0.5,
                             help_text="significance level")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["source"].label = "first (reference) judgments or qrels"
        self.fields["source_b"].narrow(self.topic_set, _sources(self.topic_set))

    def clean_measure(self):
        return _check_measures(self.cleaned_data["measure"], one=True)

    def params(self) -> dict:
        d = self.cleaned_data
        params = {**super().params(), **_source_params(d["source_b"], "_b"), "measure": d["measure"]}
        if d["significance"]:
            params.update(significance=True, trials=d["trials"], seed=d["seed"], alpha=d["alpha"])
        return params

    def clean(self):
        data = super().clean()
        if data.get("significance"):
            for name, default in (("trials", 10_000), ("seed", 0), ("alpha", 0.05)):
                if data.get(name) is None and name not in self.errors:
                    data[name] = default
        return data


class VarianceForm(_RunsForm):
    measure = forms.CharField(initial="nDCG@10", help_text="an ad hoc measure computed per intent")
    budget = forms.IntegerField(required=False, min_value=1,
                                help_text="judged (query, intent) pairs N·M; default: queries × most intents")
    max_intents = forms.IntegerField(required=False, min_value=1)
    intent_taus = forms.BooleanField(required=False, initial=True, label="τ between intents",
                                     help_text="per topic, min / mean / max Kendall's τ_b between the system "
                                     "orderings of every pair of its intents")
    subsample = forms.BooleanField(required=False, help_text="τ_b of collections with fewer queries, fewer intents "
                                   "(removed) and merged intents against the full collection")
    fractions = forms.CharField(required=False, initial="0.2,0.4,0.6,0.8", help_text="fractions kept, comma-separated")
    repeats = forms.IntegerField(required=False, initial=20, min_value=1, max_value=200, help_text="draws per fraction")
    seed = forms.IntegerField(required=False, initial=0, min_value=0)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["source"].label = "diversity judgments or qrels"

    def clean_measure(self):
        return _check_measures(self.cleaned_data["measure"], one=True)

    def clean_fractions(self):
        text = self.cleaned_data.get("fractions") or "0.2,0.4,0.6,0.8"
        try:
            values = [float(f) for f in text.split(",") if f.strip()]
        except ValueError:
            raise forms.ValidationError(f"{text!r}: give fractions as numbers, e.g. 0.2,0.4,0.6,0.8") from None
        if not values or len(values) > 10 or any(not 0 < v <= 1 for v in values):
            raise forms.ValidationError("give one to ten fractions, each in (0, 1]")
        return values

    def params(self) -> dict:
        d = self.cleaned_data
        params = {**super().params(), "measure": d["measure"], "budget": d["budget"],
                  "max_intents": d["max_intents"], "intent_taus": d["intent_taus"]}
        if d["subsample"]:
            params.update(subsample=True, fractions=d["fractions"], repeats=d["repeats"] or 20,
                          seed=d["seed"] or 0)
        return params


class VariabilityForm(forms.Form):
    topic_set = forms.ChoiceField()
    source = JudgmentSetField(label="judgments or qrels", name_of=_source_name)
    measure = forms.CharField(initial="nDCG@10")
    model = forms.ChoiceField(required=False, label="model of the variant rankings")
    decompose = forms.BooleanField(required=False, initial=True,
                                   help_text="fit the variance components (needs variant rankings of two models)")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["topic_set"].choices = _topic_sets()
        topic_set = _chosen_topic_set(self)
        self.fields["source"].narrow(topic_set, _sources(topic_set))
        self.fields["model"].choices = _models()

    def clean_measure(self):
        return _check_measures(self.cleaned_data["measure"], one=True)

    def params(self) -> dict:
        d = self.cleaned_data
        return {"topic_set": d["topic_set"], **_source_params(d["source"]), "measure": d["measure"],
                "model": d["model"] or None, "decompose": d["decompose"]}


class AgreementForm(forms.Form):
    """Assessor agreement within one judgment set: no topic set to narrow the menu by."""

    judgments = forms.ChoiceField()
    intent = forms.CharField(required=False, help_text="only this intent id")
    relevant_from = forms.IntegerField(initial=1, help_text="the lowest grade that counts as relevant")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["judgments"].choices = _judgment_sets()

    def params(self) -> dict:
        d = self.cleaned_data
        return {"judgments": d["judgments"], "intent": d["intent"] or None, "relevant_from": d["relevant_from"]}


class IntentsForm(forms.Form):
    judgments = JudgmentSetField(label="intent judgments")
    user_judgments = JudgmentSetField(required=False, label="users' own judgments")
    topic_set = forms.ChoiceField(required=False, help_text="only the topics of this set")
    alpha = forms.FloatField(initial=0.5, min_value=0, max_value=1)
    beta = forms.FloatField(initial=0.5, min_value=0, max_value=1)
    similarity = forms.ChoiceField(choices=[("jaccard", "Jaccard"), ("kappa", "Cohen's κ")])

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["topic_set"].choices = [("", "every topic")] + _topic_sets()
        topic_set = _chosen_topic_set(self)
        self.fields["judgments"].narrow(topic_set, _judgment_sets(topic_set))
        self.fields["user_judgments"].narrow(topic_set, _judgment_sets(topic_set, blank=True))

    def params(self) -> dict:
        d = self.cleaned_data
        return {"judgments": d["judgments"], "user_judgments": d["user_judgments"] or None,
                "topic_set": d["topic_set"] or None, "alpha": d["alpha"], "beta": d["beta"],
                "similarity": d["similarity"]}


FORMS = {"evaluate": EvaluateForm, "agreement": AgreementForm, "intents": IntentsForm,
         "rank_correlation": RankCorrelationForm, "variance": VarianceForm, "variability": VariabilityForm}
