"""evaluate on stored runs and stored judgment sets gives the numbers it gives on the files."""
import io
import json

import pytest
from django.core.management import CommandError, call_command

from judging.services import judgments_import
from retrieval.services import system_run_import
from topics.models import Topic, TopicSet

pytestmark = pytest.mark.django_db


def _evaluate(*args) -> dict:
    out = io.StringIO()
    call_command("evaluate", *args, "--json", stdout=out)
    return json.loads(out.getvalue())["runs"]


@pytest.fixture
def web2011(shared_data, tmp_path):
    ts = TopicSet.objects.create(name="web2011")
    Topic.objects.bulk_create([Topic(topic_set=ts, topic_id=str(t), title=f"topic {t}") for t in range(101, 151)])
    runs = shared_data / "eval-oracles" / "web2011" / "runs"
    qrels = shared_data / "trec-web-diversity" / "2011" / "qrels.adhoc.txt"
    # topics 111-113 are missing from the partial run
    for name in ("fair", "partial"):
        system_run_import(runs / f"{name}.run", topic_set_name="web2011")
    judgments_import(qrels, format="adhoc", name="nist-adhoc")
    return runs, qrels


def test_stored_runs_and_judgments_equal_the_files(web2011):
    runs, qrels = web2011
    measures = "AP nDCG@20 P@10 RR ERR@20 RBP(p=0.8)"
    from_files = _evaluate("--run", str(runs / "fair.run"), "--run", str(runs / "partial.run"),
                           "--qrels", str(qrels), "--measures", measures, "--complete")
    stored = _evaluate("--topic-set", "web2011", "--tag", "fair", "--tag", "partial",
                       "--judgments", "nist-adhoc", "--measures", measures, "--complete")
    assert stored == from_files
    mixed = _evaluate("--topic-set", "web2011", "--tag", "fair", "--qrels", str(qrels), "--measures", "AP")
    assert mixed["fair"]["mean"]["AP"] == from_files["fair"]["mean"]["AP"]


def test_stored_errors(web2011):
    with pytest.raises(CommandError, match="has no finished run with tag 'nope'"):
        _evaluate("--topic-set", "web2011", "--tag", "nope", "--judgments", "nist-adhoc", "--measures", "AP")
    with pytest.raises(CommandError, match="no judgment set named 'other'"):
        _evaluate("--topic-set", "web2011", "--tag", "fair", "--judgments", "other", "--measures", "AP")
    with pytest.raises(CommandError, match="stored runs need --topic-set"):
        _evaluate("--tag", "fair", "--judgments", "nist-adhoc", "--measures", "AP")


def test_adhoc_from_one_intent_of_a_diversity_judgment_set(web2011, shared_data):
    # NIST's qrels.adhoc.txt is intent 1 of qrels.diversity.txt: evaluating the stored
    # per-intent labels with --adhoc-intent 1 equals evaluating the adhoc file
    runs, qrels = web2011
    judgments_import(shared_data / "trec-web-diversity" / "2011" / "qrels.diversity.txt",
                     format="diversity", name="nist-diversity")
    measures = "AP nDCG@20 P@10"
    from_file = _evaluate("--run", str(runs / "fair.run"), "--qrels", str(qrels),
                          "--measures", measures, "--complete")
    stored = _evaluate("--run", str(runs / "fair.run"), "--judgments", "nist-diversity",
                       "--adhoc-intent", "1", "--measures", measures, "--complete")
    assert stored == from_file
    with pytest.raises(CommandError, match="give --adhoc-intent I"):  # the option it names exists
        _evaluate("--run", str(runs / "fair.run"), "--judgments", "nist-diversity",
                  "--measures", "AP")
    with pytest.raises(CommandError, match="--adhoc-intent: is only for --judgments"):
        _evaluate("--run", str(runs / "fair.run"), "--qrels", str(qrels), "--adhoc-intent", "1",
                  "--measures", "AP")
