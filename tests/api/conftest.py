import pytest

from .seed import seed, users


@pytest.fixture
def data(db, tmp_path):
    return seed(tmp_path)


@pytest.fixture
def tokens(db):
    return users()


@pytest.fixture
def api(tokens):
    """``api(who)``: an APIClient with the token of "staff" (the default: organisers read
    everything), "plain" (an account that is not staff) or none."""
    from rest_framework.test import APIClient

    def make(who: str | None = "staff") -> APIClient:
        client = APIClient()
        if who:
            client.credentials(HTTP_AUTHORIZATION=f"Token {tokens[who]}")
        return client

    return make
