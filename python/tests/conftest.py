import os

import pytest

import fem


@pytest.fixture(autouse=True)
def fresh_store():
    """Every test starts from an empty store and zero counters."""
    fem.store.clear()
    fem.store.reset_stats()
    fem.store.byte_budget = 2**64 - 1
    yield


@pytest.fixture
def source_dir():
    return os.environ.get("FEM_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
