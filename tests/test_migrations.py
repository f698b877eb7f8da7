import pytest
from django.core.management import call_command


@pytest.mark.django_db
def test_models_and_migrations_do_not_drift():
    call_command("makemigrations", "--check", "--dry-run", verbosity=0)


@pytest.mark.django_db
def test_ready_made_retrieval_models_exist():
    from retrieval.models import RetrievalModel

    names = set(RetrievalModel.objects.values_list("name", flat=True))
    assert {"bm25", "bm25-okapi", "qld", "sdm"} <= names
    bm25 = RetrievalModel.objects.get(name="bm25")
    assert (bm25.k1, bm25.b) == (0.9, 0.4)
    okapi = RetrievalModel.objects.get(name="bm25-okapi")
    assert (okapi.k1, okapi.b) == (1.2, 0.75)
