"""The docid vocabulary: strings to integer ids and back, dense spans and sparse picks."""
import numpy as np
import pytest
from django.db import connection

from retrieval import selectors
from retrieval.selectors import docid_ids, docid_strings
from retrieval.services import docids_ensure

pytestmark = pytest.mark.django_db


@pytest.fixture
def vocab():
    names = [f"D{i:05d}" for i in range(3000)]
    ids = docids_ensure(names)
    assert len(set(ids.values())) == 3000
    return ids


def test_dense_span_is_read_in_one_range_scan(vocab, django_assert_num_queries):
    # Every other id of the span: dense enough for a range scan, and the scan's
    # other rows must be left out.
    wanted = sorted(vocab.values())[::2]
    with django_assert_num_queries(1):
        got = docid_strings(np.asarray(wanted + wanted[:10], dtype=np.int32))
    assert got == {i: s for s, i in vocab.items() if i in set(wanted)}


def test_sparse_ids_are_read_in_batches(vocab, monkeypatch, django_assert_num_queries):
    monkeypatch.setattr(selectors, "DOCID_IN_BATCH", 7)
    ids = sorted(vocab.values())
    wanted = [ids[0], ids[500], ids[1000], ids[-1]] + ids[1500:1510]  # 14 of a 3000 span
    # PostgreSQL binds the ids as one array; elsewhere IN lists of DOCID_IN_BATCH ids.
    with django_assert_num_queries(1 if connection.vendor == "postgresql" else 2):
        got = docid_strings(wanted)
    assert got == {i: s for s, i in vocab.items() if i in set(wanted)}


@pytest.mark.parametrize("dense", [True, False])
def test_unknown_ids_are_an_error_either_way(vocab, dense):
    ids = sorted(vocab.values())
    unknown = ids[-1] + 10 if dense else ids[-1] + 100_000
    wanted = ids[-20:] + [unknown]
    with pytest.raises(ValueError, match="1 docid ids are not in the docid vocabulary"):
        docid_strings(wanted)


def test_round_trip_and_nothing_for_nothing(vocab):
    assert docid_strings([]) == {}
    assert docid_ids(["D00002", "nope", "D00002"]) == {"D00002": vocab["D00002"]}
    assert docids_ensure(["D00002", "new-doc"])["D00002"] == vocab["D00002"]


TRICKY = ["b", "B", "a-b", "a_b", "a.b", "ä", "é1", "e2", "Z", "z", "10", "9", "a", "日本", "𝔘", "ß"]


@pytest.fixture
def linguistic_collation():
    """On PostgreSQL, give the docid column a linguistic collation (as a server created
    with en_US would), so that only an explicit code point order passes. Rolled back."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT collname FROM pg_collation WHERE collname = 'und-x-icu'")
        if cursor.fetchone() is None:
            return
        cursor.execute('ALTER TABLE retrieval_docid ALTER COLUMN docid '
                       'TYPE varchar(255) COLLATE "und-x-icu"')


@pytest.mark.parametrize("dense", [True, False])
def test_docid_order_is_code_point_order_like_python(dense, monkeypatch, linguistic_collation):
    # A linguistic collation puts "B" beside "b" and "ä" beside "a"; ties in pools are
    # broken as Python sorts str.
    ids = docids_ensure(TRICKY)
    if not dense:
        monkeypatch.setattr(selectors, "DOCID_RANGE_DENSITY", 2.0)
    got = selectors.docid_order(list(ids.values()) + [ids["z"]])
    assert [docid_strings(got)[int(i)] for i in got] == sorted(TRICKY)


def test_docid_order_names_unknown_ids(vocab):
    ids = sorted(vocab.values())
    with pytest.raises(ValueError, match="1 docid ids are not in the docid vocabulary"):
        selectors.docid_order(ids[:50] + [ids[49] + 10_000])
    assert selectors.docid_order([]).size == 0
