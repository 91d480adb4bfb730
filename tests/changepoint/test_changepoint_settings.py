"""Settings of the change-point detector that disagree are refused, and the paper's model
(``NormalMean``) treats a gross spike as an outlier, with the paper's recursion behind
``outliers="paper"``.

References are independent of the code under test: the brute-force recursion of
``tests/changepoint/test_changepoint.py`` (numerical suprema) covers the floored recursion
value by value; here the checks are on the segmentation of simulated series with known change
points and spikes, and on the two engines against each other.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import possibly as ps
from possibly.changepoint import ChangepointDetector, NormalMean

HAS_NUMBA = ChangepointDetector(sigma=1.0)._engine() == "numba"


# ----------------------------------------------------------------------------------------------
# contradictory arguments


def test_auto_model_with_a_sigma_is_refused_naming_both():
    with pytest.raises(ValueError, match=r"model='auto'.*sigma|sigma.*model='auto'"):
        ChangepointDetector(model="auto", sigma=2.0)
    det = ChangepointDetector(sigma=2.0)  # sigma alone still selects the paper's model
    assert det._models == (NormalMean(2.0),)
    with pytest.raises(ValueError, match="sigma"):
        det.set_params(model="auto")
    assert det.model is None and det.sigma == 2.0  # unchanged after the refused change
    assert ChangepointDetector(model="normal", sigma=2.0)._models == (NormalMean(2.0),)
    assert type(ChangepointDetector(model="auto")._models[0]).__name__ == "PolynomialTrend"


@pytest.mark.parametrize("kwargs, names", [
    (dict(robust=False, tau=0.2), ("tau", "robust")),
    (dict(robust=False, outlier_level=0.1), ("outlier_level", "robust")),
    (dict(sigma=1.0, robust=False, tau=0.2), ("tau", "robust")),
])
def test_robust_only_settings_with_the_standard_recursion_are_refused(kwargs, names):
    with pytest.raises(ValueError) as err:
        ChangepointDetector(**kwargs)
    for name in names:
        assert name in str(err.value)


@pytest.mark.parametrize("kwargs, name", [
    (dict(outliers="none"), "outliers"),
    (dict(outliers=None), "outliers"),
    (dict(outliers="paper", outlier_cost=3.0), "outlier_cost"),
    (dict(outlier_cost=0.0), "outlier_cost"),
    (dict(outlier_cost=-1.0), "outlier_cost"),
    (dict(outlier_cost=float("nan")), "outlier_cost"),
    (dict(outlier_cost="big"), "outlier_cost"),
])
def test_normal_mean_bad_outlier_settings_name_the_argument(kwargs, name):
    with pytest.raises((ValueError, TypeError), match=name):
        NormalMean(1.0, **kwargs)


def test_normal_mean_settings_survive_repr_pickle_and_sigma_auto():
    paper = NormalMean(2.0, outliers="paper")
    assert repr(paper) == "NormalMean(sigma=2.0, outliers='paper')"
    assert repr(NormalMean(2.0)) == "NormalMean(sigma=2.0)"
    assert repr(NormalMean(2.0, outlier_cost=3.0)) == "NormalMean(sigma=2.0, outlier_cost=3.0)"
    assert pickle.loads(pickle.dumps(paper)) == paper
    assert NormalMean(2.0) != paper
    y = np.random.default_rng(0).normal(size=200)
    res = ChangepointDetector(model=NormalMean("auto", outliers="paper")).fit(y)
    assert res.params.models[0].outliers == "paper"  # sigma estimated, the rule kept


# ----------------------------------------------------------------------------------------------
# the paper's model and gross spikes


def _spiky(seed: int, n: int = 1000) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A piecewise-constant series (σ = 1) with 2% spikes of 20 σ to 10⁶ σ."""
    y, cps, _ = ps.datasets.piecewise_constant(n, n_changes=5, outlier_rate=0.0, seed=seed)
    rng = np.random.default_rng(1000 + seed)
    starts = np.r_[0, cps]
    allowed = np.setdiff1d(np.arange(n), np.r_[starts, starts + 1, starts - 1])
    spikes = np.sort(rng.choice(allowed, size=n // 50, replace=False))
    y = y.copy()
    y[spikes] += rng.choice([-1.0, 1.0], spikes.size) * 10.0 ** rng.uniform(1.3, 6.0,
                                                                            spikes.size)
    return y, cps, spikes


def _paired(changepoints: np.ndarray, spikes: np.ndarray) -> int:
    """Spikes bracketed by change points: one at the spike and one just after it."""
    cps = set(int(c) for c in changepoints)
    return sum(1 for s in spikes if int(s) in cps and int(s) + 1 in cps)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("sigma", [1.0, "auto"])
def test_gross_spikes_are_outliers_not_pairs_of_change_points(seed, sigma):
    y, cps, spikes = _spiky(seed)
    res = ChangepointDetector(sigma=sigma, hazard=1e-3).fit(y)
    assert _paired(res.changepoints, spikes) == 0
    assert res.changepoints.size == cps.size
    assert np.all(np.abs(res.changepoints - cps) <= 2)
    assert np.isin(spikes, res.outliers).mean() >= 0.9
    # the standard recursion with the floor too: the floor, not the discount, does it
    standard = ChangepointDetector(sigma=sigma, hazard=1e-3, robust=False).fit(y)
    assert _paired(standard.changepoints, spikes) == 0
    # the paper's recursion turns spikes into pairs (what the floor is for)
    paper = ChangepointDetector(model=NormalMean(sigma, outliers="paper"), hazard=1e-3).fit(y)
    assert _paired(paper.changepoints, spikes) >= spikes.size // 2


def test_floor_scale_free():
    y, _, _ = _spiky(3)
    res = ChangepointDetector(model="normal", hazard=1e-3).fit(y)
    scaled = ChangepointDetector(model="normal", hazard=1e-3).fit(1e-3 * y + 50.0)
    np.testing.assert_array_equal(res.changepoints, scaled.changepoints)
    np.testing.assert_array_equal(res.outliers, scaled.outliers)


@pytest.mark.skipif(not HAS_NUMBA, reason="numba not installed")
@pytest.mark.parametrize("rule", [dict(), dict(outliers="paper"), dict(outlier_cost=2.0)])
@pytest.mark.parametrize("kw", [dict(), dict(forgetting=1.0, merge_tol=0.0, tol=0.0),
                                dict(robust=False), dict(tau=0.3, forgetting=0.8)])
def test_numpy_and_compiled_engines_agree_bit_for_bit(rule, kw):
    model = NormalMean(1.0, **rule)
    y, _, _ = _spiky(4, n=600)
    y[[0, 100, 101, 350]] = np.nan
    runs = [ChangepointDetector(model=model, hazard=2e-3, engine=e, **kw).fit(y)
            for e in ("numpy", "numba")]
    for name in ("map_run_length", "map_model", "n_active", "log_consistency", "discount",
                 "mean", "log_online_change_possibility"):
        np.testing.assert_array_equal(getattr(runs[0], name), getattr(runs[1], name), name)
    np.testing.assert_array_equal(runs[0].changepoints, runs[1].changepoints)
    # streaming through update() gives the same values (one chunk per observation)
    det = ChangepointDetector(model=model, hazard=2e-3, engine="numba", **kw)
    for x in y[:200]:
        det.update(x)
    np.testing.assert_array_equal(det.result().discount, runs[0].discount[:200])
    np.testing.assert_array_equal(det.result().mean, runs[0].mean[:200])
