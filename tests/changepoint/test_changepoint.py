"""ChangepointDetector against independent references.

* ``brute_force``: an unpruned, slow recursion written from the model, not from the closed
  forms: each run keeps its observations and their weights, and every supremum over the segment
  mean is found numerically (scipy's bounded scalar minimiser).
* ``exhaustive``: for the standard recursion without forgetting, the run-length possibility is
  the max over every segmentation of ``h^(#changes) · Π_segments sup_θ Π L(θ | y_j)``,
  enumerated over all ``2^t`` segmentations.
"""

from __future__ import annotations

import itertools
import math
import pickle

import numpy as np
import pytest
from scipy import optimize, stats

import possibly as ps
from possibly.changepoint import (
    ChangepointDetector,
    ChangepointParams,
    NormalMean,
    backtrack,
    estimate_sigma,
    init,
    step,
)

HAS_NUMBA = ChangepointDetector(sigma=1.0)._engine() == "numba"
ENGINES = ["numpy", "numba"] if HAS_NUMBA else ["numpy"]


# ----------------------------------------------------------------------------------------------
# references


def _sup_log(terms, lo, hi):
    """max over θ of -Σ ω (y - θ)² / 2σ² (terms: (y, ω/σ²)), found numerically; and argmax."""
    if not terms:
        return 0.0, math.nan

    def neg(theta):
        return sum(0.5 * w * (yy - theta) ** 2 for yy, w in terms)

    res = optimize.minimize_scalar(neg, bounds=(lo, hi), method="bounded",
                                   options={"xatol": 1e-12 * max(1.0, hi - lo)})
    return -res.fun, res.x


def brute_force(y, sigma, hazard, forgetting, robust=True, tau=None, floor=None):
    """Unpruned possibilistic BOCPD with numerical suprema; returns per-step dicts.

    ``floor``: a run whose log-weight increment would fall below ``-floor`` gets ``-floor``
    and keeps its observations as they were (NormalMean's outlier floor); None: the paper's
    recursion."""
    finite = [v for v in y if not math.isnan(v)]
    lo, hi = min(finite) - 10 * sigma, max(finite) + 10 * sigma
    runs = []  # each: {"start", "log_w", "terms": [(y_j, weight_j / σ²)], "offset"}
    out = []
    for t, yt in enumerate(y):
        # predict: f(θ | r)^ρ (weights times ρ; the normalising offset times ρ too)
        for r in runs:
            r["terms"] = [(yy, forgetting * w) for yy, w in r["terms"]]
            r["offset"] *= forgetting
        new = 0.0 if not runs else math.log(hazard) + max(r["log_w"] for r in runs)
        runs.append({"start": t, "log_w": new, "terms": [], "offset": 0.0})
        if math.isnan(yt):
            c = g = math.nan
        else:
            like = (yt, 1.0 / sigma**2)
            # c = max_r sup_θ w_r f(θ | r) L(θ | y); log f = Σ-terms - offset (sup 1)
            log_c = max(r["log_w"] + _sup_log(r["terms"] + [like], lo, hi)[0] + r["offset"]
                        for r in runs)
            c = math.exp(log_c)
            g = math.sqrt(c) if robust else 1.0
            if robust and tau is not None and g > tau:
                g = 1.0
            for r in runs:
                terms = r["terms"] + [(yt, g / sigma**2)]
                val = _sup_log(terms, lo, hi)[0]
                if floor is not None and val + r["offset"] < -floor:
                    r["log_w"] -= floor  # the run is left as it was
                    continue
                r["log_w"] += val + r["offset"]
                r["terms"] = terms
                r["offset"] = -val  # renormalise f(θ | r) to sup 1
            top = max(r["log_w"] for r in runs)
            for r in runs:
                r["log_w"] -= top
        best = max(runs, key=lambda r: (r["log_w"], -r["start"]))
        mean = _sup_log(best["terms"], lo, hi)[1]
        out.append({"r": t - best["start"], "mean": mean, "c": c, "g": g,
                    "log_w": {t - r["start"]: r["log_w"] for r in runs}})
    return out


def exhaustive_log_possibility(y, sigma, hazard, t):
    """Run-length log possibility at time t, standard version, no forgetting, by enumeration."""
    y = np.asarray(y[: t + 1], dtype=float)

    def seg_log_sup(a, b):
        seg = y[a:b]
        return -0.5 * np.sum((seg - seg.mean()) ** 2) / sigma**2

    best = np.full(t + 1, -np.inf)
    for mask in itertools.product([0, 1], repeat=t):
        starts = [0] + [i + 1 for i, m in enumerate(mask) if m]
        bounds = starts + [t + 1]
        val = len(starts[1:]) * math.log(hazard)
        val += sum(seg_log_sup(a, b) for a, b in itertools.pairwise(bounds))
        r = t - starts[-1]
        best[r] = max(best[r], val)
    return best - best.max()


@pytest.fixture(scope="module")
def well_log():
    return ps.datasets.well_log()


def small_series(seed, n=36, nan_at=()):
    rng = np.random.default_rng(seed)
    level = np.repeat([0.0, 6.0, 2.0], [12, 12, n - 24])
    y = level + rng.normal(0.0, 1.0, n)
    y[7] += 9.0  # an outlier
    y[30 % n] -= 8.0
    for i in nan_at:
        y[i] = np.nan
    return y


# ----------------------------------------------------------------------------------------------
# correctness against the references


@pytest.mark.parametrize("outliers", ["paper", "floor"])
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("robust", "forgetting", "tau", "seed"), [
    (True, 0.9, None, 1), (False, 0.9, None, 2), (True, 1.0, None, 3), (True, 0.8, 0.3, 4),
])
def test_matches_brute_force(engine, robust, forgetting, tau, seed, outliers):
    y = small_series(seed, nan_at=(15,))
    sigma, hazard = 1.3, 0.02
    floor = None if outliers == "paper" else 4.0
    ref = brute_force(y, sigma, hazard, forgetting, robust, tau, floor)
    model = NormalMean(sigma, outliers=outliers, outlier_cost=floor)
    det = ChangepointDetector(model=model, hazard=hazard, forgetting=forgetting, robust=robust,
                              tau=tau, tol=0.0, merge_tol=0.0, engine=engine)
    res = det.fit(y)
    assert res.map_run_length.tolist() == [s["r"] for s in ref]
    np.testing.assert_allclose(res.consistency, [s["c"] for s in ref], rtol=1e-7)
    np.testing.assert_allclose(res.discount, [s["g"] for s in ref], rtol=1e-7)
    np.testing.assert_allclose(res.mean, [s["mean"] for s in ref], rtol=1e-6, atol=1e-6)
    for t in (5, 15, 20, len(y) - 1):
        lw = res.log_run_length_possibility(t)
        expect = np.full(t + 1, -np.inf)
        for r, v in ref[t]["log_w"].items():
            expect[r] = v
        np.testing.assert_allclose(lw, expect, rtol=1e-7, atol=1e-8)
    assert np.isnan(res.consistency[15]) and np.isnan(res.discount[15])


@pytest.mark.parametrize("engine", ENGINES)
def test_standard_matches_exhaustive_enumeration(engine):
    rng = np.random.default_rng(7)
    y = np.concatenate([rng.normal(0, 1, 5), rng.normal(4, 1, 6)])
    sigma, hazard = 1.0, 0.05
    res = ChangepointDetector(model=NormalMean(sigma, outliers="paper"), hazard=hazard,
                              forgetting=1.0, robust=False, tol=0.0, merge_tol=0.0,
                              engine=engine).fit(y)
    for t in range(len(y)):
        expect = exhaustive_log_possibility(y, sigma, hazard, t)
        np.testing.assert_allclose(res.log_run_length_possibility(t), expect,
                                   rtol=1e-9, atol=1e-9)
        assert res.map_run_length[t] == int(np.argmax(expect))
    assert res.discount.tolist() == [1.0] * len(y)


def test_consistency_floor_is_hazard(well_log):
    res = ChangepointDetector(sigma=2500.0, hazard=2.5e-3).fit(well_log)
    assert res.consistency.min() >= 2.5e-3 * (1 - 1e-12)
    assert res.discount.min() >= math.sqrt(2.5e-3) * (1 - 1e-12)
    assert res.consistency.max() <= 1.0


def test_backtrack_by_hand():
    # t=7, r=2: segment [5, 8); t=4, r=1: [3, 5); t=2, r=2: [0, 3)
    assert backtrack([0, 1, 2, 0, 1, 0, 1, 2]).tolist() == [3, 5]
    assert backtrack([0, 1, 2, 3, 1, 0, 1, 2]).tolist() == [3, 5]
    assert backtrack([0, 1, 2, 0, 1, 2, 0, 1]).tolist() == [3, 6]
    # an online reset at t=3 that the later MAP (r=5 at t=5) overrides is not a change point
    assert backtrack([0, 1, 2, 0, 4, 5]).tolist() == []
    assert backtrack([0, 1, 2, 0, 1, 2, 6, 7]).tolist() == []
    assert backtrack([0, 0, 0]).tolist() == [1, 2]
    assert backtrack([]).tolist() == []
    for bad in ([0, -1, 0], [0, 2, 0], [[0, 1]], [0.5, 1.0]):
        with pytest.raises(ValueError, match="map_run_length"):
            backtrack(bad)


# ----------------------------------------------------------------------------------------------
# pruning, engines, streaming, pickling


def _same(a, b):
    for f in ("map_run_length", "mean", "consistency", "discount"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f), err_msg=f)
    np.testing.assert_array_equal(a.changepoints, b.changepoints)


@pytest.mark.parametrize("robust", [True, False])
def test_pruning_changes_nothing_on_well_log(well_log, robust):
    engine = "numba" if HAS_NUMBA else "numpy"
    pruned = ChangepointDetector(sigma=2500.0, robust=robust, engine=engine).fit(well_log)
    full = ChangepointDetector(sigma=2500.0, robust=robust, tol=0.0, merge_tol=0.0,
                               engine=engine).fit(well_log)
    _same(pruned, full)
    assert pruned.n_active.max() < full.n_active.max() == len(well_log)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pruning_changes_nothing_on_simulated(seed):
    y, _, _ = ps.datasets.piecewise_constant(800, n_changes=6, outlier_rate=0.02, seed=seed)
    y[[100, 101, 500]] = np.nan
    for engine in ENGINES:
        pruned = ChangepointDetector(sigma=1.0, hazard=1e-3, tol=1e-12, engine=engine).fit(y)
        full = ChangepointDetector(sigma=1.0, hazard=1e-3, tol=0.0, merge_tol=0.0,
                                   engine=engine).fit(y)
        _same(pruned, full)
        # and the kept part of the run-length possibility is the same
        t = 650
        kept = np.isfinite(pruned.log_run_length_possibility(t))
        np.testing.assert_array_equal(pruned.log_run_length_possibility(t)[kept],
                                      full.log_run_length_possibility(t)[kept])
        # what was dropped was below 1e-12 when dropped; it may drift up a little later,
        # but stays orders of magnitude below the hazard, so it can never matter
        assert np.all(full.run_length_possibility(t)[~kept] < 1e-9)


@pytest.mark.skipif(not HAS_NUMBA, reason="numba not installed")
@pytest.mark.parametrize("kw", [dict(robust=True), dict(robust=False),
                                dict(robust=True, tau=0.2, forgetting=1.0)])
def test_numba_identical_to_numpy(well_log, kw):
    y = well_log.copy()
    y[[50, 51, 2000]] = np.nan
    a = ChangepointDetector(sigma=2500.0, engine="numpy", **kw).fit(y)
    b = ChangepointDetector(sigma=2500.0, engine="numba", **kw).fit(y)
    _same(a, b)
    np.testing.assert_array_equal(a.n_active, b.n_active)


@pytest.mark.parametrize("engine", ENGINES)
def test_update_streaming_equals_fit(engine):
    y, _, _ = ps.datasets.piecewise_constant(400, n_changes=3, seed=5)
    y[17] = np.nan
    ref = ChangepointDetector(sigma=1.0, engine=engine).fit(y)
    det = ChangepointDetector(sigma=1.0, engine=engine)
    infos = [det.update(v) for v in y]
    assert [i.map_run_length for i in infos] == ref.map_run_length.tolist()
    np.testing.assert_array_equal([i.discount for i in infos], ref.discount)
    np.testing.assert_array_equal([i.mean for i in infos], ref.mean)
    assert [i.t for i in infos] == list(range(len(y)))
    _same(det.result(), ref)
    np.testing.assert_array_equal(det.changepoints, ref.changepoints)
    # chunks through extend, no history: same change points in bounded memory
    lean = ChangepointDetector(sigma=1.0, engine=engine, history=False)
    for chunk in np.array_split(y, 7):
        lean.extend(chunk)
    np.testing.assert_array_equal(lean.changepoints, ref.changepoints)
    with pytest.raises(ValueError, match="history=True"):
        lean.result()


def test_pure_step_matches_detector():
    y = small_series(11)
    params = ChangepointParams.make(sigma=1.0, hazard=0.01)
    state = init()
    rs = []
    for v in y:
        new, info = step(state, float(v), params)
        assert new is not state and state.t == info.t  # a new object; the old one untouched
        state = new
        rs.append(info.map_run_length)
    res = ChangepointDetector(sigma=1.0, hazard=0.01, engine="numpy").fit(y)
    assert rs == res.map_run_length.tolist()


@pytest.mark.parametrize("engine", ENGINES)
def test_pickle_interrupt_resume(engine):
    y, _, _ = ps.datasets.piecewise_constant(500, n_changes=4, seed=9)
    ref = ChangepointDetector(sigma=1.0, engine=engine).fit(y)
    det = ChangepointDetector(sigma=1.0, engine=engine)
    det.extend(y[:237])
    blob = pickle.dumps(det)
    del det
    resumed = pickle.loads(blob)
    for v in y[237:]:
        resumed.update(v)
    _same(resumed.result(), ref)


def test_fit_resets_and_sigma_auto(well_log):
    det = ChangepointDetector(model="normal")  # the paper's model, sigma="auto"
    res = det.fit(well_log)
    d = np.diff(well_log)
    expect = stats.median_abs_deviation(d, scale="normal") / math.sqrt(2)
    assert res.sigma_estimated and res.sigma == pytest.approx(expect, rel=1e-12)
    again = det.fit(well_log)
    _same(res, again)
    det.update(well_log[-1])  # continues the same stream with the estimated sigma
    assert det.t == len(well_log) + 1


def test_estimate_sigma_on_simulated_series():
    y, _, _ = ps.datasets.piecewise_constant(20000, n_changes=20, sigma=3.0, outlier_rate=0.02,
                                            seed=4)
    assert estimate_sigma(y) == pytest.approx(3.0, rel=0.05)


def test_pandas_series_and_missing_values():
    pd = pytest.importorskip("pandas")
    y, _, _ = ps.datasets.piecewise_constant(300, n_changes=2, seed=1)
    y[[40, 41, 42]] = np.nan
    a = ChangepointDetector(sigma=1.0).fit(pd.Series(y, index=np.arange(300) * 10))
    b = ChangepointDetector(sigma=1.0).fit(y)
    _same(a, b)
    # a missing value only predicts: the MAP run grows by one and nothing is learnt
    assert a.map_run_length[40] == a.map_run_length[39] + 1
    assert a.mean[40] == a.mean[39]


def test_first_value_missing_gives_nan_mean():
    res = ChangepointDetector(sigma=1.0, engine="numpy").fit([np.nan, 1.0, 1.1])
    assert np.isnan(res.mean[0]) and res.mean[1] == 1.0
    assert res.map_run_length.tolist() == [0, 1, 2]


# ----------------------------------------------------------------------------------------------
# behaviour


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_recovers_simulated_change_points(seed):
    y, cps, out = ps.datasets.piecewise_constant(1000, n_changes=5, outlier_rate=0.02,
                                                 jump=(5.0, 8.0), seed=seed)
    robust = ChangepointDetector(sigma=1.0, hazard=1e-3).fit(y)
    assert robust.changepoints.size == cps.size
    assert np.all(np.abs(robust.changepoints - cps) <= 2)
    # the outliers it reports are mostly true ones (a 3.5σ noise value may be flagged too),
    # and it reports most of them
    hits = np.isin(robust.outliers, np.flatnonzero(out)).sum()
    assert hits >= 0.8 * robust.outliers.size
    assert hits >= 0.7 * out.sum()
    # the paper's standard recursion mistakes outliers for (pairs of) change points; with the
    # evidence floor even the standard recursion does not
    standard = ChangepointDetector(model=NormalMean(1.0, outliers="paper"), hazard=1e-3,
                                   robust=False).fit(y)
    assert standard.changepoints.size > cps.size
    floored = ChangepointDetector(sigma=1.0, hazard=1e-3, robust=False).fit(y)
    assert floored.changepoints.size == cps.size


def test_well_log_rapid_events_are_change_points(well_log):
    """Paper §5.3: four rapid events, near t = 1212, 1426, 2772, 3943, are change points."""
    res = ChangepointDetector(sigma=2500.0, hazard=2.5e-3, forgetting=0.9).fit(well_log)
    for t in (1212, 1426, 2772, 3943):
        assert np.min(np.abs(res.changepoints - t)) <= 3, t
    standard = ChangepointDetector(sigma=2500.0, robust=False).fit(well_log)
    assert standard.changepoints.size > res.changepoints.size


def test_to_dict_is_plain():
    import json

    res = ChangepointDetector(sigma=1.0).fit([0.0, np.nan, 0.1, 5.0, 5.2, 5.1])
    d = json.loads(json.dumps(res.to_dict()))
    assert d["y"][1] is None and d["params"]["sigma"] == 1.0
    assert d["changepoints"] == res.changepoints.tolist()


# ----------------------------------------------------------------------------------------------
# bad input


@pytest.mark.parametrize(("kw", "match"), [
    (dict(sigma=0.0), "sigma must be in"),
    (dict(sigma=-1.0), "sigma must be in"),
    (dict(sigma="big"), "sigma must be 'auto'"),
    (dict(sigma=float("nan")), "sigma must be finite"),
    (dict(hazard=0.0), r"hazard must be in \(0, 1\)"),
    (dict(hazard=1.0), r"hazard must be in \(0, 1\)"),
    (dict(forgetting=0.0), r"forgetting must be in \(0, 1\]"),
    (dict(forgetting=1.5), r"forgetting must be in \(0, 1\]"),
    (dict(tau=0.0), r"tau must be in \(0, 1\]"),
    (dict(tol=1e-2), r"tol must be in \[0, hazard\)"),
    (dict(tol=-1.0), r"tol must be in \[0, hazard\)"),
    (dict(outlier_level=2.0), r"outlier_level must be in \(0, 1\]"),
    (dict(engine="gpu"), "engine must be"),
])
def test_bad_parameters(kw, match):
    with pytest.raises(ValueError, match=match):
        ChangepointDetector(**kw)


@pytest.mark.parametrize(("y", "match"), [
    ([], "empty"),
    ([[1.0, 2.0]], r"shape \(1, 2\): one row.*y.ravel\(\)"),
    ([1.0, np.inf], "infinite value at index 1"),
    (["a", "b"], "numeric .an array of numbers"),
    ([1.0, 1e200], "magnitude"),
])
def test_bad_series(y, match):
    with pytest.raises(ValueError, match=match):
        ChangepointDetector(sigma=1.0).fit(y)


def test_auto_sigma_errors():
    with pytest.raises(ValueError, match="sigma='auto' needs the whole series"):
        ChangepointDetector(model="normal").update(1.0)
    with pytest.raises(ValueError, match="zero median absolute deviation"):
        ChangepointDetector(model="normal").fit(np.ones(50))
    with pytest.raises(ValueError, match="at least 3 observed"):
        ChangepointDetector(model="normal").fit([1.0, np.nan, 2.0])
    # the default models set their priors from the series too, and say how to stream
    with pytest.raises(ValueError, match=r"priors from the whole series.*sigma=<float>"):
        ChangepointDetector().update(1.0)
    # ... but a constant or very short series is no error for them: no change, no outlier
    for y in (np.ones(50), [1.0, np.nan, 2.0]):
        res = ChangepointDetector().fit(y)
        assert res.changepoints.size == 0 and res.outliers.size == 0
    with pytest.raises(ValueError, match="y must be one observation"):
        ChangepointDetector(sigma=1.0).update("x")


def test_run_length_possibility_index_checks():
    res = ChangepointDetector(sigma=1.0).fit([0.0, 1.0, 2.0])
    assert res.run_length_possibility(-1).shape == (3,)
    with pytest.raises(ValueError, match=r"t must be in \[0, 3\)"):
        res.run_length_possibility(3)
    with pytest.raises(ValueError, match="integer"):
        res.run_length_possibility(1.5)


def test_run_length_possibility_is_not_truncated_by_pruning():
    # every run length gets its value, also those the default pruning dropped during the fit
    y = ps.datasets.well_log()[:600]
    pruned = ps.ChangepointDetector(sigma=2500.0, hazard=2.5e-3).fit(y)
    full = ps.ChangepointDetector(sigma=2500.0, hazard=2.5e-3, tol=0.0, merge_tol=0.0).fit(y)
    for t in (100, 599):
        a = pruned.log_run_length_possibility(t)
        assert np.all(np.isfinite(a)) and a.size == t + 1
        np.testing.assert_array_equal(a, full.log_run_length_possibility(t))
        assert np.sum(a < np.log(1e-12)) > 0  # values that pruning had dropped are there
