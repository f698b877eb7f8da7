"""Dense ids in docid string order, by lookup table or by binary search."""
import numpy as np
import pytest

from pooling import remap as remap_module
from pooling.selectors import docid_remap
from retrieval.services import docids_ensure

pytestmark = pytest.mark.django_db


@pytest.fixture(params=["table", "search"])
def remap_kind(request, monkeypatch):
    if request.param == "search":
        monkeypatch.setattr(remap_module, "LOOKUP_MAX_SPAN", 0)
    return request.param


def test_dense_ids_follow_string_order(remap_kind):
    names = [f"doc-{i}" for i in range(40)]  # "doc-10" < "doc-2" as strings
    ids = docids_ensure(names)
    a = np.array([ids["doc-2"], ids["doc-10"], ids["doc-39"]], dtype=np.int32)
    b = np.array([ids["doc-10"], ids["doc-1"]], dtype=np.int32)
    remap = docid_remap([a, b, np.zeros(0, np.int32)])
    assert (remap.table is not None) == (remap_kind == "table")
    ordered = sorted(["doc-2", "doc-10", "doc-39", "doc-1"])
    assert [remap.string_of_dense(k) for k in range(4)] == ordered
    assert remap.to_dense(a).tolist() == [ordered.index(n) for n in ("doc-2", "doc-10", "doc-39")]
    assert remap.to_vocab(remap.to_dense(b)).tolist() == b.tolist()
    assert remap.to_dense(np.zeros(0, np.int32)).size == 0
    for outside in (ids["doc-3"], ids["doc-39"] + 5, ids["doc-1"] - 1):
        with pytest.raises(ValueError, match="outside the remapped vocabulary"):
            remap.to_dense(np.array([ids["doc-2"], outside]))


def test_nothing_to_remap():
    remap = docid_remap([])
    assert remap.vocab.size == 0 and remap.strings() == {}


@pytest.mark.parametrize("dense", [True, False])
def test_docid_order_is_code_point_order(dense):
    from retrieval.selectors import docid_order

    names = ["b", "Z", "é", "a", "ß", "A-1", "a-10", "a-2", "\u00e9t\u00e9", "ž"]
    ids = docids_ensure(names + [f"filler-{i}" for i in range(200)])
    # all ten fill their id span (one range scan); three and a far filler do not (by id)
    chosen = names if dense else names[:3] + ["filler-199"]
    got = docid_order(np.array([ids[n] for n in chosen]))
    by_id = {v: k for k, v in ids.items()}
    assert [by_id[int(i)] for i in got] == sorted(chosen)


def test_an_order_read_from_the_database_is_checked():
    from django.db import connection

    from retrieval.selectors import _order_check

    if connection.vendor != "postgresql":
        pytest.skip("orders are read as one array on PostgreSQL only")
    ids = docids_ensure(["m-1", "m-2", "m-3"])
    _order_check(np.array([ids["m-1"], ids["m-2"], ids["m-3"]]))
    with pytest.raises(RuntimeError, match="out of code point order"):
        _order_check(np.array([ids["m-1"], ids["m-3"], ids["m-2"]]))


def test_pool_arrays_are_stored_uncompressed_on_postgresql():
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("storage modes are PostgreSQL's")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT attname, attstorage FROM pg_attribute WHERE attrelid = "
            "'pooling_pooltopic'::regclass AND attname IN "
            "('docids', 'weights', 'min_rank', 'users', 'systems')")
        assert dict(cursor.fetchall()) == dict.fromkeys(
            ["docids", "weights", "min_rank", "users", "systems"], "e")


@pytest.mark.parametrize("lookup_max_span", [remap_module.LOOKUP_MAX_SPAN, 0])
def test_stored_int32_ids_and_int64_ids_remap_alike(monkeypatch, lookup_max_span):
    """Ids as stored (little-endian int32) are remapped without an 8-byte copy, to the
    same dense ids as int64 ids, also when other arrays reach beyond int32."""
    from pooling.remap import DocidRemap

    monkeypatch.setattr(remap_module, "LOOKUP_MAX_SPAN", lookup_max_span)
    names = {5: "e", 7: "a", 9: "c", 12: "b", 40: "d"}

    def order(ids):  # distinct ids -> in the order of their strings
        return np.array(sorted(ids.tolist(), key=names.__getitem__), dtype=np.int64)

    stored = np.frombuffer(np.array([9, 5, 40], dtype="<i4").tobytes(), dtype="<i4")
    other = np.array([12, 7], dtype=np.int64)
    remap = DocidRemap.from_arrays([stored, other], order=order)
    assert remap.vocab_of_dense.tolist() == [7, 12, 9, 40, 5]  # a b c d e
    for ids in (stored, stored.astype(np.int64), stored.astype(np.uint16)):
        assert remap.to_dense(ids).tolist() == [2, 4, 3]
        assert remap.to_dense(ids).dtype == np.int64
    with pytest.raises(ValueError, match="outside the remapped vocabulary"):
        remap.to_dense(np.array([6], dtype="<i4"))
    with pytest.raises(TypeError, match="must be integers"):
        remap.to_dense(np.array([5.0]))

    # with an int64 id far below int32 the int32 ids still map (by binary search)
    far = DocidRemap.from_arrays([stored, np.array([-(2**40)], dtype=np.int64)],
                                 order=lambda ids: ids)
    assert far.to_dense(stored).tolist() == [2, 1, 3]
    with pytest.raises(ValueError, match="outside the remapped vocabulary"):
        far.to_dense(np.array([6], dtype="<i4"))
