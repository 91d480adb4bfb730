"""The derived results of a fit (change possibility, outliers, intervals) against the slow
paths that define them: a replay of the recursion step by step in Python, the outlier rule
segment by segment, the interval scan change point by change point."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

import possibly as ps
from possibly import datasets
from possibly.changepoint import ConjugateModel, NormalMean, PolynomialTrend
from possibly.changepoint import detector as detector_module
from possibly.changepoint.models.log_scale import LogTrend
from possibly.changepoint.models.trend import automatic_prior, hindsight_log_consistency
from possibly.changepoint.outliers import find_outliers
from possibly.changepoint.recursion import init, step
from possibly.changepoint.uncertainty import possibility_intervals

ENGINES = ["numpy", pytest.param("numba", marks=pytest.mark.skipif(
    not ps.changepoint.numba_available(), reason="numba not installed"))]


def replayed_change_possibility(res):
    """π(s) by its definition: the recursion replayed one step at a time in Python (the
    numpy engine's ``step``), the largest normalised weight of the kept hypotheses of start
    ``s`` after any step."""
    state = init(res.params)
    best = np.full(len(res.y), -np.inf)
    for t in range(len(res.y)):
        y = float(res.y[t]) if res.y.ndim == 1 else res.y[t]
        state, _ = step(state, y, res.params)
        for s, lw in zip(state.start.tolist(), state.log_w.tolist(), strict=True):
            best[s] = max(best[s], lw)
    return np.exp(best)


def outliers_segment_by_segment(res):
    """The outlier rule (possibly.changepoint.outliers) written out per segment and per
    observation."""
    found = []
    for (a, b), k in zip(res.segments, res.segment_models, strict=True):
        model = res.params.models[k]
        far = model.outlying(res.y[a:b], res.discount[a:b])
        for i in range(a + 1, b):
            discounted = res.discount[i] < res.outlier_level
            if far[i - a] and (model.hindsight_outliers or discounted):
                found.append(i)
    return np.array(found, dtype=np.int64)


def intervals_by_scan(possibility, changepoints, alpha):
    """Each change point's possibility interval, grown one step at a time."""
    out = []
    for c in changepoints:
        lo = hi = int(c)
        while lo > 0 and possibility[lo - 1] >= alpha:
            lo -= 1
        while hi + 1 < possibility.size and possibility[hi + 1] >= alpha:
            hi += 1
        out.append((lo, hi + 1))
    return out


def _with_gaps(y, every=37):
    y = np.array(y, dtype=float)
    y[5::every] = np.nan
    return y


def _cases():
    """(name, detector factory, series): every model family on the suite and the well log."""
    trend, _ = datasets.trend_jumps(300, seed=1)
    shifts, _ = datasets.level_shifts(300, seed=2)
    counts, _ = datasets.count_shifts(240, seed=0)
    vector, _ = datasets.multivariate_shifts(160, seed=0)
    well = datasets.well_log()[:600]
    poisson = ConjugateModel(ps.Gamma.uninformative(), ps.likelihood.poisson)
    return [
        ("default trend", lambda e: ps.ChangepointDetector(engine=e), _with_gaps(trend)),
        ("default well log", lambda e: ps.ChangepointDetector(engine=e), well),
        ("normal mean", lambda e: ps.ChangepointDetector(sigma=1.0, engine=e),
         _with_gaps(shifts)),
        ("paper", lambda e: ps.ChangepointDetector(
            model=NormalMean(2500.0, outliers="paper"), engine=e), well),
        ("conjugate", lambda e: ps.ChangepointDetector(model=poisson, hazard=1e-3,
                                                       engine="numpy"), counts),
        ("vector", lambda e: ps.ChangepointDetector(engine="numpy"), vector),
    ]


CASES = _cases()


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_change_possibility_is_kept_by_the_recursion_and_equals_its_definition(case, engine):
    name, make, y = case
    res = make(engine).fit(y)
    assert res.log_change_possibility is not None  # no replay
    expected = replayed_change_possibility(res)
    if engine == "numba" and name.startswith("default"):
        # the compiled PolynomialTrend kernel equals the numpy one to rounding
        np.testing.assert_allclose(res.change_possibility, expected, rtol=1e-10, atol=0)
    else:
        np.testing.assert_array_equal(res.change_possibility, expected)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", CASES[:3], ids=[c[0] for c in CASES[:3]])
def test_change_possibility_survives_extend_update_and_pickling(case, engine, monkeypatch):
    # hypotheses alive from earlier calls keep raising the possibility of earlier starts
    monkeypatch.setattr(detector_module, "CHUNK", 17)  # several compiled chunks per call
    _, make, y = case
    whole = make(engine).fit(y)
    # the models fit resolved (the default models' priors), streamed from the first value
    det = ps.ChangepointDetector(model=list(whole.params.models), engine=engine)
    det.extend(y[:120])
    for value in y[120:150]:
        det.update(value)
    det = pickle.loads(pickle.dumps(det))
    det.extend(y[150:260])
    for value in y[260:]:
        det.update(value)
    res = det.result()
    assert res.log_change_possibility is not None
    np.testing.assert_array_equal(res.change_possibility, whole.change_possibility)
    np.testing.assert_array_equal(res.changepoints, whole.changepoints)


def test_fit_without_history_still_keeps_the_change_possibility():
    y, _ = datasets.level_shifts(300, seed=3)
    res = ps.ChangepointDetector(sigma=1.0, history=False).fit(y)
    assert res.log_change_possibility is not None
    np.testing.assert_array_equal(res.change_possibility, replayed_change_possibility(res))


def test_a_result_built_without_it_replays_the_recursion():
    y, _ = datasets.level_shifts(200, seed=4)
    res = ps.ChangepointDetector(sigma=1.0).fit(y)
    import dataclasses

    bare = dataclasses.replace(res, log_change_possibility=None, _cache={})
    np.testing.assert_array_equal(bare.change_possibility, res.change_possibility)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_outliers_equal_the_rule_segment_by_segment(case, engine):
    _, make, y = case
    res = make(engine).fit(y)
    np.testing.assert_array_equal(res.outliers, outliers_segment_by_segment(res))


def _trend_segments(degree, seed):
    """A PolynomialTrend and segments of a series with spikes and gaps, laid end to end."""
    rng = np.random.default_rng(seed)
    lengths = np.array([1, 2, 7, 40, 130])
    t = np.arange(lengths.sum(), dtype=float)
    y = 0.02 * t + 0.001 * t * t * (degree == 2) + rng.normal(size=t.size)
    y[rng.choice(t.size, 12, replace=False)] += rng.choice([-9.0, 15.0], 12)
    y[[3, 60, 61, 100]] = np.nan
    disc = np.where(np.isnan(y), np.nan, rng.uniform(0.0, 1.0, t.size) ** 3)
    model = PolynomialTrend(degree, prior=automatic_prior(y))
    z = (y - model.prior.loc) / model.prior.scale
    return model, z, disc, lengths


@pytest.mark.parametrize("compiled", [False, pytest.param(True, marks=pytest.mark.skipif(
    not ps.changepoint.numba_available(), reason="numba not installed"))])
@pytest.mark.parametrize("degree", [0, 1, 2])
@pytest.mark.parametrize("seed", [0, 1])
def test_hindsight_of_all_segments_at_once_equals_one_segment_at_a_time(degree, seed,
                                                                        compiled):
    model, z, disc, lengths = _trend_segments(degree, seed)
    got = model.hindsight_segments(z, disc, lengths, compiled=compiled)
    first = 0
    for n in lengths.tolist():
        zs, ds = z[first:first + n], disc[first:first + n]
        expected = hindsight_log_consistency(
            lambda w, zs=zs: model._loo_log_consistency(zs, w),
            model._replay_weights(zs, ds), model.dim)
        # sums in another order (numpy's matrix products, the compiled loops): rounding
        np.testing.assert_allclose(got[first:first + n], expected, rtol=1e-9, atol=1e-9)
        first += n


def test_find_outliers_of_a_model_without_a_batch_rule_calls_it_per_segment():
    y = np.array([0.0, 0.1, 9.0, -0.1, 0.0, 5.0, 5.1, 12.0, 4.9])
    disc = np.array([1.0, 1.0, 0.01, 0.9, 1.0, 0.05, 1.0, 0.01, 1.0])
    # the start of a segment (5) is never an outlier, whatever its discount
    found = find_outliers(y, disc, [(0, 5), (5, 9)], [0, 0], [NormalMean(1.0)], 0.1)
    assert found.tolist() == [2, 7]
    # the segments in any order
    found = find_outliers(y, disc, [(5, 9), (0, 5)], [0, 0], [NormalMean(1.0)], 0.1)
    assert found.tolist() == [2, 7]


def test_possibility_intervals_equal_the_scan():
    rng = np.random.default_rng(5)
    for _ in range(3000):
        n = int(rng.integers(1, 14))
        p = rng.choice([0.1, 0.5, 0.7, 1.0, math.nan], size=n)
        cps = np.sort(rng.choice(n, size=int(rng.integers(0, n + 1)), replace=False))
        alpha = float(rng.choice([0.05, 0.5, 0.7, 1.0]))
        assert possibility_intervals(p, cps, alpha) == intervals_by_scan(p, cps, alpha)


@pytest.mark.parametrize("engine, compiled", [("numpy", False), ("auto", None)])
def test_the_hindsight_outliers_follow_the_detectors_engine(engine, compiled, monkeypatch):
    # engine="numpy" never reaches numba, the hindsight outliers included (also through a
    # model on the log scale, and after pickling the result); "auto" leaves the hindsight
    # its own default (compiled where numba is installed)
    asked = []
    hindsight = PolynomialTrend.hindsight_segments

    def record(self, z, discount, lengths, compiled=None):
        asked.append(compiled)
        return hindsight(self, z, discount, lengths, compiled=False)

    monkeypatch.setattr(PolynomialTrend, "hindsight_segments", record)
    y = datasets.well_log()[:600]
    log_trend = LogTrend(0, prior=automatic_prior(np.log(y)))
    for det in (ps.ChangepointDetector(engine=engine),
                ps.ChangepointDetector(model=log_trend, engine=engine)):
        res = pickle.loads(pickle.dumps(det.fit(y)))
        asked.clear()
        assert res.outliers.dtype == np.int64
        assert asked and set(asked) == {compiled}, (det.model, asked)


def test_a_model_overriding_outlying_segments_without_compiled_still_works():
    # a user's model written against the three-argument outlying_segments: the default engine
    # does not pass the engine's choice to it
    from possibly.changepoint import NormalMean

    class OwnRule(NormalMean):
        def outlying_segments(self, y, discount, bounds):
            return super().outlying_segments(y, discount, bounds)

    y = np.random.default_rng(0).normal(size=200)
    y[[50, 120]] += 25.0
    result = ps.ChangepointDetector(OwnRule(sigma=1.0)).fit(y)
    assert {50, 120} <= set(result.outliers.tolist())
