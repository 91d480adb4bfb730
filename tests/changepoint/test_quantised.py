"""Metrics as they are recorded: the resolution floor of the change-point priors and scales on
quantised series (plateaus of identical values, a MAD of 0), counts and idle streams."""

from __future__ import annotations

import math

import numpy as np
import pytest

import possibly as ps
from possibly import datasets
from possibly.changepoint import (
    NormalMean,
    PolynomialTrend,
    SegmentPrior,
    automatic_prior,
    automatic_vector_prior,
    estimate_sigma,
    model_family,
    quantisation_step,
)
from possibly.changepoint.detector import numba_available
from possibly.changepoint.models import seasonal
from possibly.changepoint.models.seasonal import SEASONAL_KERNEL, SeasonalTrend
from possibly.changepoint.models.trend import (
    KERNEL,
    OUTLIER_LOG_CONSISTENCY,
    observe,
    pack_runs,
    run_log_consistency,
    unpack_runs,
)
from possibly.changepoint.models.trend import model_family as trend_family
from possibly.changepoint.models.vector import automatic_vector_noise

SQRT12 = math.sqrt(12.0)


def plateau(n: int = 2000, seed: int = 3) -> np.ndarray:
    """A CPU-like idle plateau in whole percent: 3, one step up or down in 20% of the records
    (more than half the values identical: a MAD of 0)."""
    rng = np.random.default_rng(seed)
    return 3.0 + rng.choice([-1.0, 0.0, 1.0], n, p=[0.1, 0.8, 0.1])


def streamed(y: np.ndarray, warm_up: int, engine: str = "auto",
             resolution: float | None = None) -> ps.ChangepointResult:
    prior = automatic_prior(y[:warm_up], resolution=resolution) \
        if resolution is not None else automatic_prior(y[:warm_up])
    det = ps.ChangepointDetector(model=model_family(prior=prior), engine=engine)
    det.extend(y)
    return det.result()


# -- the step and the prior, by hand ------------------------------------------------------------


def test_quantisation_step_hand_cases():
    assert quantisation_step([3.0, 3.0, 4.0, 3.0, 2.0, 3.0]) == 1.0
    assert quantisation_step([0.25, 0.5, 0.5, 1.0]) == 0.25
    assert quantisation_step([0.5, 0.5, 1.5, 2.0, 4.0]) == 0.5  # gaps 1, 0.5, 2: the least
    assert quantisation_step([1.0, 1.0, np.nan, 2.0, np.inf, 3.0]) == 1.0  # not finite: ignored
    # decimal values: 0.1 + 0.2 and 0.3 differ by 5.6e-17, which is one level, not the step
    assert quantisation_step([0.1 + 0.2, 0.3, 0.5, 0.7]) == pytest.approx(0.2, rel=1e-12)
    assert quantisation_step([0.31, 1.7, 2.2, 5.0]) == 0.0  # no value repeats: continuous
    assert quantisation_step([3.0, 3.0, 3.0, 4.0]) == 0.0  # two levels: no step
    assert quantisation_step([7.0] * 5) == 0.0
    assert quantisation_step([]) == 0.0


def test_spikes_do_not_set_the_step():
    # whole units 0..6 and spikes far beyond the range: the step stays 1, whatever the spikes
    y = np.arange(100) % 7.0
    for spikes in ([1e10], [1e10, 2e10], [1e12, 2e12], [-1e10, 1e10], [1e10, 1e10, 3e10]):
        assert quantisation_step(np.r_[y, spikes]) == 1.0, spikes
        assert automatic_prior(np.r_[y, spikes]).resolution == 1.0, spikes
    # two levels and spikes: the step is the gap between the levels
    assert quantisation_step(np.r_[np.full(50, 3.0), np.full(50, 4.0), 1e10, 2e10]) == 1.0
    # (a single level with spikes is ambiguous: [3, ..., 3, 1e10, 2e10] is [3, ..., 3, 4, 5]
    # up to y -> a y + b)


def test_spikes_do_not_erase_a_level_shift():
    # whole numbers, a shift of +8 at 300 (4 sd), two spikes: the shift is found with or
    # without them, and the spikes are outliers
    rng = np.random.default_rng(3)
    y = np.round(rng.normal(20.0, 2.0, 600)) + np.r_[np.zeros(300), np.full(300, 8.0)]
    clean = ps.ChangepointDetector().fit(y)
    assert clean.changepoints.tolist() == [300]
    y[[100, 450]] = [1e10, 2e10]
    res = ps.ChangepointDetector().fit(y)
    assert res.changepoints.tolist() == [300]
    assert {100, 450} <= set(np.asarray(res.outliers).tolist())


@pytest.mark.parametrize("a, b", [(3.0, 7.0), (1e-3, -2.0), (250.0, 1e4)])
def test_step_and_prior_are_equivariant(a, b):
    y = plateau(500)
    ref = automatic_prior(y)
    assert quantisation_step(a * y + b) == pytest.approx(a * quantisation_step(y), rel=1e-9)
    res = automatic_prior(a * y + b)
    assert res.loc == pytest.approx(a * ref.loc + b, rel=1e-12)
    assert res.scale == pytest.approx(a * ref.scale, rel=1e-9)
    assert res.resolution == pytest.approx(a * ref.resolution, rel=1e-9)
    assert res.noise_floor == pytest.approx(ref.noise_floor, rel=1e-9)


def test_automatic_prior_floor_by_hand():
    # MAD 0; the standard deviation √(2/40) is below the rounding sd 1/√12: the floor binds
    prior = automatic_prior([3.0] * 38 + [2.0, 4.0])
    assert (prior.loc, prior.horizon, prior.resolution) == (3.0, 40.0, 1.0)
    assert prior.scale == pytest.approx(1.0 / SQRT12, rel=1e-15)
    assert prior.noise_floor == pytest.approx(1.0, rel=1e-12)
    # MAD 1 (deviations 2, 1, 1, 0, 0, 0, 1, 1, 2): the scale 1.4826 stays, the floor is kept
    prior = automatic_prior([1.0, 2.0, 2.0, 3.0, 3.0, 3.0, 4.0, 4.0, 5.0])
    assert (prior.loc, prior.scale, prior.resolution) == (3.0, 1.4826, 1.0)
    assert prior.noise_floor == pytest.approx(1.0 / (12.0 * 1.4826 ** 2), rel=1e-12)


def test_series_that_do_not_repeat_keep_the_prior():
    y = np.random.default_rng(0).normal(5.0, 2.0, 301)
    med = float(np.median(y))
    assert automatic_prior(y) == SegmentPrior(med, 1.4826 * float(np.median(np.abs(y - med))),
                                              301.0)
    assert automatic_prior(y).noise_floor == 0.0


def test_prior_resolution_is_checked():
    with pytest.raises(ValueError, match="resolution"):
        SegmentPrior(0.0, 1.0, 10.0, -1.0)
    with pytest.raises(ValueError, match="prior.resolution"):
        SegmentPrior(0.0, 1.0, 10.0, math.nan)
    for bad in (-0.5, math.inf):
        with pytest.raises(ValueError, match="resolution"):
            automatic_prior([1.0, 2.0, 3.0], resolution=bad)
    for bad in ("1", "x", None.__class__):
        with pytest.raises(ValueError, match=r"resolution must be a finite number >= 0"):
            automatic_prior([1.0, 2.0, 3.0], resolution=bad)
    # a known step: kept as given, and the scale floored by it
    prior = automatic_prior([5.0] * 30 + [4.0], resolution=1.0)
    assert prior.resolution == 1.0 and prior.scale == pytest.approx(1.0 / SQRT12, rel=1e-15)


def test_estimate_sigma_floor_by_hand():
    # 12 differences, 8 of them 0: their MAD is 0; the rounding sd of a step 0.5 is 0.5 / √12
    y = 0.5 * np.array([3.0, 3, 3, 3, 2, 3, 3, 3, 3, 4, 3, 3, 3])
    assert estimate_sigma(y) == pytest.approx(0.5 / SQRT12, rel=1e-15)
    # not quantised: 1.4826 · MAD(first differences) / √2, unchanged
    z = np.random.default_rng(1).normal(0.0, 3.0, 400)
    d = np.diff(z)
    mad = np.median(np.abs(d - np.median(d)))
    assert estimate_sigma(z) == 1.482602218505602 * mad / math.sqrt(2.0)
    with pytest.raises(ValueError, match="sigma"):
        estimate_sigma([3.0] * 20 + [4.0])  # two levels: no step, and a MAD of 0


def test_vector_prior_floor_by_hand():
    rng = np.random.default_rng(2)
    quantised = np.r_[np.full(38, 3.0), 2.0, 4.0]
    continuous = rng.normal(0.0, 1.0, 40)
    loc, scale = automatic_vector_prior(np.c_[quantised, continuous])
    assert loc[0] == 3.0 and scale[0] == pytest.approx(1.0 / SQRT12, rel=1e-15)
    med = np.median(continuous)
    assert scale[1] == 1.4826 * np.median(np.abs(continuous - med))
    # the within-segment noise of the quantised component: its MAD of differences is 0, the
    # rounding sd is its scale (ratio 1); the continuous one's ratio is about 1 (i.i.d.)
    y = np.c_[np.r_[np.full(400, 3.0), np.tile([2.0, 4.0], 10)], rng.normal(size=420),
              rng.normal(size=420)]
    assert 0.5 < automatic_vector_noise(y) <= 1.0


# -- the runs' noise floor ----------------------------------------------------------------------


def test_run_noise_variance_stays_at_the_rounding_variance():
    # step 3 in units of the scale: rounding variance 9/12 > the prior's 0.5², so b₀ = a₀ · 0.75
    model = PolynomialTrend(0, prior=SegmentPrior(0.0, 1.0, 100.0, 3.0))
    runs = model.new_runs(1)
    assert runs["b"][0] == pytest.approx(0.75, rel=1e-15)
    for _ in range(4):  # identical observations: nothing adds to b; a = 1 + 4/2 = 3
        _, runs, _ = observe(runs, 0.0, 1.0, True, 1e9, model.prior.noise_floor)
    assert runs["a"][0] == 3.0 and runs["b"][0] == pytest.approx(3.0 * 0.75, rel=1e-15)
    # without the floor b would stay 0.75 (noise variance 0.25: it shrinks as 1/a)
    plain = PolynomialTrend(0, prior=SegmentPrior(0.0, 1.0, 100.0))
    bare = plain.new_runs(1)
    for _ in range(4):
        _, bare, _ = observe(bare, 0.0, 1.0, True, 1e9)
    assert bare["b"][0] == 0.25


def test_kernel_update_has_the_numpy_floor():
    model = PolynomialTrend(1, prior=SegmentPrior(2.0, 1.5, 50.0, 1.0))
    kernel = model.compiled_kernel()
    assert kernel.params[16] == pytest.approx((1.0 / SQRT12 / 1.5) ** 2, rel=1e-15)
    runs = model.new_runs(1)
    rows = pack_runs(runs)
    work = np.zeros(12)
    for i, y in enumerate([2.0, 2.0, 2.0, 3.0, 2.0, 2.0]):
        if i:
            runs = model.forget(runs, 1.0)
            KERNEL.forget(kernel.params, rows, 0, 1.0, work)
        z = model._z(y)
        _, runs, _ = observe(runs, z, 1.0, True, model.outlier_cost, model.prior.noise_floor)
        KERNEL.update(kernel.params, rows, 0, z, 1.0, work)
        back = unpack_runs(rows, 2)
        for key in ("m", "cov", "a", "b"):
            np.testing.assert_allclose(back[key], runs[key], rtol=1e-13, atol=1e-300)


def test_one_step_off_a_plateau_is_not_an_outlier():
    # after n identical values the run's noise variance is the rounding variance δ²/12, so a
    # value one step away is √12 noise sd off: log consistency → -12/2 = -6 as n grows
    model = PolynomialTrend(0, prior=SegmentPrior(0.0, 1.0, 1000.0, 1.0))
    runs = model.new_runs(1)
    for _ in range(1000):
        _, runs, _ = observe(runs, 0.0, 1.0, True, model.outlier_cost, model.prior.noise_floor)
    lc = float(run_log_consistency(runs, 1.0)[0])
    assert lc == pytest.approx(-6.0, rel=0.01)
    assert lc > OUTLIER_LOG_CONSISTENCY


# -- the detector on plateaus and idle streams --------------------------------------------------


def test_plateau_gives_no_flood_of_outliers():
    y = plateau()
    for res in (streamed(y, 250), ps.ChangepointDetector().fit(y)):
        assert res.outliers.size <= 0.01 * y.size  # no step of ±1 is an outlier
        assert res.changepoints.size <= 2


def test_cpu_bursts_flag_the_jobs_not_the_idle_steps():
    series, windows = datasets.cpu_bursts(seed=0)  # five days of minutes
    y = series.values
    res = streamed(y, len(y) // 8)
    idle = np.median(y)
    assert np.all(np.abs(y[res.outliers] - idle) > 5.0)  # job spikes only, never ±1
    for a, _ in windows:  # the sustained bursts are changes
        assert np.min(np.abs(res.changepoints - a)) <= 5


@pytest.mark.parametrize("a, b", [(0.01, 0.0), (4.0, -50.0)])
def test_quantised_changes_are_invariant(a, b):
    series, _ = datasets.cpu_bursts(2880, seed=1)
    y = series.values
    for fit in (lambda v: streamed(v, 360), lambda v: ps.ChangepointDetector().fit(v)):
        ref, res = fit(y), fit(a * y + b)
        np.testing.assert_array_equal(res.changepoints, ref.changepoints)
        np.testing.assert_array_equal(res.outliers, ref.outliers)


def test_constant_stream_with_rare_blips_has_no_change_and_no_flood():
    rng = np.random.default_rng(4)
    y = np.full(3000, 5.0)
    blips = rng.choice(3000, 40, replace=False)
    y[blips] += rng.choice([-1.0, 1.0], 40)  # single steps, 1.3% of the records
    for res in (ps.ChangepointDetector().fit(y), streamed(y, 400, resolution=1.0)):
        assert res.changepoints.size == 0
        assert res.outliers.size == 0
    # this warm-up holds two levels only (5 and 4): no step can be read from it
    assert automatic_prior(y[:400]).resolution == 0.0
    assert np.unique(y[:400]).size == 2
    res = ps.ChangepointDetector().fit(np.full(500, 2.0))
    assert res.changepoints.size == 0 and res.outliers.size == 0


def _finite_outputs(res: ps.ChangepointResult) -> None:
    observed = ~np.isnan(res.y)
    for name in ("mean", "log_consistency", "discount", "change_possibility", "outlier_score",
                 "consistency"):
        assert np.isfinite(np.asarray(getattr(res, name))[observed]).all(), name
    fit, low, high = res.segment_fit()
    if all(isinstance(m, PolynomialTrend) for m in res.params.models):
        assert np.isfinite(fit).all() and np.isfinite(low).all() and np.isfinite(high).all()
    assert np.isfinite(res.segment_medians()).all()


@pytest.mark.parametrize("tail", [[4.0], [-1e9], [4.0, 3.0, 2.0, 3.0], [np.nan, 3.5]])
@pytest.mark.parametrize("engine", ["numpy", "numba"])
def test_identical_values_then_another_stay_finite(tail, engine):
    if engine == "numba":
        pytest.importorskip("numba")
    y = np.r_[np.full(300, 3.0), tail]
    res = ps.ChangepointDetector(engine=engine).fit(y)
    _finite_outputs(res)
    assert res.changepoints.size == 0
    det = ps.ChangepointDetector(model=model_family(prior=automatic_prior(y[:100])),
                                 engine=engine)
    for v in y:
        info = det.update(v)
        assert math.isnan(v) or (math.isfinite(info.discount)
                                 and math.isfinite(info.log_consistency))
    _finite_outputs(det.result())
    if np.unique(y[~np.isnan(y)]).size >= 3:  # a step: the paper's model estimates σ from it
        _finite_outputs(ps.ChangepointDetector(model=NormalMean(), engine=engine).fit(y))


def test_compiled_and_numpy_agree_on_a_plateau():
    pytest.importorskip("numba")
    series, _ = datasets.cpu_bursts(2880, seed=2)
    y = series.values.copy()
    y[[100, 101, 900]] = np.nan
    models = model_family(prior=automatic_prior(y[:360]))
    ref = ps.ChangepointDetector(model=models, engine="numpy").fit(y)
    res = ps.ChangepointDetector(model=models, engine="numba").fit(y)
    for name in ("changepoints", "n_active", "outliers"):
        np.testing.assert_array_equal(getattr(res, name), getattr(ref, name))
    for name in ("discount", "log_consistency", "mean", "log_online_change_possibility"):
        np.testing.assert_allclose(getattr(res, name), getattr(ref, name), rtol=1e-9,
                                   atol=1e-12, equal_nan=True)
    # the hindsight outliers: compiled and numpy on the same segments
    model = models[0]
    z = (y - model.prior.loc) / model.prior.scale
    lengths = np.array([1000, 1880])
    lc_numpy = model.hindsight_segments(z, np.ones(y.size), lengths, compiled=False)
    lc_numba = model.hindsight_segments(z, np.ones(y.size), lengths, compiled=True)
    np.testing.assert_allclose(lc_numba, lc_numpy, rtol=1e-9, atol=1e-9, equal_nan=True)


# -- the seasonal runs: the same floor ---------------------------------------------------------

needs_numba = pytest.mark.skipif(not numba_available(), reason="numba is not installed")


def plateau_with_blips(n: int = 3000, blips: int = 40, seed: int = 4) -> np.ndarray:
    """An idle stream at 5 with rare single values one step off (1.3% of the records): a noise
    variance below the rounding variance 1/12, so the floor binds."""
    rng = np.random.default_rng(seed)
    y = np.full(n, 5.0)
    at = rng.choice(n, blips, replace=False)
    y[at] += rng.choice([-1.0, 1.0], blips)
    return y


def test_seasonal_runs_hold_the_rounding_variance_by_hand():
    # step 3 in units of the scale: rounding variance 9/12 = 0.75 > the prior's 0.5², so
    # b₀ = a₀ · 0.75 and the prior covariance (level 2², six cycle coefficients 1², relative
    # to the noise variance) is divided by 0.75
    model = SeasonalTrend(0, period=24, prior=SegmentPrior(0.0, 1.0, 100.0, 3.0))
    runs = model.new_runs(1)
    assert runs["a"][0] == 1.0 and runs["b"][0] == pytest.approx(0.75, rel=1e-15)
    np.testing.assert_allclose(np.diag(runs["cov"][0]), np.r_[4.0, np.ones(6)] / 0.75,
                               rtol=1e-15)
    kernel = model.compiled_kernel()
    rows = np.zeros((1, SEASONAL_KERNEL.width))
    SEASONAL_KERNEL.new_run(kernel.params, rows, 0)
    np.testing.assert_array_equal(rows, seasonal.pack_runs(runs))
    work = np.zeros(kernel.work_size)
    for i in range(4):  # identical observations at the prediction 0: nothing adds to b
        if i:
            runs = model.forget(runs, 1.0)
            SEASONAL_KERNEL.forget(kernel.params, rows, 0, 1.0, work)
        runs = model.update(model.prepare(runs, 0.0), 1.0)[1]
        SEASONAL_KERNEL.update(kernel.params, rows, 0, 0.0, 1.0, work)
    # a = 1 + 4/2 = 3 and b = 3 · 0.75 (without the floor b would stay 0.75)
    assert runs["a"][0] == 3.0 and runs["b"][0] == pytest.approx(2.25, rel=1e-15)
    back = seasonal.unpack_runs(rows, model.state_size)
    assert back["a"][0] == 3.0 and back["b"][0] == pytest.approx(2.25, rel=1e-15)


def test_seasonal_kernel_update_has_the_numpy_floor():
    model = SeasonalTrend(1, period=12, harmonics=2, prior=SegmentPrior(2.0, 1.5, 50.0, 1.0))
    floor = (1.0 / SQRT12 / 1.5) ** 2
    assert model.prior.noise_floor == pytest.approx(floor, rel=1e-15)
    kernel = model.compiled_kernel()
    runs = model.new_runs(1)
    rows = seasonal.pack_runs(runs)
    work = np.zeros(kernel.work_size)
    # two steps off, then a plateau long enough for b / a to reach the floor
    values = [2.0, 2.0, 2.0, 3.0, 2.0, 2.0, 2.0, 2.0, 1.0] + [2.0] * 60
    for i, y in enumerate(values):
        if i:
            runs = model.forget(runs, 1.0)
            SEASONAL_KERNEL.forget(kernel.params, rows, 0, 1.0, work)
        runs = model.update(model.prepare(runs, y), 1.0)[1]
        SEASONAL_KERNEL.update(kernel.params, rows, 0, model._z(y), 1.0, work)
        assert runs["b"][0] >= runs["a"][0] * floor * (1.0 - 1e-15)
        back = seasonal.unpack_runs(rows, model.state_size)
        for key in ("m", "cov", "a", "b"):
            np.testing.assert_allclose(back[key], runs[key], rtol=1e-13, atol=1e-300)
    assert runs["b"][0] == pytest.approx(runs["a"][0] * floor, rel=1e-12)  # the floor binds


def test_seasonal_outlier_replay_has_the_floor():
    # scale δ/√12 (the rounding floor): the floor is 1 and the blip one step away is r² = 12;
    # after 200 identical values (a ≈ 101, b = a) its evidence falls by about
    # 101.5 log(1 + 6 / 101) ≈ 5.8 < outlier_cost ≈ 5.99: kept; three steps away (r² = 108)
    # it falls by far more and is an outlier. Without the floor b / a ≈ 0.0025 and the blip
    # one step away is far too.
    y = np.r_[np.full(200, 3.0), 4.0, np.full(50, 3.0), 6.0, np.full(20, 3.0)]
    model = SeasonalTrend(0, period=24, prior=SegmentPrior(3.0, 1.0 / SQRT12, 271.0, 1.0))
    assert model.prior.noise_floor == pytest.approx(1.0, rel=1e-12)
    assert np.flatnonzero(model.outlying(y, np.ones(y.size))).tolist() == [251]


@pytest.mark.parametrize("engine", ["numpy", pytest.param("numba", marks=needs_numba)])
def test_plateau_with_blips_and_a_period(engine):
    y = plateau_with_blips()
    y[[700, 701, 1900]] = np.nan
    fit = ps.ChangepointDetector(model=seasonal.model_family(period=24), engine=engine).fit(y)
    prior = automatic_prior(y[:400], resolution=1.0)
    det = ps.ChangepointDetector(model=seasonal.model_family(period=24, prior=prior),
                                 engine=engine)
    det.extend(y)
    for res in (fit, det.result()):
        _finite_outputs(res)
        assert res.changepoints.size == 0
        assert res.outliers.size == 0  # the default family's count on the same stream


@needs_numba
def test_seasonal_engines_agree_on_a_plateau():
    y = plateau_with_blips(2000, 30, seed=5)
    y[[100, 101, 900]] = np.nan
    y[1500:1504] = [9.0, 9.0, 5.0, 1.0]
    models = seasonal.model_family(period=(24.0, 60.0), prior=automatic_prior(y[:300]))
    assert models[0].prior.noise_floor > 0.0
    ref = ps.ChangepointDetector(model=models, engine="numpy").fit(y)
    res = ps.ChangepointDetector(model=models, engine="numba").fit(y)
    for name in ("changepoints", "n_active", "outliers", "map_model", "map_run_length"):
        np.testing.assert_array_equal(getattr(res, name), getattr(ref, name))
    for name in ("discount", "log_consistency", "mean", "log_online_change_possibility"):
        np.testing.assert_allclose(getattr(res, name), getattr(ref, name), rtol=1e-9,
                                   atol=1e-12, equal_nan=True)
    assert ref.outliers.size <= 4  # the burst at 1500, never the single steps


def test_plain_seasonal_members_are_the_trend_models_on_a_plateau():
    """model_family(period=P) runs the level and the trends as SeasonalTrend without a cycle:
    on a quantised stream they must follow the default family's runs (same floor)."""
    y = plateau_with_blips(1500, 20, seed=6)
    ref = ps.ChangepointDetector(model=trend_family(), engine="numpy").fit(y)
    res = ps.ChangepointDetector(model=[SeasonalTrend(d) for d in (0, 1, 2)],
                                 engine="numpy").fit(y)
    for name in ("changepoints", "map_model", "map_run_length"):
        np.testing.assert_array_equal(getattr(res, name), getattr(ref, name))
    for name in ("discount", "log_consistency", "mean"):
        np.testing.assert_allclose(getattr(res, name), getattr(ref, name), rtol=1e-9,
                                   atol=1e-12)


@pytest.mark.parametrize("a, b", [(0.01, 0.0), (4.0, -50.0)])
def test_quantised_seasonal_results_are_invariant(a, b):
    y = plateau_with_blips(2000, 30, seed=7)
    y[800:860] += 2.0  # a level shift of two steps
    models = seasonal.model_family(period=24)
    ref = ps.ChangepointDetector(model=models).fit(y)
    res = ps.ChangepointDetector(model=models).fit(a * y + b)
    np.testing.assert_array_equal(res.changepoints, ref.changepoints)
    np.testing.assert_array_equal(res.outliers, ref.outliers)
    np.testing.assert_allclose(res.discount, ref.discount, rtol=1e-9, atol=1e-12)
    assert ref.changepoints.tolist() == [800, 860] and ref.outliers.size == 0


def test_count_stream_with_its_inferred_period():
    """Hourly counts (step 1) with the period read from the warm-up's time stamps: finite
    outputs, and the engines agree."""
    series, windows = datasets.count_surge(seed=0)
    y = series.values
    period = ps.changepoint.infer_period(y[:672], series.index[:672])
    assert period == (24.0,)
    models = seasonal.model_family(period=period, prior=automatic_prior(y[:672]))
    assert models[0].prior.resolution == 1.0
    engines = ["numpy"] + (["numba"] if numba_available() else [])
    fits = [ps.ChangepointDetector(model=models, engine=e).fit(y) for e in engines]
    for res in fits:
        _finite_outputs(res)
        assert all(np.min(np.abs(res.changepoints - a)) <= 5 for a, _ in windows)
    for res in fits[1:]:
        np.testing.assert_array_equal(res.changepoints, fits[0].changepoints)
        np.testing.assert_allclose(res.discount, fits[0].discount, rtol=1e-9)


@pytest.mark.parametrize("rho", [1.0, 0.97])
def test_kernel_keeps_lgamma_of_a_for_the_next_update(rho):
    """The trend kernel keeps lgamma(a) of each run from one update to the next: the run's
    rows equal bit for bit those of a kernel that computes it afresh at every update (the
    cell reset to NaN), and the kept value is lgamma of the run's a."""
    rng = np.random.default_rng(4)
    model = PolynomialTrend(2, prior=SegmentPrior(0.0, 1.0, 50.0))
    params = model.compiled_kernel().params
    kept, fresh = pack_runs(model.new_runs(1)), pack_runs(model.new_runs(1))
    work = np.zeros(12)
    for i, y in enumerate(rng.standard_t(3, size=60) * 2.0):
        if i:
            KERNEL.forget(params, kept, 0, rho, work)
            KERNEL.forget(params, fresh, 0, rho, work)
        g = 1.0 if i % 7 else 0.4  # discounted records too
        fresh[0, 15] = np.nan
        assert KERNEL.update(params, kept, 0, y, g, work) == KERNEL.update(params, fresh, 0,
                                                                          y, g, work)
        np.testing.assert_array_equal(kept[0, :15], fresh[0, :15])
        assert kept[0, 15] == math.lgamma(kept[0, 12])
