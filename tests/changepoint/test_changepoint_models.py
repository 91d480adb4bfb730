"""ChangepointDetector with a generic segment model (``ConjugateModel``).

References, none of which uses the code under test:

* the built-in normal-mean engine (numpy and numba), itself checked against brute force and
  exhaustive enumeration in ``test_changepoint.py``: the generic engine with a ``Normal(0, 0)``
  prior and a normal likelihood must reproduce it;
* ``poisson_brute_force``: an unpruned, slow recursion written from the model for Poisson counts
  with an uninformative gamma prior on the rate. Each run keeps its raw counts and their
  weights (forgetting and discounts multiply the weights), and every supremum over the rate is
  found numerically (scipy's bounded scalar minimiser in ``log λ``) from the raw log
  likelihoods ``k log λ − λ − log k!``, not from any family formula.
"""

from __future__ import annotations

import functools
import json
import math
import pickle

import numpy as np
import pytest
from scipy import optimize, special

import possibly as ps
from possibly.changepoint import (
    ChangepointDetector,
    ChangepointParams,
    ConjugateModel,
    NormalMean,
    RunState,
    init,
    step,
)

HAS_NUMBA = ChangepointDetector(sigma=1.0)._engine() == "numba"
ENGINES = ["numpy", "numba"] if HAS_NUMBA else ["numpy"]
POISSON = ConjugateModel(ps.Gamma.uninformative(), ps.likelihood.poisson)


def normal_model(sigma: float) -> ConjugateModel:
    return ConjugateModel(ps.Normal(0.0, 0.0), functools.partial(ps.likelihood.normal, sd=sigma))


def assert_same_outputs(gen, ref, rtol=1e-9):
    """Generic against built-in: run lengths and change points exactly, floats to rtol."""
    np.testing.assert_array_equal(gen.map_run_length, ref.map_run_length)
    np.testing.assert_array_equal(gen.changepoints, ref.changepoints)
    np.testing.assert_array_equal(gen.n_active, ref.n_active)
    for f in ("consistency", "discount", "mean"):
        a, b = getattr(gen, f), getattr(ref, f)
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b), err_msg=f)
        np.testing.assert_allclose(a, b, rtol=rtol, atol=0.0, err_msg=f)


def count_series(seed: int, n: int = 36):
    """Counts with rate changes 3 -> 12 -> 6 and a few gross outliers (seeded)."""
    rng = np.random.default_rng(seed)
    rate = np.repeat([3.0, 12.0, 6.0], [n // 3, n // 3, n - 2 * (n // 3)])
    y = rng.poisson(rate).astype(float)
    outliers = np.array([5, n // 3 + 6, n - 4])
    y[outliers] = [35.0, 60.0, 40.0]
    return y, np.array([n // 3, 2 * (n // 3)]), outliers


# ----------------------------------------------------------------------------------------------
# (a) the generic engine reproduces the built-in normal engine


@pytest.fixture(scope="module")
def well_log():
    return ps.datasets.well_log()


@pytest.mark.parametrize("kw", [dict(robust=True), dict(robust=False),
                                dict(robust=True, tau=0.2, forgetting=1.0)])
def test_normal_model_reproduces_builtin_on_well_log(well_log, kw):
    y = well_log.copy()
    y[[50, 51, 2000]] = np.nan
    # the generic conjugate model runs the paper's recursion (no evidence floor)
    ref = ChangepointDetector(model=NormalMean(2500.0, outliers="paper"), hazard=2.5e-3,
                              merge_tol=0.0, **kw).fit(y)
    gen = ChangepointDetector(hazard=2.5e-3, model=normal_model(2500.0), **kw).fit(y)
    assert_same_outputs(gen, ref)
    assert gen.changepoints.size > 10  # a non-trivial comparison


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("robust", "forgetting", "tau", "tol", "seed"), [
    (True, 0.9, None, 1e-12, 0), (False, 0.9, None, 1e-12, 1), (True, 0.8, 0.3, 1e-12, 2),
    (True, 0.95, None, 0.0, 3),
])
def test_normal_model_reproduces_builtin_on_simulated(engine, robust, forgetting, tau, tol,
                                                      seed):
    y, _, _ = ps.datasets.piecewise_constant(600, n_changes=4, sigma=1.5, outlier_rate=0.02,
                                             seed=seed)
    y[[0, 200, 201]] = np.nan  # a missing first value: the mean is NaN there in both
    kw = dict(hazard=1e-3, forgetting=forgetting, robust=robust, tau=tau, tol=tol)
    ref = ChangepointDetector(model=NormalMean(1.5, outliers="paper"), engine=engine,
                              merge_tol=0.0, **kw).fit(y)
    gen = ChangepointDetector(model=normal_model(1.5), **kw).fit(y)
    assert_same_outputs(gen, ref)
    assert np.isnan(gen.mean[0]) and np.isnan(gen.consistency[200])
    for t in (150, 599):  # the kept run-length possibilities too
        np.testing.assert_allclose(gen.log_run_length_possibility(t),
                                   ref.log_run_length_possibility(t), rtol=1e-9, atol=1e-9)


def test_normal_model_explicit_dim_two_is_the_default():
    model = normal_model(1.0)
    assert model.dim == 2.0
    assert ConjugateModel(ps.NormalGamma(0.0, 0.0, 0.0, 0.0), ps.likelihood.normal_batch).dim \
        == 3.0
    y, _, _ = ps.datasets.piecewise_constant(200, n_changes=2, seed=8)
    a = ChangepointDetector(hazard=1e-3, model=model).fit(y)
    b = ChangepointDetector(hazard=1e-3, model=ConjugateModel(
        model.prior, model.likelihood, dim=2)).fit(y)
    np.testing.assert_array_equal(a.discount, b.discount)
    c = ChangepointDetector(hazard=1e-3, model=ConjugateModel(
        model.prior, model.likelihood, dim=1)).fit(y)
    # γ = c^(1/d): d = 1 discounts more than d = 2 wherever c < 1
    lower = c.consistency < 1 - 1e-9
    assert lower.any()
    np.testing.assert_allclose(c.discount[lower], c.consistency[lower], rtol=1e-12)


# ----------------------------------------------------------------------------------------------
# (b) Poisson counts against an unpruned brute force


def _log_lik(k: float, lam_log: float) -> float:
    """log p(k | λ) for a Poisson count, as a function of u = log λ."""
    return k * lam_log - math.exp(lam_log) - special.gammaln(k + 1.0)


def _sup(terms):
    """max over u = log λ of Σ w · log p(k | e^u); returns (value, argmax λ)."""
    if not terms:
        return 0.0, math.nan

    def neg(u):
        return -sum(w * _log_lik(k, u) for k, w in terms)

    res = optimize.minimize_scalar(neg, bounds=(-35.0, 8.0), method="bounded",
                                   options={"xatol": 1e-11})
    return -res.fun, math.exp(res.x)


def poisson_brute_force(y, hazard, forgetting, robust=True, tau=None):
    """Unpruned possibilistic BOCPD for counts, rate uninformative a priori; per-step dicts.

    ``log L(λ | k) = log p(k | λ) − sup_λ' log p(k | λ')``, the information in one count; a
    run's possibility function of λ is ``Π L_j^{w_j}`` renormalised to sup 1 (``offset``).
    """
    runs = []  # each: {"start", "log_w", "terms": [(k_j, w_j)], "offset", "norm"}
    out = []
    for t, yt in enumerate(y):
        for r in runs:  # predict: f^ρ multiplies every weight (and the normaliser) by ρ
            r["terms"] = [(k, forgetting * w) for k, w in r["terms"]]
            r["offset"] *= forgetting
            r["norm"] *= forgetting
        new = 0.0 if not runs else math.log(hazard) + max(r["log_w"] for r in runs)
        runs.append({"start": t, "log_w": new, "terms": [], "offset": 0.0, "norm": 0.0})
        if math.isnan(yt):
            c = g = math.nan
        else:
            top_k = _sup([(yt, 1.0)])[0]  # sup_λ log p(y | λ): L = p / sup p

            def log_sup_with(r, weight, top_k=top_k, yt=yt):
                # sup_λ f_r(λ) L(λ | y)^weight, with log f_r = Σ w_j log L_j − offset
                val = _sup(r["terms"] + [(yt, weight)])[0]
                return val - r["norm"] - weight * top_k + r["offset"]

            log_c = max(r["log_w"] + log_sup_with(r, 1.0) for r in runs)
            c = math.exp(log_c)
            g = math.sqrt(c) if robust else 1.0
            if robust and tau is not None and g > tau:
                g = 1.0
            for r in runs:
                v = log_sup_with(r, g)
                r["log_w"] += v
                r["terms"] = r["terms"] + [(yt, g)]
                r["norm"] += g * top_k  # Σ w_j sup log p(k_j | ·), so log L_j = log p_j − sup
                r["offset"] = r["offset"] - v  # renormalise f_r to sup 1
            top = max(r["log_w"] for r in runs)
            for r in runs:
                r["log_w"] -= top
        best = max(runs, key=lambda r: (r["log_w"], -r["start"]))
        rate = _sup(best["terms"])[1] if best["terms"] else math.nan
        out.append({"r": t - best["start"], "rate": rate, "c": c, "g": g,
                    "log_w": {t - r["start"]: r["log_w"] for r in runs}})
    return out


@pytest.mark.parametrize(("robust", "forgetting", "tau", "seed"), [
    (True, 0.9, None, 1), (False, 1.0, None, 2), (True, 1.0, None, 3), (True, 0.8, 0.3, 4),
])
def test_poisson_matches_brute_force(robust, forgetting, tau, seed):
    y, _, _ = count_series(seed)
    y[14] = np.nan
    y[9] = 0.0  # a zero count: its likelihood peaks at λ = 0
    hazard = 0.02
    ref = poisson_brute_force(y, hazard, forgetting, robust, tau)
    res = ChangepointDetector(hazard=hazard, forgetting=forgetting, robust=robust, tau=tau,
                              tol=0.0, model=POISSON).fit(y)
    assert res.map_run_length.tolist() == [s["r"] for s in ref]
    np.testing.assert_allclose(res.consistency, [s["c"] for s in ref], rtol=1e-7)
    np.testing.assert_allclose(res.discount, [s["g"] for s in ref], rtol=1e-7)
    np.testing.assert_allclose(res.mean, [s["rate"] for s in ref], rtol=1e-6, atol=1e-9)
    for t in (5, 14, 20, len(y) - 1):
        lw = res.log_run_length_possibility(t)
        expect = np.full(t + 1, -np.inf)
        for r, v in ref[t]["log_w"].items():
            expect[r] = v
        np.testing.assert_allclose(lw, expect, rtol=1e-7, atol=1e-7)
    assert np.isnan(res.consistency[14]) and np.isnan(res.discount[14])
    if robust:
        assert np.nanmin(res.discount) < 0.5  # the outliers were discounted: a real robust test


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_poisson_robust_finds_changes_and_outliers(seed):
    rng = np.random.default_rng(seed)
    rate = np.repeat([4.0, 16.0, 5.0, 25.0], 150)
    y = rng.poisson(rate).astype(float)
    spikes = np.array([40, 200, 380, 520])
    y[spikes] = [60.0, 90.0, 70.0, 0.0]
    # forgetting 1: constant rates (with 0.9 the 16 -> 5 step can pass for a drift)
    robust = ChangepointDetector(hazard=1e-3, forgetting=1.0, model=POISSON).fit(y)
    assert robust.changepoints.size == 3
    assert np.all(np.abs(robust.changepoints - [150, 300, 450]) <= 3)
    assert set(spikes[:3].tolist()) <= set(robust.outliers.tolist())
    assert robust.outliers.size <= 6
    # E* of the rate at the end of a long segment is near the true rate
    assert abs(robust.mean[449] - 5.0) < 1.5 and abs(robust.mean[-1] - 25.0) < 3.0
    # the standard version opens segments at the spikes
    standard = ChangepointDetector(hazard=1e-3, forgetting=1.0, robust=False,
                                   model=POISSON).fit(y)
    assert standard.changepoints.size > robust.changepoints.size
    assert standard.outliers.size == 0
    # pruning changes nothing
    full = ChangepointDetector(hazard=1e-3, forgetting=1.0, tol=0.0, model=POISSON).fit(y)
    np.testing.assert_array_equal(full.map_run_length, robust.map_run_length)
    np.testing.assert_array_equal(full.discount, robust.discount)
    assert robust.n_active.max() < full.n_active.max() == y.size


# ----------------------------------------------------------------------------------------------
# (c) batches, vectors, streaming, pickling, pure step


def test_batched_counts_per_step():
    y, _, _ = count_series(5, n=60)
    one = ChangepointDetector(hazard=0.01, model=POISSON).fit(y)
    col = ChangepointDetector(hazard=0.01, model=POISSON).fit(y[:, None])  # batches of one
    np.testing.assert_array_equal(one.map_run_length, col.map_run_length)
    np.testing.assert_array_equal(one.discount, col.discount)
    # three counts per step, same rates: one observation carries three counts' information
    rng = np.random.default_rng(1)
    rate = np.repeat([3.0, 9.0], 30)
    batches = rng.poisson(rate[:, None], size=(60, 3)).astype(float)
    res = ChangepointDetector(hazard=0.01, model=POISSON).fit(batches)
    assert res.y.shape == (60, 3) and res.mean.shape == (60,)
    assert res.changepoints.tolist() == [30]
    lik = ps.likelihood.poisson(batches[59])
    assert float(lik.alpha) == batches[59].sum() and float(lik.beta) == 3.0


def test_vector_observations_multivariate_normal():
    rng = np.random.default_rng(3)
    level = np.repeat([[0.0, 0.0], [4.0, -3.0]], [40, 40], axis=0)
    y = level + rng.normal(0.0, 1.0, (80, 2))
    y[20] = [6.0, -6.0]  # an outlier, 8.5 σ away
    y[60, 1] = np.nan  # a partly missing observation counts as missing
    lik = functools.partial(ps.likelihood.linear_gaussian, H=np.eye(2), R=np.eye(2))
    model = ConjugateModel(ps.MultivariateNormal.uninformative(2), lik)
    assert model.dim == 3.0
    res = ChangepointDetector(hazard=1e-3, model=model).fit(y)
    assert res.mean.shape == (80, 2)
    assert res.changepoints.tolist() == [40] and res.segments == [(0, 40), (40, 80)]
    assert res.outliers.tolist() == [4, 20]  # y[4] is a 3.7 σ noise vector
    assert np.isnan(res.discount[60])
    np.testing.assert_allclose(res.mean[-1], [4.0, -3.0], atol=1.0)
    np.testing.assert_allclose(res.segment_medians()[-1],  # row 60 (missing) left out
                               np.median(np.delete(y, 60, axis=0)[40:], axis=0))
    d = json.loads(json.dumps(res.to_dict()))
    assert d["y"][60][1] is None and len(d["mean"][0]) == 2
    assert d["params"]["sigma"] is None and "ConjugateModel" in d["params"]["model"]


def test_streaming_equals_fit_and_bounded_memory():
    y, _, _ = count_series(6, n=90)
    y[17] = np.nan
    ref = ChangepointDetector(hazard=0.01, model=POISSON).fit(y)
    det = ChangepointDetector(hazard=0.01, model=POISSON)
    infos = [det.update(v) for v in y]
    assert [i.map_run_length for i in infos] == ref.map_run_length.tolist()
    np.testing.assert_array_equal([i.mean for i in infos], ref.mean)
    np.testing.assert_array_equal([i.discount for i in infos], ref.discount)
    assert [i.t for i in infos] == list(range(y.size))
    np.testing.assert_array_equal(det.result().changepoints, ref.changepoints)
    np.testing.assert_array_equal(det.result().outliers, ref.outliers)
    lean = ChangepointDetector(hazard=0.01, model=POISSON, history=False)
    for chunk in np.array_split(y, 7):
        lean.extend(chunk)
    np.testing.assert_array_equal(lean.changepoints, ref.changepoints)
    with pytest.raises(ValueError, match="history=True"):
        lean.result()
    # fit starts again from scratch
    again = det.fit(y)
    np.testing.assert_array_equal(again.discount, ref.discount)


def test_pickle_interrupt_resume():
    y, _, _ = count_series(7, n=90)
    ref = ChangepointDetector(hazard=0.01, model=POISSON).fit(y)
    det = ChangepointDetector(hazard=0.01, model=POISSON)
    det.extend(y[:41])
    resumed = pickle.loads(pickle.dumps(det))
    assert isinstance(resumed.state_, RunState) and resumed.t == 41
    resumed.extend(y[41:])
    out = resumed.result()
    np.testing.assert_array_equal(out.map_run_length, ref.map_run_length)
    np.testing.assert_array_equal(out.mean, ref.mean)
    np.testing.assert_array_equal(out.discount, ref.discount)
    # a detector with a picklable normal likelihood too
    pickle.loads(pickle.dumps(ChangepointDetector(model=normal_model(2.0))))


def test_pure_step_matches_detector():
    y, _, _ = count_series(8)
    params = ChangepointParams.make(None, hazard=0.01, model=POISSON)
    state = init(POISSON)
    rs = []
    for v in y:
        new, info = step(state, float(v), params)
        assert new is not state and state.t == info.t
        assert new.blocks[0].runs["seen"].shape == (new.n_active,)
        state = new
        rs.append(info.map_run_length)
    res = ChangepointDetector(hazard=0.01, model=POISSON).fit(y)
    assert rs == res.map_run_length.tolist()
    assert "model=ConjugateModel(prior=Gamma" in repr(ChangepointDetector(model=POISSON))


def test_missing_values_only_predict():
    res = ChangepointDetector(hazard=0.01, model=POISSON).fit([np.nan, 3.0, 4.0, np.nan, 5.0])
    assert np.isnan(res.mean[0]) and res.map_run_length.tolist() == [0, 1, 2, 3, 4]
    assert res.mean[3] == res.mean[2] and np.isnan(res.consistency[3])


def test_informative_prior_is_used():
    # a confident prior at rate 2 makes a first segment at rate 10 inconsistent with it
    prior = ps.Gamma(200.0, 100.0)
    model = ConjugateModel(prior, ps.likelihood.poisson)
    res = ChangepointDetector(hazard=0.01, forgetting=1.0, model=model).fit([10.0, 11.0, 9.0])
    assert res.consistency[0] < 1e-3
    lik = ps.likelihood.poisson(10.0)
    np.testing.assert_allclose(res.consistency[0], ps.consistency(prior, lik), rtol=1e-12)


# ----------------------------------------------------------------------------------------------
# (d) bad input


def test_prior_and_likelihood_of_different_families():
    model = ConjugateModel(ps.Normal(0.0, 0.0), ps.likelihood.poisson)
    with pytest.raises(ValueError, match=r"likelihood must return a Normal \(the prior's family\)"
                                         r", got Gamma"):
        ChangepointDetector(model=model).fit([1.0, 2.0])


@pytest.mark.parametrize(("kw", "match"), [
    (dict(prior=ps.Gamma(0.0, 0.0), likelihood="poisson"), "likelihood must be callable"),
    (dict(prior=ps.Gamma(0.0, 0.0), likelihood=None), "likelihood must be callable"),
    (dict(prior=ps.Pareto(1.0, 1.0), likelihood=ps.likelihood.uniform),
     "prior must be a member of a conjugate family"),
    (dict(prior="gamma", likelihood=ps.likelihood.poisson), "prior must be a member"),
    (dict(prior=ps.Gamma([0.0, 1.0], 1.0), likelihood=ps.likelihood.poisson),
     r"prior must be a single possibility function \(batch shape \(\)\)"),
    (dict(prior=ps.Gamma(1.0, 0.0), likelihood=ps.likelihood.poisson), "prior is unbounded"),
    (dict(prior=ps.Gamma(0.0, 0.0), likelihood=ps.likelihood.poisson, dim=float("nan")),
     "dim must be finite"),
    (dict(prior=ps.Gamma(0.0, 0.0), likelihood=ps.likelihood.poisson, dim=0.0),
     "dim must be positive"),
    (dict(prior=ps.Gamma(0.0, 0.0), likelihood=ps.likelihood.poisson, dim="two"),
     "dim must be a real number"),
])
def test_bad_model(kw, match):
    with pytest.raises((ValueError, TypeError), match=match):
        ConjugateModel(**kw)


@pytest.mark.parametrize(("kw", "match"), [
    (dict(model="poisson"), "model must be 'auto', 'normal', a segment model or a list"),
    (dict(model=ps.Gamma(0.0, 0.0)), "model must be a segment model"),
    (dict(model=POISSON, sigma=2.0), "sigma belongs to model='normal'"),
    (dict(model=POISSON, engine="numba"), "engine='numba' needs models with one compiled kernel"),
    (dict(model=POISSON, hazard=float("nan")), "hazard must be finite"),
    (dict(model=POISSON, forgetting=float("nan")), "forgetting must be finite"),
    (dict(model=POISSON, hazard=1.0), r"hazard must be in \(0, 1\)"),
])
def test_bad_detector_arguments(kw, match):
    with pytest.raises((ValueError, TypeError), match=match):
        ChangepointDetector(**kw)


def test_bad_params_make():
    with pytest.raises(ValueError, match="sigma belongs to NormalMean"):
        ChangepointParams.make(1.0, model=POISSON)
    with pytest.raises(TypeError, match="model must be a segment model"):
        ChangepointParams.make(None, model="poisson")


@pytest.mark.parametrize(("y", "match"), [
    ([], "empty"),
    (3.0, "at least one dimension"),
    ([1.0, np.inf], "infinite value at index 1"),
    (["a", "b"], "array of numbers"),
    ([1.0, -2.0], "likelihood failed on the observation -2.0: counts must be"),
])
def test_bad_observations(y, match):
    with pytest.raises(ValueError, match=match):
        ChangepointDetector(model=POISSON).fit(y)


def test_bad_likelihood_output():
    unbounded = ConjugateModel(ps.NormalGamma(0.0, 0.0, 0.0, 0.0), ps.likelihood.normal_unknown)
    with pytest.raises(ValueError, match="likelihood returned an unbounded function"):
        ChangepointDetector(model=unbounded).fit([1.0, 2.0])
    batched = ConjugateModel(ps.Gamma(0.0, 0.0), lambda y: ps.Gamma([y, y], [1.0, 1.0]))
    with pytest.raises(ValueError, match=r"likelihood must return the information in one "
                                         r"observation \(batch shape \(\)\)"):
        ChangepointDetector(model=batched).fit([1.0, 2.0])
    with pytest.raises(ValueError, match="y must be one observation"):
        ChangepointDetector(model=POISSON).update("x")
