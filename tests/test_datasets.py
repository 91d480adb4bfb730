"""Data sets: the well-log loader and the piecewise-constant generator."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np
import pytest

from possibly import datasets


def test_well_log_matches_the_shared_file():
    y = datasets.well_log()
    path = Path(os.environ["POSSIBLY_DATA_DIR"]) / "well_log.txt"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == datasets.WELL_LOG_SHA256
    assert y.shape == (4050,) and y.dtype == np.float64
    assert y[0] == float(path.read_text().split()[0])


def test_piecewise_constant_is_seeded_and_consistent():
    a = datasets.piecewise_constant(600, n_changes=4, seed=5)
    b = datasets.piecewise_constant(600, n_changes=4, seed=5)
    c = datasets.piecewise_constant(600, n_changes=4, seed=6)
    for u, v in zip(a, b, strict=True):
        np.testing.assert_array_equal(u, v)
    assert not np.array_equal(a[0], c[0])
    y, cps, out = a
    assert y.shape == (600,) and cps.dtype == np.int64 and out.dtype == bool
    bounds = np.concatenate([[0], cps, [600]])
    assert np.all(np.diff(bounds) >= 20)
    assert not out[0] and not out[cps].any()


def test_piecewise_constant_structure():
    sigma = 2.0
    y, cps, out = datasets.piecewise_constant(20000, n_changes=10, sigma=sigma,
                                              jump=(4.0, 8.0), outlier_rate=0.05,
                                              outlier_size=(6.0, 12.0), seed=1)
    bounds = np.concatenate([[0], cps, [y.size]])
    levels = []
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        seg, seg_out = y[a:b], out[a:b]
        level = np.median(seg[~seg_out])
        levels.append(level)
        resid = seg[~seg_out] - level
        assert np.std(resid) == pytest.approx(sigma, rel=0.25)  # noise sd, short segments too
        # outliers are 6-12 sd away from the level (noise widens the range a little)
        dev = np.abs(seg[seg_out] - level) / sigma
        assert np.all((dev > 6 - 4) & (dev < 12 + 4))
    jumps = np.abs(np.diff(levels)) / sigma
    assert np.all((jumps > 4 - 1) & (jumps < 8 + 1))
    assert out.mean() == pytest.approx(0.05, abs=0.01)
    no_changes = datasets.piecewise_constant(50, n_changes=0, outlier_rate=0.0, seed=0)
    assert no_changes[1].size == 0 and not no_changes[2].any()


@pytest.mark.parametrize(("kw", "match"), [
    (dict(n=0), "n must be an integer >= 1"),
    (dict(n=50, n_changes=5), r"n must be >= min_segment \* \(n_changes \+ 1\) = 120"),
    (dict(n_changes=-1), "n_changes must be an integer >= 0"),
    (dict(sigma=0.0), "sigma must be a finite number > 0"),
    (dict(outlier_rate=1.0), r"outlier_rate must be in \[0, 1\)"),
    (dict(jump=(5.0, 1.0)), "jump must satisfy 0 <= low <= high"),
    (dict(outlier_size=3.0), "outlier_size must be a pair"),
    (dict(min_segment=0), "min_segment must be an integer >= 1"),
])
def test_piecewise_constant_bad_arguments(kw, match):
    with pytest.raises(ValueError, match=match):
        datasets.piecewise_constant(**kw)
