import os

import numpy as np
import pytest


def pytest_configure(config):
    # Tests read the data from ../shared/data (set by the Makefile and .ci/run); without it
    # the data tests would fail loudly rather than being skipped.
    os.environ.setdefault("MPLBACKEND", "Agg")


@pytest.fixture
def rng():
    return np.random.default_rng(12345)
