"""Fixtures shared by the evaluation tests."""
from tests.judging.page_fixtures import pages_index  # noqa: F401  (an indexed page collection)
