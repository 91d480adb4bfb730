"""Quick runs of the appendix reproductions: interface, JSON, plots, and the simple methods'
numbers recomputed independently from the same simulated data."""

import json

import numpy as np
import pytest

from possibly.experiments import normal_mmd_study as normal_mmd
from possibly.experiments import normal_study as normal
from possibly.experiments import soft_uniform_study as soft_uniform


@pytest.fixture(scope="module")
def normal_quick():
    return normal.run(repeats=60, seed=3, quick=True)


def test_normal_quick_interface(normal_quick):
    res = normal_quick
    json.dumps(res)
    assert res["eps"] == [0.0, 0.1, 0.2, 0.3]
    assert set(res["results"]["100"]) == set(normal.METHODS)
    for v in res["results"]["100"].values():
        assert len(v["rmse_mu"]) == len(v["rmse_lambda"]) == 4
        assert all(np.isfinite(v["rmse_lambda"]))
    assert isinstance(res["verdict"], str) and res["paper"]["numbers"] is None


def test_normal_simple_methods_recomputed(normal_quick):
    """Bayes on inliers (sample mean, n / (2 β0 + SS)) and median/MAD by hand."""
    rng = np.random.default_rng(3)
    y, inlier = normal.simulate(rng, normal_quick["eps"], 60, 100)
    res = normal_quick["results"]["100"]
    mu_b, lam_b, mu_m, lam_m = (np.empty(y.shape[:2]) for _ in range(4))
    for i in range(y.shape[0]):
        for j in range(y.shape[1]):
            z = y[i, j][inlier[i, j]]
            mu_b[i, j] = z.mean()
            lam_b[i, j] = len(z) / (2 * 1.0 + ((z - z.mean()) ** 2).sum())
            med = np.median(y[i, j])
            mu_m[i, j] = med
            lam_m[i, j] = 1 / (1.4826 * np.median(np.abs(y[i, j] - med))) ** 2

    def rmse(a, t):
        return np.sqrt(((a - t) ** 2).mean(-1))

    np.testing.assert_allclose(res["bayes_inliers"]["rmse_mu"], rmse(mu_b, 2.0), rtol=1e-10)
    np.testing.assert_allclose(res["bayes_inliers"]["rmse_lambda"], rmse(lam_b, 0.25),
                               rtol=1e-10)
    np.testing.assert_allclose(res["median_mad"]["rmse_mu"], rmse(mu_m, 2.0), rtol=1e-12)
    np.testing.assert_allclose(res["median_mad"]["rmse_lambda"], rmse(lam_m, 0.25), rtol=1e-12)


def test_normal_mmd_quick():
    res = normal_mmd.run(repeats=40, seed=1, quick=True)
    json.dumps(res)
    assert set(res["rmse"]) == set(normal_mmd.METHODS)
    assert set(res["seconds_per_repeat"]["one_at_a_time"]) == set(normal_mmd.METHODS) - {
        "bayes_inliers"}
    assert res["paper"]["seconds_per_repeat"]["mmd"] == 10.0
    rng = np.random.default_rng(1)
    y, inlier = normal.simulate(rng, res["eps"], 40, 100)
    med = np.median(y, -1)
    np.testing.assert_allclose(res["rmse"]["median"], np.sqrt(((med - 2) ** 2).mean(-1)))
    mean_in = np.array([[y[i, j][inlier[i, j]].mean() for j in range(40)] for i in range(4)])
    np.testing.assert_allclose(res["rmse"]["bayes_inliers"],
                               np.sqrt(((mean_in - 2) ** 2).mean(-1)), rtol=1e-10)


def test_soft_uniform_quick():
    res = soft_uniform.run(repeats=50, seed=2, quick=True)
    json.dumps(res)
    assert res["paper"] == soft_uniform.PAPER
    rng = np.random.default_rng(2)
    y, inlier = soft_uniform.simulate(rng, 50)
    hard = np.array([y[i][inlier[i]].max() for i in range(50)])
    assert res["results"]["hard_inliers"]["rmse"] == pytest.approx(
        np.sqrt(((hard - 100) ** 2).mean()))
    assert res["results"]["hard_all"]["median_abs_error"] == pytest.approx(
        np.median(np.abs(y.max(-1) - 100)))
    ex = res["example"]
    assert max(ex["robust_log_possibility"]) <= 1e-12


def test_simulate_soft_uniform_is_positive():
    y, _ = soft_uniform.simulate(np.random.default_rng(0), 2000)
    assert (y > 0).all()


def test_plots(tmp_path, normal_quick):
    pytest.importorskip("matplotlib")
    paths = normal.plot(normal_quick, tmp_path)
    paths += normal_mmd.plot(normal_mmd.run(repeats=10, quick=True), tmp_path)
    paths += soft_uniform.plot(soft_uniform.run(repeats=10, quick=True), tmp_path)
    assert len(paths) == 3
    for p in paths:
        with open(p, "rb") as fh:
            assert fh.read(8) == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("mod", [normal, normal_mmd, soft_uniform])
def test_bad_repeats(mod):
    with pytest.raises(ValueError, match="repeats"):
        mod.run(repeats=0)
