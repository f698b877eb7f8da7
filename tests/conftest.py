"""Shared fixtures. Real data lives beside the checkout in ../shared/data."""
import os
from pathlib import Path

import pytest

os.environ.setdefault("DEBUG", "1")

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("SHARED_DATA", ROOT.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared IR data not found at {SHARED_DATA} (set SHARED_DATA)")
    return SHARED_DATA
