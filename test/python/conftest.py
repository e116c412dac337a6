"""Shared pytest fixtures for the Python tests."""

from __future__ import annotations

import os

import numpy as np
import pytest


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> np.random.Generator:
    """A fresh random generator per test. The seed comes from os.urandom
    (or POOT_TEST_SEED to reproduce a failure) and is printed, so pytest
    shows it beside any failure."""
    seed = int(os.environ.get("POOT_TEST_SEED") or int.from_bytes(os.urandom(8), "little"))
    print(f"{request.node.nodeid}: POOT_TEST_SEED={seed}")
    return np.random.default_rng(seed)
