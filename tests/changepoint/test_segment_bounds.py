"""The segment arguments of the models' hindsight methods (``outlying_segments``'s
``bounds``, ``hindsight_segments``'s ``lengths``): bad ones refused with a ValueError naming
the argument; edge cases (segments of one value, the first and last segments) give the
numpy and compiled paths' same values, and the values of the segments taken one by one."""

from __future__ import annotations

import numpy as np
import pytest

import possibly as ps
from possibly.changepoint import NormalMean, PolynomialTrend
from possibly.changepoint.models.trend import automatic_prior

HAS_NUMBA = ps.changepoint.numba_available()
PATHS = [False, pytest.param(True, marks=pytest.mark.skipif(not HAS_NUMBA,
                                                            reason="numba not installed"))]


def spiky(n: int = 12, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    y = 0.1 * np.arange(n) + rng.normal(size=n)
    y[n // 3] += 12.0
    return y


def models(y):
    return [NormalMean(1.0), PolynomialTrend(0, prior=automatic_prior(y)),
            PolynomialTrend(1, prior=automatic_prior(y))]


BAD_BOUNDS = [[[0, 13]], [[-1, 4]], [[3, 3]], [[5, 4]], [[0, 6], [5, 9]], [[6, 9], [0, 3]],
              [[0.5, 3]], [0, 4, 8], [[0, 4, 8]], [["a", "b"]]]


@pytest.mark.parametrize("bounds", BAD_BOUNDS, ids=[str(b) for b in BAD_BOUNDS])
@pytest.mark.parametrize("which", [0, 1, 2])
def test_bad_bounds_are_refused_naming_bounds_and_the_range(bounds, which):
    y = spiky()
    model = models(y)[which]
    with pytest.raises(ValueError, match=r"bounds must be .*0 <= start < stop <= 12"):
        model.outlying_segments(y, np.ones(12), bounds)


@pytest.mark.parametrize("compiled", PATHS)
@pytest.mark.parametrize("lengths", [[0, 12], [4, 0, 8], [12, 0], [5, 5], [13], [-1, 13],
                                     [[6, 6]], [6.5, 5.5]])
def test_bad_lengths_are_refused_naming_lengths(lengths, compiled):
    y = spiky()
    model = models(y)[1]
    with pytest.raises(ValueError, match="lengths must be positive integers"):
        model.hindsight_segments(y, np.ones(12), np.array(lengths), compiled=compiled)


LAYOUTS = [[1] * 12, [1, 11], [11, 1], [1, 10, 1], [2, 1, 3, 1, 5], [12]]


@pytest.mark.parametrize("degree", [0, 1, 2])
@pytest.mark.parametrize("layout", LAYOUTS, ids=[str(x) for x in LAYOUTS])
def test_hindsight_segments_of_edge_layouts_agree_with_one_segment_at_a_time(layout, degree):
    y = spiky(seed=degree)
    y[7] = np.nan
    disc = np.where(np.isnan(y), np.nan, np.linspace(0.05, 1.0, 12))
    model = PolynomialTrend(degree, prior=automatic_prior(y))
    z = (y - model.prior.loc) / model.prior.scale
    lengths = np.array(layout)
    paths = [False] + ([True] if HAS_NUMBA else [])
    for compiled in paths:
        got = model.hindsight_segments(z, disc, lengths, compiled=compiled)
        assert got.shape == (12,)
        first = 0
        for n in layout:
            alone = model.hindsight_segments(z[first:first + n], disc[first:first + n],
                                             np.array([n]), compiled=False)
            np.testing.assert_allclose(got[first:first + n], alone, rtol=1e-9, atol=1e-9)
            first += n


@pytest.mark.parametrize("which", [0, 1, 2])
@pytest.mark.parametrize("bounds", [[[0, 1]], [[11, 12]], [[0, 1], [11, 12]], [[0, 12]],
                                    [[0, 5], [5, 12]], [[2, 3], [3, 4], [9, 12]], []])
def test_outlying_segments_at_the_edges_equal_outlying_per_segment(bounds, which):
    y = spiky()
    disc = np.linspace(0.05, 1.0, 12)
    model = models(y)[which]
    expected = np.zeros(12, dtype=bool)
    for a, b in bounds:
        expected[a:b] = model.outlying(y[a:b], disc[a:b])
    np.testing.assert_array_equal(model.outlying_segments(y, disc, np.array(bounds)), expected)
