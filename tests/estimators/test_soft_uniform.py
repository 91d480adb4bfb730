"""Soft-uniform recursion (MATH.md §5) and hard Pareto consistency (MATH.md §4) by brute force."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import optimize

import possibly as ps
from possibly.estimators.soft_uniform import soft_uniform_log_likelihood


def log_soft(theta, y, c):
    """log L̃(θ | y) written out: (y / max(θ, y)) exp(c (θ - max(θ, y)))."""
    top = np.maximum(theta, y)
    return np.log(y / top) + c * (theta - top)


def numerical_max(fun, knots):
    """sup of a 1-D function on (0, inf): bounded searches between and around the knots,
    plus a dense grid; it assumes nothing about where the sup is."""
    knots = np.sort(np.asarray(knots))
    edges = np.concatenate([[knots[0] * 0.5], knots, [knots[-1] * 3.0]])
    best = -np.inf
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        if hi <= lo:
            continue
        res = optimize.minimize_scalar(lambda x: -fun(x), bounds=(lo, hi), method="bounded",
                                       options={"xatol": 1e-10})
        best = max(best, -res.fun, fun(lo), fun(hi))
    grid = np.linspace(edges[0], edges[-1], 20001)
    return max(best, np.max(fun(grid)))


def brute_recursion(y, c):
    """Discounts γ_t = c(y_t) = sup_θ L̃(θ | y_t) f(θ | y_{1:t-1}), by numerical sups."""
    gammas = []
    for t, yt in enumerate(y):
        def prior(theta, t=t):
            total = np.zeros_like(np.asarray(theta, dtype=float))
            for g, yi in zip(gammas, y[:t], strict=True):
                total = total + g * log_soft(theta, yi, c)
            return total

        log_norm = numerical_max(prior, y[: t + 1]) if t else 0.0
        log_cons = numerical_max(lambda th, yt=yt: log_soft(th, yt, c) + prior(th),
                                 y[: t + 1]) - log_norm
        gammas.append(np.exp(min(log_cons, 0.0)))
    return np.array(gammas)


@pytest.mark.parametrize("order", ["increasing", "given"])
@pytest.mark.parametrize("c", [0.5, 3.0])
def test_recursion_equals_brute_force(c, order):
    rng = np.random.default_rng(3)
    y = np.concatenate([rng.uniform(0, 10, size=7), [16.0, 13.0]])
    rng.shuffle(y)
    fit = ps.SoftUniformEstimator(decay=c, order=order).fit(y)
    expected = brute_recursion(fit.observations, c)
    np.testing.assert_allclose(fit.discount, expected, rtol=1e-6, atol=1e-12)
    # the posterior's maximiser, by brute force on a fine grid
    grid = np.sort(np.concatenate([np.linspace(0.5, 25.0, 200001), fit.observations]))
    total = sum(g * log_soft(grid, yi, c) for g, yi in zip(expected, fit.observations,
                                                           strict=True))
    assert float(fit.estimate) == pytest.approx(grid[np.argmax(total)], abs=1e-12)
    # and the normalised log-possibility: max 0, same shape as the brute-force one
    lp = fit.log_possibility(grid)
    assert lp.max() == pytest.approx(0.0, abs=1e-6)
    np.testing.assert_allclose(lp, total - total.max(), atol=1e-6)


def test_standard_soft_update_tends_to_pareto_consistency():
    """With γ = 1 and a steep decay, the soft prior after t - 1 increasing observations is the
    hard Pareto Pā(t - 1, max), so c(y_t) tends to the Pareto consistency."""
    y = np.array([3.0, 5.0, 6.0, 9.0, 9.5, 14.0])
    fit = ps.SoftUniformEstimator(decay=1e7, robust=False).fit(y)
    for t in range(1, len(y)):
        hard = ps.consistency(ps.Pareto(float(t), y[:t].max()), ps.likelihood.uniform(y[t]))
        assert fit.consistency[t] == pytest.approx(float(hard), rel=1e-5)


@pytest.mark.parametrize("alpha, scale, y", [
    (3.0, 10.0, 20.0), (3.0, 10.0, 5.0), (0.5, 2.0, 2.0), (7.0, 1.0, 1.3), (0.0, 0.0, 4.0),
    (2.0, 50.0, 49.0),
])
def test_hard_pareto_consistency_equals_brute_force(alpha, scale, y):
    """sup_θ Pā(θ; α, s) (y / θ) 1[θ >= y], on a fine grid of θ."""
    lo = max(scale, y)
    theta = np.concatenate([[lo], lo * np.exp(np.linspace(0, 5, 100001)), [0.5 * lo]])
    with np.errstate(divide="ignore"):
        prior = np.where(theta >= scale, alpha * np.log(np.where(scale > 0, scale, 1) / theta)
                         if alpha > 0 else 0.0, -np.inf)
        lik = np.where(theta >= y, np.log(y / theta), -np.inf)
    brute = np.exp(np.max(prior + lik))
    got = float(ps.consistency(ps.Pareto(alpha, scale), ps.likelihood.uniform(y)))
    assert got == pytest.approx(brute, rel=1e-10)
    hand = y / scale if y < scale else (scale / y) ** alpha if alpha > 0 else 1.0
    assert got == pytest.approx(hand, rel=1e-12)


def test_hard_uniform_cannot_be_discounted():
    """The indicator survives any power: the robust Pareto posterior moves to an outlier."""
    prior = ps.Pareto(20.0, 100.0)
    res = ps.robust_update(prior, ps.likelihood.uniform(300.0))
    assert float(res.discount) < 1e-9
    assert float(res.posterior.mode) == 300.0


def test_soft_likelihood_shape():
    theta = np.array([50.0, 99.0, 100.0, 200.0])
    got = soft_uniform_log_likelihood(theta, 100.0, decay=2.0)
    np.testing.assert_allclose(got, [-100.0, -2.0, 0.0, np.log(0.5)])


def test_outliers_are_discounted_in_increasing_order():
    rng = np.random.default_rng(1)
    y = np.concatenate([rng.uniform(0, 100, size=60), [180.0, 230.0, 260.0]])
    fit = ps.SoftUniformEstimator(decay=10.0).fit(y)
    assert (fit.discount[-3:] < 1e-6).all()
    assert float(fit.estimate) == pytest.approx(y[:60].max())
    standard = ps.SoftUniformEstimator(decay=10.0, robust=False).fit(y)
    assert float(standard.estimate) == 260.0


def test_batch_and_nan(rng):
    y = rng.uniform(1, 100, size=(3, 15))
    est = ps.SoftUniformEstimator(decay=5.0)
    fit = est.fit(y)
    for i in range(3):
        one = est.fit(y[i])
        np.testing.assert_allclose(one.discount, fit.discount[i], rtol=1e-14)
        np.testing.assert_array_equal(one.mode, fit.mode[i])
    holes = y.copy()
    holes[1, [2, 9]] = np.nan
    fit_h = est.fit(holes)
    clean = est.fit(y[1][~np.isnan(holes[1])])
    np.testing.assert_allclose(fit_h.discount[1, :13], clean.discount, rtol=1e-14)
    assert np.isnan(fit_h.discount[1, 13:]).all() and np.isnan(fit_h.consistency[1, 13:]).all()
    assert fit_h.estimate[1] == clean.estimate
    given = ps.SoftUniformEstimator(decay=5.0, order="given").fit(holes[1])
    clean_given = ps.SoftUniformEstimator(decay=5.0, order="given").fit(
        holes[1][~np.isnan(holes[1])])
    assert given.estimate == clean_given.estimate
    assert np.isnan(given.discount[2]) and np.isnan(given.consistency[9])


@pytest.mark.parametrize("kwargs, name", [
    ({"decay": 0.0}, "decay"), ({"decay": -1.0}, "decay"), ({"decay": np.nan}, "decay"),
    ({"order": "random"}, "order"), ({"tau": 0.0}, "tau"),
])
def test_bad_parameters(kwargs, name):
    with pytest.raises(ValueError, match=name):
        ps.SoftUniformEstimator(**kwargs)


@pytest.mark.parametrize("y", [[1.0, 0.0], [1.0, -2.0], [1.0, np.inf], 5.0])
def test_bad_observations(y):
    with pytest.raises(ValueError, match="y"):
        ps.SoftUniformEstimator().fit(y)


def test_uniform_likelihood_rejects_non_positive():
    with pytest.raises(ValueError, match="y"):
        ps.likelihood.uniform(0.0)
    with pytest.raises(ValueError, match="decay"):
        soft_uniform_log_likelihood(1.0, 1.0, decay=0.0)


def test_pure_step_validates():
    from possibly.estimators.soft_uniform import soft_uniform_init, soft_uniform_step

    state = soft_uniform_init(2)
    with pytest.raises(ValueError, match="decay"):
        soft_uniform_step(state, 1.0, decay=0.0)
    with pytest.raises(ValueError, match="y"):
        soft_uniform_step(state, -1.0, decay=1.0)
    with pytest.raises(ValueError, match="tau"):
        soft_uniform_step(state, 1.0, decay=1.0, tau=2.0)
    with pytest.raises(ValueError, match="capacity"):
        soft_uniform_init(0)


def test_state_grows_past_its_capacity():
    """Streaming past the initial room gives the same numbers as a state made big enough."""
    from possibly.estimators.soft_uniform import soft_uniform_init, soft_uniform_step

    y = [5.0, 3.0, 9.0, 40.0, 7.0]
    small, big = soft_uniform_init(1), soft_uniform_init(8)
    for v in y:
        small, a = soft_uniform_step(small, v, decay=1.0)
        big, b = soft_uniform_step(big, v, decay=1.0)
        assert a.log_consistency == b.log_consistency and a.mode == b.mode
    assert small.points.shape[-1] >= 5


# -- hostile input (issue 14) ------------------------------------------------------------------
@pytest.mark.parametrize("y", [[1.0, 2.0, 1e308], [1e308, 1.0, 2.0, 3.0, 1e300],
                               [1e-308, 2.0, 1e308]])
@pytest.mark.parametrize("order", ["increasing", "given"])
def test_extreme_magnitudes_stay_finite(y, order):
    fit = ps.SoftUniformEstimator(order=order).fit(y)
    assert np.isfinite(fit.mode).all() and np.isfinite(fit.discount).all()
    assert not np.isnan(fit.log_consistency).any()
    # log f may be -inf (a possibility 0 in double precision), never NaN
    assert not np.isnan(fit.log_possibility([50.0, 1e300])).any()


def test_paper_order_at_1e308_discounts_the_huge_value():
    fit = ps.SoftUniformEstimator().fit([1.0, 2.0, 1e308])
    assert fit.estimate == 2.0 and fit.discount[-1] == 0.0


@pytest.mark.parametrize("y", [[], np.zeros((2, 0))])
def test_empty_series_named(y):
    with pytest.raises(ValueError, match="y must hold at least one observation"):
        ps.SoftUniformEstimator().fit(y)


def test_robust_must_be_bool():
    with pytest.raises(TypeError, match="robust"):
        ps.SoftUniformEstimator(robust="no")




@settings(max_examples=60, deadline=None)
@given(arrays(np.float64, st.integers(1, 10),
              elements=st.floats(1e-308, 1.7e308, allow_nan=False, allow_infinity=False)),
       st.sampled_from(["increasing", "given"]), st.floats(1e-3, 1e3))
def test_fuzz_positive_finite_data_give_finite_results(y, order, decay):
    """Issue 14: any positive finite data (up to 1.7e308) give finite modes and discounts."""
    fit = ps.SoftUniformEstimator(decay=decay, order=order).fit(y)
    assert np.isfinite(fit.mode).all() and np.isfinite(fit.discount).all()
    assert not np.isnan(fit.log_consistency).any() and (fit.log_consistency <= 0).all()


def test_huge_values_no_overflow_warning():
    """Sums of logs near -1.8e308 overflow to -inf silently (a possibility 0)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit = ps.SoftUniformEstimator(decay=1.0, order="given").fit([1.7e308, 1.0, 1.0e308])
    assert np.isfinite(fit.mode).all()


# -- the default decay in the data's units; the decay's effect ---------------------------------
def test_default_decay_does_not_collapse_on_small_data():
    """decay = 10 is 10 per unit of θ: on U(0, 3) it collapsed to the smallest observation
    (0.021 in the report). The automatic decay is 12 over the median gap of the data."""
    rng = np.random.default_rng(4)
    for _ in range(5):
        u = rng.uniform(0.0, 3.0, 100)
        est = float(ps.SoftUniformEstimator().fit(u).estimate)
        assert 0.95 * u.max() <= est <= u.max()   # the hard uniform's MLE is u.max()
        assert est == float(ps.SoftUniformEstimator().fit(1e6 * u).estimate) / 1e6


def test_automatic_decay_is_twelve_over_the_median_gap():
    from possibly.estimators.soft_uniform import automatic_decay

    y = np.array([[7.0, 1.0, 2.0, 4.0, np.nan], [5.0, 5.0, 5.0, 5.5, 9.0]])
    # sorted gaps 1, 2, 3 (median 2); 0, 0, 0.5, 3.5: ties, the smallest positive gap 0.5
    np.testing.assert_allclose(automatic_decay(y), [12.0 / 2.0, 12.0 / 0.5])
    # an even number of gaps takes the lower middle one: one outlier's gap does not decide
    assert float(automatic_decay([1.0, 2.0, 1e308])) == 12.0
    auto = ps.SoftUniformEstimator().fit(y)
    np.testing.assert_allclose(auto.decay, [6.0, 24.0])
    fixed = ps.SoftUniformEstimator(decay=24.0).fit(y[1])
    np.testing.assert_array_equal(auto.discount[1], fixed.discount)
    np.testing.assert_array_equal(auto.log_possibility(np.array([[5.0, 8.0], [5.0, 8.0]]))[1],
                                  fixed.log_possibility([5.0, 8.0]))
    with pytest.raises(ValueError, match=r"decay='auto'.*call fit\(y\).*decay=<float>"):
        ps.SoftUniformEstimator().update(1.0)
    with pytest.raises(ValueError, match="decay must be 'auto' or a number > 0"):
        ps.SoftUniformEstimator(decay="hard")


def brute_force_recursion(y_sorted, decay, grid):
    """The robust recursion with every supremum taken on ``grid`` (which does not need to
    contain the observations): consistency, discount, mode."""
    log_f = np.zeros(grid.size)
    discounts = []
    for y in y_sorted:
        log_lik = log_soft(grid, y, decay)
        log_c = min(np.max(log_f + log_lik) - np.max(log_f), 0.0)
        discounts.append(np.exp(log_c))
        log_f = log_f + discounts[-1] * log_lik
    return grid[np.argmax(log_f)], np.array(discounts), log_f


def test_the_estimate_is_not_monotone_in_the_decay_and_that_is_the_recursion():
    """On one U(0, 3) sample the estimate goes up and down with the decay. A brute-force
    recursion (every sup on a geometric grid of 400001 points, relative step 1.5e-5, no use
    of the fact that the sup sits at an observation) gives the same discounts, to the grid's
    resolution, and the same estimates: the non-monotonicity is in the recursion, not in a
    search."""
    rng = np.random.default_rng(1)
    rng.uniform(0.0, 3.0, 100)
    u = np.sort(rng.uniform(0.0, 3.0, 100))
    grid = np.geomspace(0.5 * u[0], 3.5, 400001)
    decays = [2.82, 3.16, 3.55, 15.8, 20.0, 25.1, 44.7]
    estimates = []
    for c in decays:
        fit = ps.SoftUniformEstimator(decay=c).fit(u)
        mode, disc, _ = brute_force_recursion(u, c, grid)
        np.testing.assert_allclose(fit.discount, disc, rtol=0, atol=5e-3)  # errors compound
        # the grid's mode is within a grid step of the observation the code returns
        assert abs(float(fit.estimate) / mode - 1) <= 2e-5
        estimates.append(float(fit.estimate))
    steps = np.diff(estimates)
    assert (steps < -0.5).any() and (steps > 0.5).any()


def test_with_the_discounts_fixed_the_mode_grows_with_the_decay():
    """Why the estimate can fall as the decay grows: for fixed weights γ_i the log posterior
    Σ γ_i (c (θ - θ ∨ y_i) - log(θ ∨ y_i)) has increasing differences in (θ, c), so its
    argmax cannot decrease with c; only the discounts, which depend on c through the
    recursion, move it down."""
    rng = np.random.default_rng(1)
    rng.uniform(0.0, 3.0, 100)
    u = np.sort(rng.uniform(0.0, 3.0, 100))
    weights = ps.SoftUniformEstimator(decay=3.55).fit(u).discount
    top = np.maximum(u[:, None], u[None, :])              # θ at the observations (rows)
    modes = []
    for c in np.geomspace(1.0, 100.0, 60):
        log_f = (weights * (c * (u[:, None] - top) - np.log(top))).sum(-1)
        modes.append(u[np.argmax(log_f)])
    assert np.all(np.diff(modes) >= 0) and modes[-1] > modes[0]
