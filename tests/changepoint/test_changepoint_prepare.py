"""The segment models' per-step hook (``SegmentModel.prepare``) changes no number.

The reference is the code before the hook, copied verbatim below: each model's
``log_consistency`` and ``update`` computing their statistics separately from the base class's
default ``prepare`` (``Observation(runs, y)``, nothing shared), as a third-party model that
does not write ``prepare`` is. Every comparison is exact (``tobytes``), not approximate.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import possibly as ps
from possibly import datasets
from possibly.changepoint import (
    ChangepointDetector,
    ConjugateModel,
    MultivariateNormalSegments,
    NormalMean,
    PolynomialTrend,
    SegmentModel,
    automatic_prior,
    automatic_vector_prior,
    model_family,
)
from possibly.changepoint.models import Observation
from possibly.changepoint.models.trend import LOG_2PI, gammaln
from possibly.changepoint.models.vector import multigammaln
from possibly.inference import combine, log_consistency

# ----------------------------------------------------------------------------------------------
# the models before the hook (main at 833a557): consistency and update each from scratch


def _old_run_log_consistency(runs, z):
    r = z - runs["m"][:, 0]
    return -(runs["a"] + 0.5) * np.log1p(r * r / (2.0 * runs["b"] * (1.0 + runs["cov"][:, 0, 0])))


def _old_observe(runs, z, gamma, integrated, floor):
    m, cov, a, b = runs["m"], runs["cov"], runs["a"], runs["b"]
    r = z - m[:, 0]
    q = cov[:, 0, 0]
    gq = 1.0 + gamma * q
    log_ratio = np.log1p(0.5 * gamma * r * r / (gq * b))
    if integrated:
        best = (-0.5 * gamma * LOG_2PI + gammaln(a + 0.5 * gamma) - gammaln(a)
                - 0.5 * np.log(gq) - 0.5 * gamma * np.log(b))
    else:
        best = np.zeros_like(r)
    ev_in = best - (a + 0.5 * gamma) * log_ratio
    outlier = ev_in < best - floor
    g = np.where(outlier, 0.0, gamma)
    gain = cov[:, :, 0] * (g / (1.0 + g * q))[:, None]
    new = {"m": m + gain * r[:, None],
           "cov": cov - gain[:, :, None] * cov[:, None, 0, :],
           "a": a + 0.5 * g,
           "b": b + 0.5 * g * r * r / (1.0 + g * q),
           "seen": runs["seen"] | ~outlier}
    return np.where(outlier, best - floor, ev_in), new, outlier


class _Unprepared:
    """Restores the base class's default ``prepare`` (nothing shared between the two calls);
    the old methods read ``(runs, y)`` from it."""

    prepare = SegmentModel.prepare

    def log_consistency(self, prepared):
        return self.old_log_consistency(prepared.runs, prepared.y)

    def update(self, prepared, gamma):
        return self.old_update(prepared.runs, prepared.y, gamma)


def _lc(model, runs, y):
    return model.log_consistency(model.prepare(runs, y))


def _update(model, runs, y, gamma):
    return model.update(model.prepare(runs, y), gamma)


class OldTrend(_Unprepared, PolynomialTrend):
    def old_log_consistency(self, runs, y):
        return _old_run_log_consistency(runs, self._z(y))

    def old_update(self, runs, y, gamma):
        incr, new, _ = _old_observe(runs, self._z(y), gamma, self.evidence == "integrated",
                                    self.outlier_cost)
        return incr, new


class OldVector(_Unprepared, MultivariateNormalSegments):
    @staticmethod
    def _old_mahalanobis(runs, z):
        r = z - runs["m"]
        delta = np.einsum("ni,ni->n", r, np.linalg.solve(runs["psi"], r[:, :, None])[:, :, 0])
        return r, delta

    def old_log_consistency(self, runs, y):
        _, delta = self._old_mahalanobis(runs, self._z(y))
        k = runs["kappa"]
        return -0.5 * (runs["nu"] + 1.0) * np.log1p(k * delta / (k + 1.0))

    def old_update(self, runs, y, gamma):
        z = self._z(y)
        r, delta = self._old_mahalanobis(runs, z)
        k, nu, psi = runs["kappa"], runs["nu"], runs["psi"]
        d = z.size
        k1, nu1 = k + gamma, nu + gamma
        log_ratio = np.log1p(k * gamma * delta / k1)
        if self.evidence == "integrated":
            _, logdet = np.linalg.slogdet(psi)
            best = (-0.5 * gamma * d * math.log(math.pi) + 0.5 * d * np.log(k / k1)
                    + multigammaln(0.5 * nu1, d) - multigammaln(0.5 * nu, d)
                    - 0.5 * gamma * logdet)
        else:
            best = np.zeros_like(delta)
        ev_in = best - 0.5 * nu1 * log_ratio
        outlier = ev_in < best - self._floor  # the floor in the prior's dimension
        g = np.where(outlier, 0.0, gamma)
        k1 = k + g
        new = {"m": runs["m"] + (g / k1)[:, None] * r,
               "kappa": k1,
               "psi": psi + (k * g / k1)[:, None, None] * (r[:, :, None] * r[:, None, :]),
               "nu": nu + g, "seen": runs["seen"] | ~outlier}
        return np.where(outlier, best - self._floor, ev_in), new


class OldNormalMean(_Unprepared, NormalMean):
    def old_log_consistency(self, runs, y):
        s2 = self._s2()
        lam = runs["precision"]
        d = y - runs["mean"]
        with np.errstate(over="ignore"):
            return -(0.5 * (d * d) * (lam / (1.0 + lam * s2)))

    def old_update(self, runs, y, gamma):
        k = gamma / self._s2()
        lam, mu = runs["precision"], runs["mean"]
        d = y - mu
        gain = k / (lam + k)
        with np.errstate(over="ignore"):
            incr = -(0.5 * (d * d) * (lam * gain))
        return incr, {"mean": mu + gain * d, "precision": lam + k}


class OldConjugate(_Unprepared, ConjugateModel):
    def old_log_consistency(self, runs, y):
        return log_consistency(self._member(runs), self.information(y), validate=False)

    def old_update(self, runs, y, gamma):
        lik = self.information(y)
        if gamma != 1.0:
            lik = lik.power(gamma, validate=False)
        post = self._member(runs)
        incr = log_consistency(post, lik, validate=False)
        post = combine(post, lik, validate=False)
        return incr, self._runs(post, np.ones_like(runs["seen"]))


# ----------------------------------------------------------------------------------------------
# exact equality helpers

_FIELDS = ("map_run_length", "map_model", "mean", "log_consistency", "discount", "n_active",
           "log_online_change_possibility", "changepoints", "outliers")


def _same(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _assert_same_fit(new, old):
    for name in _FIELDS:
        assert _same(getattr(new, name), getattr(old, name)), name


def _assert_same_runs(new, old):
    assert new.keys() == old.keys()
    for k in new:
        assert _same(new[k], old[k]), k


def _family(cls, **kw):
    return [cls(degree, **kw) for degree in (0, 1, 2)]


# ----------------------------------------------------------------------------------------------
# whole fits: the numpy recursion with the hook against the one without


@pytest.mark.parametrize("evidence, forgetting", [("integrated", 1.0), ("profile", 0.95)])
def test_well_log_trend_family_is_bit_identical(evidence, forgetting):
    y = ps.datasets.well_log()
    y = y if forgetting == 1.0 else y[:1500]
    kw = {"forgetting": forgetting, "tol": 1e-3}
    new = ChangepointDetector(model=model_family(evidence=evidence), engine="numpy", **kw).fit(y)
    old = ChangepointDetector(model=_family(OldTrend, evidence=evidence), **kw).fit(y)
    assert new.changepoints.size > 5  # a real segmentation, not an empty one
    _assert_same_fit(new, old)


@pytest.mark.parametrize("make", [datasets.level_shifts, datasets.variance_changes,
                                  datasets.trend_jumps, datasets.heavy_tailed,
                                  datasets.short_series])
def test_synthetic_suite_is_bit_identical(make):
    y, _ = make(seed=1)
    y = y.copy()
    y[len(y) // 3] = np.nan  # a missing value: predict only
    new = ChangepointDetector(model=model_family(), forgetting=1.0, tol=1e-3,
                              engine="numpy").fit(y)
    old = ChangepointDetector(model=_family(OldTrend), forgetting=1.0, tol=1e-3).fit(y)
    _assert_same_fit(new, old)


@pytest.mark.parametrize("dim", [2, 4])
@pytest.mark.parametrize("evidence, forgetting", [("integrated", 1.0), ("profile", 0.97)])
def test_vector_series_are_bit_identical(dim, evidence, forgetting):
    y, _ = datasets.multivariate_shifts(300, dim=dim, seed=dim)
    y = y.copy()
    y[[5, 150]] = np.nan
    new = ChangepointDetector(model=MultivariateNormalSegments(evidence=evidence),
                              forgetting=forgetting).fit(y)
    old = ChangepointDetector(model=OldVector(evidence=evidence), forgetting=forgetting).fit(y)
    assert new.changepoints.size > 0
    _assert_same_fit(new, old)


def test_normal_mean_and_conjugate_models_are_bit_identical():
    y = ps.datasets.well_log()[:1200]
    # the old NormalMean is the paper's recursion (no evidence floor)
    new = ChangepointDetector(model=NormalMean(2500.0, outliers="paper"), forgetting=0.9,
                              engine="numpy").fit(y)
    old = ChangepointDetector(model=OldNormalMean(2500.0, outliers="paper"),
                              forgetting=0.9).fit(y)
    _assert_same_fit(new, old)
    counts, _ = datasets.count_shifts(300, seed=0)
    model = ConjugateModel(ps.Gamma.uninformative(), ps.likelihood.poisson)
    old_model = OldConjugate(ps.Gamma.uninformative(), ps.likelihood.poisson)
    new = ChangepointDetector(model=model, forgetting=0.98, hazard=0.01).fit(counts)
    old = ChangepointDetector(model=old_model, forgetting=0.98, hazard=0.01).fit(counts)
    _assert_same_fit(new, old)


# ----------------------------------------------------------------------------------------------
# one step on random states and observations


def _random_states(model, old, z_rows, rng):
    """Run states reached by random observations, exponents and forgetting (both paths)."""
    runs = model.new_runs(1)
    for i, z in enumerate(z_rows):
        runs = {k: np.concatenate([v, model.new_runs(1)[k]])
                for k, v in model.forget(runs, float(rng.uniform(0.8, 1.0))).items()}
        _, runs = _update(old, runs, z, float(rng.uniform(0.0, 1.0)) if i % 5 else 1.0)
        yield runs


@pytest.mark.parametrize("degree", [0, 1, 2])
@pytest.mark.parametrize("evidence", ["integrated", "profile"])
def test_trend_step_on_random_inputs_is_bit_identical(degree, evidence):
    rng = np.random.default_rng(10 * degree + len(evidence))
    y = np.cumsum(rng.standard_t(2.0, size=40))
    prior = automatic_prior(y)
    model = PolynomialTrend(degree, evidence=evidence, prior=prior, outlier_cost=4.0)
    old = OldTrend(degree, evidence=evidence, prior=prior, outlier_cost=4.0)
    absorbed = floored = 0
    for runs in _random_states(model, old, y, rng):
        obs = float(rng.choice(y)) + float(rng.normal(scale=rng.choice([0.1, 5.0, 1e3])))
        gamma = float(rng.choice([1.0, rng.uniform()]))
        prepared = model.prepare(runs, obs)
        assert _same(model.log_consistency(prepared), _lc(old, runs, obs))
        incr, new = model.update(prepared, gamma)
        incr_old, new_old = _update(old, runs, obs, gamma)
        assert _same(incr, incr_old)
        _assert_same_runs(new, new_old)
        absorbed += int((new["a"] > runs["a"]).sum())
        floored += int((new["a"] == runs["a"]).sum())
    assert absorbed and floored  # both branches of the outlier floor were compared


@pytest.mark.parametrize("dim", [2, 3, 5])
@pytest.mark.parametrize("evidence", ["integrated", "profile"])
def test_vector_step_on_random_inputs_is_bit_identical(dim, evidence):
    rng = np.random.default_rng(dim + len(evidence))
    y = rng.standard_t(3.0, size=(40, dim)) * rng.uniform(0.1, 10.0, dim)
    prior = automatic_vector_prior(y)
    model = MultivariateNormalSegments(evidence=evidence, prior=prior, outlier_cost=4.0)
    old = OldVector(evidence=evidence, prior=prior, outlier_cost=4.0)
    absorbed = floored = 0
    for runs in _random_states(model, old, y, rng):
        obs = y[rng.integers(len(y))] + rng.normal(scale=rng.choice([0.1, 50.0]), size=dim)
        gamma = float(rng.choice([1.0, rng.uniform()]))
        prepared = model.prepare(runs, obs)
        assert _same(model.log_consistency(prepared), _lc(old, runs, obs))
        incr, new = model.update(prepared, gamma)
        incr_old, new_old = _update(old, runs, obs, gamma)
        assert _same(incr, incr_old)
        _assert_same_runs(new, new_old)
        absorbed += int((new["nu"] > runs["nu"]).sum())
        floored += int((new["nu"] == runs["nu"]).sum())
    assert absorbed and floored  # both branches of the outlier floor were compared


def test_default_hook_keeps_a_model_without_it_working():
    # a model that does not write prepare: the default computes nothing and the two methods
    # read the runs and the observation from it
    model = OldNormalMean(1.0)
    runs = model.new_runs(3)
    prepared = model.prepare(runs, 2.0)
    assert isinstance(prepared, Observation) and prepared.y == 2.0 and prepared.runs is runs
    assert _same(model.log_consistency(prepared), model.old_log_consistency(runs, 2.0))
    res = ChangepointDetector(model=model, hazard=0.01).fit([0.1, -0.2, 0.0, 8.0, 8.1, 7.9])
    assert res.changepoints.tolist() == [3]


def test_vector_step_solves_against_psi_once(monkeypatch):
    # the solve is the vector model's main cost per step: once for the consistency and the
    # update together (twice before the hook)
    from possibly.changepoint import recursion

    model = MultivariateNormalSegments(prior=(np.zeros(3), np.ones(3)))
    params = recursion.ChangepointParams.make(model=model, hazard=0.01, forgetting=1.0)
    state = recursion.init(params)
    for row in np.random.default_rng(0).normal(size=(4, 3)):
        state, _ = recursion.step(state, row, params)
    calls = []
    solve = np.linalg.solve

    def counting_solve(a, b):
        calls.append(a.shape)
        return solve(a, b)

    monkeypatch.setattr(np.linalg, "solve", counting_solve)
    recursion.step(state, np.array([0.5, -0.1, 2.0]), params)
    assert len(calls) == 1 and calls[0][0] == 5  # one batched solve over the 5 runs
