"""The robust start (possibly.estimators.exchangeable_start): a maxitive mixture of starts.

References are plain robust recursions run by hand on permuted orders with the checked
``ps.robust_update``: hypothesis j must be exactly the recursion on (y_j, y_1, ..., y_{j-1},
y_{j+1}, ...).
"""

from typing import NamedTuple

import numpy as np
import pytest

import possibly as ps
from possibly._tree import tree_select, tree_take
from possibly.estimators.exchangeable_start import start_init, start_step

SD = 2.0


def step(post, y):
    """Robust normal mean with known sd, NaN = predict only, log c in log space."""
    missing = np.isnan(y)
    lik = ps.likelihood.normal(np.where(missing, 0.0, y), sd=SD)
    log_c = ps.log_consistency(post, lik, validate=False)
    rho = ps.discount(log_c, 1.0, 0.1, validate=False)
    new = ps.combine(post, lik.power(rho, validate=False), validate=False)
    nan = np.where(missing, np.nan, 0.0)
    return tree_select(missing, post, new), log_c + nan, {"discount": rho + nan}


def plain(y):
    """The paper's recursion with the checked algebra, one observation at a time."""
    post = ps.Normal.uninformative()
    for v in y:
        post = ps.robust_update(post, ps.likelihood.normal(v, sd=SD), tau=0.1).posterior
    return post


def run(y, size=3, **kwargs):
    y = np.asarray(y, dtype=float)
    state = start_init(ps.Normal.uninformative(y.shape[:-1]), y.shape[:-1], size)
    out = []
    for t in range(y.shape[-1]):
        state, log_c, extras = start_step(state, y[..., t], step, **kwargs)
        out.append((log_c, extras["discount"]))
    return state, out


def test_size_one_is_the_plain_recursion(rng):
    y = np.r_[30.0, rng.normal(2.0, SD, size=20)]
    state, _ = run(y, size=1)
    assert float(state.current.mean) == pytest.approx(float(plain(y).mean), rel=1e-12)
    assert float(state.current.mean) > 10                 # captured by the outlier first


def test_outlier_first_is_recovered_and_is_a_permuted_plain_run(rng):
    y = np.r_[30.0, rng.normal(2.0, SD, size=20)]
    state, out = run(y)
    assert bool(state.collapsed)
    candidates = [plain(np.r_[y[j], y[:j], y[j + 1:]]).mean for j in (1, 2)]
    assert min(abs(float(state.current.mean) - float(c)) for c in candidates) < 1e-12
    assert abs(float(state.current.mean) - y[1:].mean()) < 0.5
    # the mixture's consistency of each observation is max_j w_j c_j <= 1, finite
    log_c = np.array([o[0] for o in out])
    assert np.isfinite(log_c).all() and (log_c <= 0).all()


def test_missing_values_are_not_candidates(rng):
    y = np.r_[30.0, rng.normal(2.0, SD, size=15)]
    holes = np.r_[np.nan, y[:3], np.nan, y[3:]]
    a, out_a = run(y)
    b, out_b = run(holes)
    assert float(a.current.mean) == float(b.current.mean)
    assert np.isnan(out_b[0][0]) and np.isnan(out_b[4][1])


def test_batch_equals_loop(rng):
    y = np.stack([np.r_[30.0, rng.normal(2.0, SD, size=12)],
                  np.r_[1.0, -40.0, rng.normal(2.0, SD, size=11)],
                  np.r_[np.nan, np.nan, rng.normal(2.0, SD, size=11)]])
    both, out = run(y)
    for i in range(3):
        one, out_i = run(y[i])
        assert float(one.current.mean) == pytest.approx(float(both.current.mean[i]),
                                                        rel=1e-12)
        np.testing.assert_allclose([o[0] for o in out_i], [o[0][i] for o in out],
                                   rtol=1e-12, equal_nan=True)


def test_collapse_drops_the_hypothesis_axis(rng):
    y = np.r_[30.0, rng.normal(2.0, SD, size=30)]
    state, _ = run(y)
    assert state.log_weight.shape == (1,) and state.hypotheses.batch_shape == (1,)


def test_score_and_horizon(rng):
    """A score replaces the accumulated consistencies; the horizon forces the collapse."""
    y = np.r_[30.0, rng.normal(2.0, SD, size=10)]

    def score(hyp, history):            # the capped log-likelihood at each E*
        d2 = (history[..., None, :] - hyp.mean[..., None]) ** 2 / SD**2
        return np.where(np.isnan(d2), 0.0, np.maximum(-0.5 * d2, np.log(0.01))).sum(-1)

    state = start_init(ps.Normal.uninformative(), (), 3, horizon=4)
    for t, v in enumerate(y):
        state, _, _ = start_step(state, np.asarray(v), step, score=score, ratio=1e-300)
        assert bool(state.collapsed) == (t >= 3)
    assert abs(float(state.current.mean) - y[1:].mean()) < 0.5


class Pair(NamedTuple):
    a: np.ndarray
    b: np.ndarray


def test_tree_helpers():
    f = ps.MultivariateNormal(np.arange(12.0).reshape(2, 3, 2), np.broadcast_to(np.eye(2),
                                                                              (2, 3, 2, 2)))
    g = tree_take(f, np.array([2, 0]))
    np.testing.assert_array_equal(g.mean, [[4.0, 5.0], [6.0, 7.0]])
    assert g.precision.shape == (2, 2, 2)
    h = tree_select(np.array([[True, False, True], [False, False, True]]), f, f.power(0.5))
    np.testing.assert_array_equal(h.precision[0, 1], 0.5 * np.eye(2))
    np.testing.assert_array_equal(h.precision[0, 0], np.eye(2))
    p = Pair(np.arange(6.0).reshape(2, 3), np.ones((2, 3)))
    q = tree_take(p, np.array([1, 2]))
    assert isinstance(q, Pair) and q.a.tolist() == [1.0, 5.0]


class KalmanLike(NamedTuple):
    mean: np.ndarray
    covariance: object
    precision: np.ndarray
    t: int


def test_tree_helpers_on_a_kalman_like_state():
    """Event axes, None and counters: the hypothesis axis sits right after the batch axes."""
    from possibly._tree import tree_expand

    s = KalmanLike(np.arange(12.0).reshape(2, 3, 2), None,
                   np.arange(24.0).reshape(2, 3, 2, 2), 7)         # B = (2,), K = 3, n = 2
    picked = tree_take(s, np.array([1, 2]))
    np.testing.assert_array_equal(picked.mean, [[2.0, 3.0], [10.0, 11.0]])
    np.testing.assert_array_equal(picked.precision[1], [[20.0, 21.0], [22.0, 23.0]])
    assert picked.covariance is None and picked.t == 7
    wide = tree_expand(picked, 4, 1)
    assert wide.mean.shape == (2, 4, 2) and wide.precision.shape == (2, 4, 2, 2)
    mixed = tree_select(np.array([True, False]), picked, tree_take(s, np.array([0, 0])))
    np.testing.assert_array_equal(mixed.mean, [[2.0, 3.0], [6.0, 7.0]])


def test_bad_size():
    with pytest.raises(ValueError, match="size"):
        start_init(ps.Normal.uninformative(), (), 0)
