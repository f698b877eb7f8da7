"""agreement and intent_properties on stored judgment sets (read through judging's
selectors) give what they give on the same labels as files."""
from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from tests.evaluation.test_agreement import K2011
from tests.evaluation.test_intents import INTENT_LABELS, USER_LABELS


def _write(path, rows):
    path.write_text("".join("\t".join(map(str, r)) + "\n" for r in rows))
    return path


def _json(*args) -> dict:
    out = StringIO()
    call_command(*args, "--json", stdout=out)
    return json.loads(out.getvalue())


@pytest.mark.django_db
def test_agreement_on_a_stored_judgment_set(tmp_path):
    from judging.services import judgments_import

    rows = [("t", "1", f"u{u:02d}", coder, g) for coder, values in K2011.items()
            for u, g in enumerate(values) if g is not None]
    path = _write(tmp_path / "k.tsv", rows)
    judgments_import(str(path), format="tsv", name="k2011")
    stored = _json("agreement", "--judgments", "k2011")
    from_file = _json("agreement", "--labels", str(path))
    assert stored == from_file
    assert round(stored["overall"]["krippendorff_alpha"]["ordinal"], 3) == 0.815


@pytest.mark.django_db
def test_agreement_unknown_judgment_set():
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="no judgment set named 'nope'"):
        call_command("agreement", "--judgments", "nope")


@pytest.mark.django_db
def test_intent_properties_on_stored_judgment_sets(tmp_path):
    from judging.services import judgments_import

    a = _write(tmp_path / "intents.tsv", INTENT_LABELS)
    u = _write(tmp_path / "users.tsv", [(t, "0", d, w, g)
                                        for t, _i, d, w, g in USER_LABELS])
    judgments_import(str(a), format="tsv", name="intents")
    judgments_import(str(u), format="tsv", name="users")
    stored = _json("intent_properties", "--judgments", "intents", "--user-judgments", "users")
    from_file = _json("intent_properties", "--labels", str(a), "--user-labels", str(u))
    assert stored == from_file
    assert stored["per_topic"]["T"]["completeness"] == pytest.approx(2 / 3)


@pytest.mark.django_db
def test_intent_properties_topic_set(tmp_path):
    from django.core.management.base import CommandError

    from judging.services import judgments_import
    from topics.models import Topic, TopicSet

    a = _write(tmp_path / "intents.tsv", INTENT_LABELS + [("U", "1", "d1", "A", 1)])
    judgments_import(str(a), format="tsv", name="intents")
    with pytest.raises(CommandError, match="no topic set named 'ts'"):
        call_command("intent_properties", "--topic-set", "ts", "--judgments", "intents")
    ts = TopicSet.objects.create(name="ts")
    Topic.objects.create(topic_set=ts, topic_id="T")
    got = _json("intent_properties", "--topic-set", "ts", "--judgments", "intents")
    assert list(got["per_topic"]) == ["T"]
