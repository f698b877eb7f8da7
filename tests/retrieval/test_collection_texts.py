"""collection_texts: many documents' text in one pass over the collection's file."""
from __future__ import annotations

import pytest

from retrieval.models import Collection
from retrieval.selectors import collection_texts

pytestmark = pytest.mark.django_db


def test_collection_texts_reads_the_wanted_documents_from_the_file(tmp_path):
    f = tmp_path / "docs.all"
    f.write_text(".I 1\n.T\nApple pie\n.W\nbaking at home\n.I 2\n.T\nCar engines\n"
                 ".I 3\n.T\nWeather\n")
    c = Collection.objects.create(name="c", format="smart", source_path=str(f))
    got = collection_texts(c, ["3", "1", "9"])
    assert set(got) == {"1", "3"}  # 9 is not in the file
    assert "Apple pie" in got["1"] and "baking at home" in got["1"]
    assert "Weather" in got["3"]
