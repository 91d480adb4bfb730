"""``update_sequence`` follows the library's time axis: time is the last batch axis.

The reference is the robust update of a normal mean with known variance written out by hand
(docs/math.md): with the posterior ``N(m, 1/p)`` and the observation ``y`` of unit variance,
``log c = -(y - m)² p / (2 (p + 1))``, ``γ = c`` (``d = 1``), then ``p' = p + γ`` and
``m' = (p m + γ y) / p'``; from the uninformative prior the first observation is taken whole.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import possibly as ps


def _by_hand(series):
    """``(log c, discount, mean, precision)`` after each observation of one series."""
    m, p = series[0], 1.0
    out = [(0.0, 1.0, m, p)]
    for y in series[1:]:
        log_c = -(y - m) ** 2 * p / (2.0 * (p + 1.0))
        g = math.exp(log_c)
        m, p = (p * m + g * y) / (p + g), p + g
        out.append((log_c, g, m, p))
    return np.array(out)


def test_batched_likelihoods_are_series_along_the_last_axis():
    y = np.array([[0.1, -0.3, 25.0, 0.2, 0.4],        # series 0: an outlier at t = 2
                  [5.0, 5.5, 4.8, -30.0, 5.1],        # series 1: an outlier at t = 3
                  [1.0, 1.0, 1.2, 0.8, 1.1]])
    res = ps.update_sequence(ps.Normal(0.0, 0.0), ps.likelihood.normal(y, sd=1.0))
    assert res.log_consistency.shape == res.discount.shape == (3, 5)
    assert res.trajectory.batch_shape == (3, 5) and res.posterior.batch_shape == (3,)
    for b in range(3):
        ref = _by_hand(y[b])
        np.testing.assert_allclose(res.log_consistency[b], ref[:, 0], rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(res.discount[b], ref[:, 1], rtol=1e-12, atol=1e-300)
        np.testing.assert_allclose(res.trajectory.mean[b], ref[:, 2], rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(res.trajectory.precision[b], ref[:, 3], rtol=1e-12)
    assert res.discount[0, 2] < 1e-50 and res.discount[1, 3] < 1e-50
    np.testing.assert_array_equal(res.consistency, np.exp(res.log_consistency))


def test_result_holds_log_consistency_not_consistency():
    """``log c`` is stored (an outlier's ``c`` underflows to 0); ``consistency`` derives."""
    y = np.array([0.0, 0.1, 1e3])
    res = ps.update_sequence(ps.Normal(0.0, 0.0), ps.likelihood.normal(y, sd=1.0))
    assert "log_consistency" in res.__dataclass_fields__
    assert "consistency" not in res.__dataclass_fields__
    assert res.consistency[-1] == 0.0
    assert res.log_consistency[-1] == pytest.approx(_by_hand(y)[-1, 0], rel=1e-12)


def test_a_likelihood_without_a_time_axis_is_refused():
    with pytest.raises(ValueError, match="time axis"):
        ps.update_sequence(ps.Normal(0.0, 0.0), ps.likelihood.normal(1.0, sd=1.0))
