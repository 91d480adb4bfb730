"""Reproduction of paper §5.1 (possibly.experiments.feature_study): quick mode and its parts."""

import json

import numpy as np
import pytest

import possibly as ps
from possibly.experiments import feature_study as feature


@pytest.fixture(scope="module")
def quick_result():
    return feature.run(repeats=30, seed=0, quick=True)


def test_quick_run_is_json_and_complete(quick_result):
    text = json.dumps(quick_result)                   # JSON-serialisable, no numpy scalars
    back = json.loads(text)
    assert back["experiment"] == "feature"
    assert back["paper"]["ordering_std_upper_bound"] == 2e-4
    assert back["verdict"].startswith("quick mode")
    for reading in ("batch", "vector"):
        res = back["error"][reading]
        assert len(res["t"]) == 60
        for m in feature.METHODS:
            curve = np.asarray(res["mean_error"][m])
            assert curve.shape == (60,) and np.isfinite(curve).all()
    assert [r["dim"] for r in back["consistency"]["batch"]["runs"]] == [2, 10, 50]
    assert [r["n"] for r in back["consistency"]["batch"]["runs"]] == [5, 25, 125]


def test_quick_run_shows_the_papers_qualitative_claims(quick_result):
    """Whole-batch outliers: discounting beats standard Bayes on everything, and the τ = 0.25
    threshold keeps (almost) every inlier batch whole while discounting outlier batches."""
    res = quick_result["error"]["batch"]
    final = {m: res["final_error"][m]["mean"] for m in feature.METHODS}
    assert final["robust"] < final["standard_all"]
    assert final["threshold"] < final["standard_all"]
    assert res["threshold_kept_whole"]["inlier_batches"] > 0.95
    assert res["threshold_kept_whole"]["outlier_batches"] < 0.2
    assert res["gamma_median"]["outlier_batches"] < res["gamma_median"]["inlier_batches"]


def test_plot_writes_pngs(quick_result, tmp_path):
    paths = feature.plot(quick_result, tmp_path)
    assert len(paths) == 2
    for p in paths:
        with open(p, "rb") as fh:
            assert fh.read(8) == b"\x89PNG\r\n\x1a\n"


def test_sampled_covariances_follow_iw_identity_d_sqrt_d():
    """Mean of IW(I_d, ν) is I_d / (ν - d - 1): checks the d√d degrees of freedom."""
    rng = np.random.default_rng(3)
    d = 4
    draws = feature.sample_covariances(rng, d, 20000)
    assert draws.shape == (20000, d, d)
    expected = np.eye(d) / (d * np.sqrt(d) - d - 1)
    np.testing.assert_allclose(draws.mean(0), expected, atol=0.02 * expected[0, 0] * 3)


@pytest.mark.parametrize("reading", ["batch", "vector"])
def test_simulated_outliers_have_inflated_covariance(reading):
    rng = np.random.default_rng(4)
    d, n, runs = 3, 20, 4000
    sigma = np.array([[2.0, 0.5, 0.0], [0.5, 1.0, 0.3], [0.0, 0.3, 0.5]])
    chol = np.broadcast_to(np.linalg.cholesky(sigma), (runs, d, d))
    Y, flags = feature.simulate_batches(rng, chol, n, 0.1, 3.0, reading)
    assert Y.shape == (runs, n, d)
    assert flags.shape == ((runs,) if reading == "batch" else (runs, n))
    assert abs(flags.mean() - 0.1) < 0.02
    vec_flags = np.broadcast_to(flags[:, None], (runs, n)) if reading == "batch" else flags
    inl, out = Y[~vec_flags], Y[vec_flags]
    np.testing.assert_allclose(inl.T @ inl / len(inl), sigma, atol=0.05)
    np.testing.assert_allclose(out.T @ out / len(out), 3.0 * sigma, atol=0.3)


def test_inlier_information_equals_information_of_the_subset(rng):
    Y = rng.normal(size=(3, 9, 2))
    keep = np.ones((3, 9), dtype=bool)
    keep[0, [1, 4]] = False
    keep[2, :] = False                                # nothing kept: the function 1
    info = feature.inlier_information(Y, keep)
    sub = Y[0][keep[0]]
    np.testing.assert_allclose(info.mean[0], sub.mean(0))
    np.testing.assert_allclose(info.psi[0], 7 * np.cov(sub.T, bias=True))
    assert info.nu[0] == 7 and info.lam[0] == 7
    np.testing.assert_allclose(info.psi[1], 9 * np.cov(Y[1].T, bias=True))
    assert info.nu[2] == 0 and info.lam[2] == 0 and not info.psi[2].any()


def test_error_study_equals_a_loop_of_estimator_fits():
    """The vectorised study against per-run ``RobustCovarianceEstimator.fit`` on the same data."""
    repeats, steps, d, n, tau = 4, 25, 3, 8, 0.25
    res = feature.error_study(repeats, 7, dim=d, n=n, steps=steps, epsilon=0.1, tau=tau)
    # regenerate the identical data stream
    rng = np.random.default_rng(7)
    sigma = feature.sample_covariances(rng, d, repeats)
    chol = np.linalg.cholesky(sigma)
    Ys, flags = zip(*[feature.simulate_batches(rng, chol, n, 0.1, 3.0, "batch")
                      for _ in range(steps)], strict=True)
    Y, flags = np.stack(Ys, 1), np.stack(flags, 1)     # (repeats, steps, n, d)
    expected = {}
    for name, est in (("robust", ps.RobustCovarianceEstimator()),
                      ("threshold", ps.RobustCovarianceEstimator(tau=tau)),
                      ("standard_all", ps.RobustCovarianceEstimator(robust=False))):
        fit = est.fit(Y)
        expected[name] = np.linalg.norm(sigma - fit.covariance[:, -1], axis=(-2, -1)).mean()
    inl = []
    for r in range(repeats):
        pooled = Y[r][~flags[r]].reshape(-1, d)
        inl.append(np.linalg.norm(sigma[r] - np.cov(pooled.T, bias=True)))
    expected["standard_inliers"] = np.mean(inl)
    for name, value in expected.items():
        assert res["final_error"][name]["mean"] == pytest.approx(value, rel=1e-9)
        assert res["mean_error"][name][-1] == pytest.approx(value, rel=1e-9)


def test_ordering_study_quick():
    res = feature.ordering_study(20, 1, dim=3, n=8, steps=40, epsilon=0.1)
    assert res["permutations"] == 20
    for m in ("robust", "threshold"):
        assert np.isfinite(res["std"][m]) and res["std"][m] > 0
        # a permuted robust estimate stays near the inliers-only estimate (same data)
        assert abs(res["mean"][m] - res["standard_inliers_error"]) < 0.5 * res[
            "standard_inliers_error"] + 0.05


def test_consistency_study_reports_every_iteration():
    res = feature.consistency_study(2, dims=(2, 4), steps=30)
    for run in res["runs"]:
        gamma = np.asarray(run["gamma"])
        assert gamma.shape == (30,) and gamma[0] == 1.0     # f ≡ 1: the first batch is whole
        assert ((gamma > 0) & (gamma <= 1)).all()
        np.testing.assert_allclose(np.log(gamma), np.asarray(run["log_consistency"])
                                   / run["effective_dim"])


def test_bad_arguments():
    with pytest.raises(ValueError, match="repeats"):
        feature.run(repeats=0, quick=True)
    with pytest.raises(ValueError, match="reading"):
        feature.simulate_batches(np.random.default_rng(0), np.eye(2)[None], 3, 0.1, 3.0, "x")


def test_summary_rows(quick_result):
    rows = feature.summary(quick_result)
    assert all(set(r) == {"quantity", "paper", "ours", "verdict"} for r in rows)
    assert rows[0]["verdict"] == "quick mode"
    json.dumps(rows)


def test_ordering_realisations_in_quick_run(quick_result):
    real = quick_result["ordering"]["realisations"]
    assert real["seeds"] == [0, 1, 2]
    assert real["std"]["robust"][0] == quick_result["ordering"]["std"]["robust"]
    rows = [r for r in feature.summary(quick_result) if "realisations" in r["quantity"]]
    assert len(rows) == 1 and rows[0]["verdict"].startswith("quick mode; ordering std below")


def test_realisations_verdict_names_the_failures():
    real = {"seeds": [0, 1, 2], "std": {"robust": [5e-5, 3.3e-4, 1e-4],
                                        "threshold": [2e-5, 2.8e-4, 3e-4]}}
    assert feature._realisations_verdict(real, 2e-4) == (
        "ordering std below 0.0002 on 1 of 3 realisations (seeds 0-2), not on seed 1 "
        "(3.3e-04), seed 2 (3.0e-04)")


def test_ordering_bound_fails_on_seed_1_at_paper_scale():
    # the reproduction report says the bound holds on 14 of 15 realisations: seed 1 is the
    # exception (about 3.3e-4), seed 0 (the realisation shown) is well below
    s = feature.SETTINGS
    common = {k: s[k] for k in ("n", "steps", "epsilon", "alpha")}
    std = {seed: feature.ordering_study(1000, np.random.SeedSequence(seed).spawn(5)[2],
                                        dim=s["dim"], tau=s["tau"], **common)["std"]
           for seed in (0, 1)}
    assert max(std[0].values()) < 2e-4 < std[1]["robust"]
    assert std[1]["robust"] == pytest.approx(3.3e-4, rel=0.01)
