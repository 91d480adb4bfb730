"""Robust start of the Kalman filter: the mixture of start hypotheses (issue 15)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import chi2

import possibly as ps
from possibly.experiments.kalman_study import simulate
from possibly.filters import kalman
from possibly.filters.robust_start import MAX_OUTLIERS, WINDOW, K, start_hypotheses

MODEL = ps.filters.constant_velocity(dt=1.0, accel_sd=0.05, obs_sd=1.0)


def test_hypotheses():
    drop = start_hypotheses()
    assert drop.shape == (1 + 4 + 6, K) and not drop[0].any()
    assert (drop.sum(1) <= MAX_OUTLIERS).all() and len({tuple(r) for r in drop}) == len(drop)


def brute_force_choice(ys, tau=None, prior=None):
    """The hypothesis of largest score, each scored by running the plain robust filter (from
    ``prior``) on the data with its outliers missing (no mixture code involved)."""
    plain = ps.KalmanFilter(*MODEL, tau=tau, robust_start=False)
    floor = -0.5 * chi2.ppf(0.999, 1)
    head = ys[:K + WINDOW]
    scores = []
    for row in start_hypotheses():
        masked = head.copy()
        masked[:K][row] = np.nan
        lc = plain.filter(masked, prior=prior).log_consistency
        s = floor * row.sum() + np.nansum(lc[:K]) + np.maximum(lc[K:], floor).sum()
        scores.append(s)
    return int(np.argmax(scores))


@pytest.mark.parametrize("seed", range(6))
def test_equals_the_chosen_hypothesis(seed):
    """After the collapse the robust start is the plain filter of its chosen hypothesis."""
    states, ys, _ = simulate(1, seed=seed, T=60)
    ys = ys[0]
    ys[seed % 3] += 25.0  # an early outlier
    best = brute_force_choice(ys)
    masked = ys.copy()
    masked[:K][start_hypotheses()[best]] = np.nan
    ref = ps.KalmanFilter(*MODEL, robust_start=False).filter(masked)
    res = ps.KalmanFilter(*MODEL).filter(ys)
    after = slice(K + WINDOW - 1, None)
    np.testing.assert_allclose(res.mean[after], ref.mean[after], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(res.discount[after], ref.discount[after], rtol=1e-10)
    # and the smoother is that hypothesis' smoother, over the whole series
    sm = ps.KalmanFilter(*MODEL).smooth(ys)
    sm_ref = ps.KalmanFilter(*MODEL, robust_start=False).smooth(masked)
    np.testing.assert_allclose(sm.mean, sm_ref.mean, rtol=1e-10, atol=1e-12)


def test_early_outlier_no_longer_loses_the_track():
    states, ys, out = simulate(500, seed=0, T=250)
    worst = np.abs(ps.KalmanFilter(*MODEL, robust=False).filter(ys).mean[..., 0]
                   - states[..., 0]).mean(-1).max()
    err = {}
    for rs in (False, True):
        est = ps.KalmanFilter(*MODEL, robust_start=rs).filter(ys).mean[..., 0]
        err[rs] = np.abs(est - states[..., 0]).mean(-1)
    assert (err[False] > worst).sum() == 41  # the paper's recursion (§5.2 study)
    assert (err[True] > worst).sum() <= 1
    assert np.median(err[True]) <= np.median(err[False])


def test_off_and_an_agreeing_prior_are_the_plain_recursion():
    _, ys, _ = simulate(3, seed=1, T=40)
    # engine="numpy": the same kernels as the module-level functions, so bit for bit
    plain = ps.KalmanFilter(*MODEL, robust_start=False).filter(ys, engine="numpy")
    # the plain recursion by hand: module-level predict/update from the uninformative state
    F, Q, H, R = MODEL
    state = ps.filters.KalmanState.uninformative(2, (3,))
    for t in range(40):
        if t:
            state = kalman.predict(state, F, Q)
        state, info = kalman.update(state, ys[:, t], H, R)
        np.testing.assert_array_equal(plain.mean[:, t], state.mean)
        np.testing.assert_array_equal(plain.discount[:, t], info.discount)
    # a prior the first observations agree with: the start's leader is the plain recursion
    prior = ps.MultivariateNormal([0.0, 0.1], np.eye(2))
    a = ps.KalmanFilter(*MODEL).filter(ys, prior=prior)
    b = ps.KalmanFilter(*MODEL, robust_start=False).filter(ys, prior=prior)
    np.testing.assert_allclose(a.mean, b.mean, rtol=1e-12, atol=1e-14)
    # the standard filter has nothing to protect
    c = ps.KalmanFilter(*MODEL, robust=False).filter(ys)
    d = ps.KalmanFilter(*MODEL, robust=False, robust_start=False).filter(ys)
    np.testing.assert_array_equal(c.mean, d.mean)


#: a weak proper prior: position 0 with sd 10, velocity uninformed
WEAK = ps.MultivariateNormal([0.0, 0.0], np.diag([1 / 10.0**2, 0.0]))


@pytest.mark.parametrize("first", [0, 1])
def test_a_weak_prior_is_protected_from_a_first_outlier(first, auto_compiles):
    """From a weak proper prior an outlier at y_0 (or y_1) is consistent enough with the prior
    to be taken whole by the plain recursion, which then loses the track; the start runs its
    hypotheses from the prior and settles on the one that drops it."""
    states, ys, _ = simulate(1, seed=4, T=80, outlier_prob=0.0)
    states, ys = states[0], ys[0]
    ys[first] += 18.0  # q = 18² / (100 + 1) against the prior: log c = -1.6 > log ε = -5.4
    plain = ps.KalmanFilter(*MODEL, robust_start=False).filter(ys, prior=WEAK)
    assert plain.discount[first] > 0.5  # taken (almost) whole ...
    assert np.abs(plain.mean[-20:, 0] - states[-20:, 0]).max() > 10  # ... and the track lost
    best = brute_force_choice(ys, prior=WEAK)
    assert list(np.flatnonzero(start_hypotheses()[best])) == [first]
    masked = ys.copy()
    masked[first] = np.nan
    ref = ps.KalmanFilter(*MODEL, robust_start=False).filter(masked, prior=WEAK)
    for engine in ("numpy", "auto"):
        res = ps.KalmanFilter(*MODEL).filter(ys, prior=WEAK, engine=engine)
        after = slice(K + WINDOW - 1, None)
        np.testing.assert_allclose(res.mean[after], ref.mean[after], rtol=1e-9, atol=1e-9)
        # (its discount is reported causally: at that step nothing could tell yet)
        assert np.abs(res.mean[5:, 0] - states[5:, 0]).max() < 3
    # the smoother starts from the same prior and drops the same observation
    sm = ps.KalmanFilter(*MODEL).smooth(ys, prior=WEAK)
    sm_ref = ps.KalmanFilter(*MODEL, robust_start=False).smooth(masked, prior=WEAK)
    np.testing.assert_allclose(sm.mean, sm_ref.mean, rtol=1e-9, atol=1e-9)
    # and so does the learned-scale filter, whose start is the same mixture
    ns = ps.KalmanFilter(*MODEL, learn_noise_scale=True, prior=WEAK).fit(ys)
    assert np.abs(ns.mean[5:, 0] - states[5:, 0]).max() < 3


def test_no_track_lost_from_a_weak_prior():
    """5% outliers of sd 10 (the §5.2 scenario otherwise), the weak prior: the plain recursion
    loses 7 of these 200 tracks (41 of 1000), each with an outlier among y_0, y_1."""
    states, ys, _ = simulate(200, seed=0, T=250, outlier_prob=0.05)
    worst = np.abs(ps.KalmanFilter(*MODEL, robust=False).filter(ys).mean[..., 0]
                   - states[..., 0]).mean(-1).max()
    err = np.abs(ps.KalmanFilter(*MODEL).filter(ys, prior=WEAK).mean[..., 0]
                 - states[..., 0]).mean(-1)
    assert (err > worst).sum() == 0


def test_the_smoother_keeps_the_discount_it_was_given():
    """The smoother's filter pass (the start's chosen hypothesis) has the filter's settings."""
    _, ys, _ = simulate(1, seed=3, T=40)
    kf = ps.KalmanFilter(*MODEL, coverage=None)
    np.testing.assert_allclose(kf.smooth(ys[0]).filtered.discount, kf.filter(ys[0]).discount,
                               rtol=1e-9)


def test_streaming_and_short_series():
    _, ys, _ = simulate(1, seed=2, T=30)
    ys = ys[0]
    ys[1] = 40.0
    kf = ps.KalmanFilter(*MODEL)
    infos = [kf.update(y) for y in ys]
    res = ps.KalmanFilter(*MODEL).filter(ys)
    np.testing.assert_allclose([float(i.discount) for i in infos], res.discount, rtol=1e-12)
    np.testing.assert_allclose(kf.state.mean, res.mean[-1], rtol=1e-12)
    short = ps.KalmanFilter(*MODEL).filter(ys[:6])  # ends before the collapse
    np.testing.assert_allclose(short.mean, res.mean[:6], rtol=1e-12)
    # by then the leader is the hypothesis "y_1 is an outlier" (reported causally: at t = 1
    # nothing could tell yet)
    masked = ys[:6].copy()
    masked[1] = np.nan
    ref = ps.KalmanFilter(*MODEL, robust_start=False).filter(masked)
    np.testing.assert_allclose(short.mean[3:], ref.mean[3:], rtol=1e-12)


def test_bad_input():
    with pytest.raises(TypeError, match="robust_start"):
        ps.KalmanFilter(*MODEL, robust_start="yes")


@pytest.mark.parametrize("pos", [0, 1, 2, 3])
def test_smoother_reports_an_early_outlier_it_rejected_as_discounted(pos):
    """The robust start's chosen hypothesis drops an early outlier; the smoother treats it as
    missing, and reports it as observed and discounted: discount 0 and the consistency of the
    observation with the smoothed state at its step (from the other observations), not NaN."""
    _, ys, _ = simulate(2, seed=3, T=40)
    ys[0, pos] = 1e6
    ys[1, 7] = np.nan  # a missing step stays missing
    kf = ps.KalmanFilter(*MODEL)
    sm = kf.smooth(ys)
    assert sm.discount[0, pos] == 0.0
    assert np.isfinite(sm.filtered.log_consistency[0, pos])
    assert np.isfinite(sm.consistency[0, pos])
    # by hand: y ~ N(H μ_s, H P_s Hᵀ + R) at the smoothed state
    F, Q, H, R = MODEL
    mu, P = sm.mean[0, pos], sm.covariance[0, pos]
    v = 1e6 - H[0] @ mu
    assert sm.filtered.log_consistency[0, pos] == pytest.approx(
        -0.5 * v * v / (H[0] @ P @ H[0] + R[0, 0]), rel=1e-9)
    # missing exactly where the data are: NaN there and only there
    assert np.isnan(sm.discount[1, 7]) and np.isnan(sm.discount).sum() == 1
    assert not np.isnan(sm.filtered.log_consistency[0]).any()
    # the other steps are those of the chosen hypothesis' plain filter, as before
    masked = ys.copy()
    masked[0, pos] = np.nan
    ref = ps.KalmanFilter(*MODEL, robust_start=False).smooth(masked)
    np.testing.assert_allclose(sm.mean, ref.mean, rtol=1e-10, atol=1e-12)
    keep = np.ones(ys.shape[:2], dtype=bool)
    keep[0, pos] = False
    np.testing.assert_array_equal(sm.discount[keep], ref.discount[keep])
    frame = sm.to_frame()
    assert frame["discount"].isna().sum() == 1  # the missing step only


def test_filter_reports_an_outlier_its_leader_drops_as_discounted_too():
    """filter() reports each step as its leader saw it then: an outlier that the leader drops
    at its own step is observed and discounted there too (discount 0, finite consistency), as
    the smoother reports it; one the start rejects only later was taken whole at its step
    (the filter's mean used it), and filter() says so."""
    _, ys, _ = simulate(1, seed=3, T=40)
    ys = ys[0]
    ys[3] = 1e6
    kf = ps.KalmanFilter(*MODEL)
    fr, sm = kf.filter(ys), kf.smooth(ys)
    for res in (fr, sm):
        assert res.discount[3] == 0.0 and np.isfinite(res.log_consistency[3]
                                                      if res is fr else
                                                      res.filtered.log_consistency[3])
    ys[3], ys[0] = ys[0], 1e6
    fr, sm = kf.filter(ys), kf.smooth(ys)
    assert fr.discount[0] == 1.0 and abs(fr.mean[0, 0] - 1e6) < 1e-6
    assert sm.discount[0] == 0.0 and abs(sm.mean[0, 0]) < 10.0


@pytest.mark.parametrize("m", [1, 2])
def test_the_settled_leader_is_the_last_leader_of_the_mixture_step_by_step(m):
    # the smoother's shortcut: the scores summed step after step, the leader taken once,
    # against the leader that mixture_scores reports after the last step; with missing
    # observations, ties (c = 1 for several hypotheses) and -inf consistencies
    from possibly.filters.robust_start import mixture_scores, settled_leader

    rng = np.random.default_rng(m)
    for steps in (1, 3, K, K + WINDOW):
        log_c = -rng.exponential(3.0, size=(40, len(start_hypotheses(K, MAX_OUTLIERS)), steps))
        log_c[::3, :, 0] = 0.0  # every hypothesis consistent: ties
        log_c[::5, ::2, steps - 1] = -np.inf
        observed = rng.random((40, steps)) > 0.2
        log_c[~np.broadcast_to(observed[:, None, :], log_c.shape)] = np.nan
        score = np.zeros(log_c.shape[:2])
        for t in range(steps):
            score, lead, _ = mixture_scores(score, log_c[..., t], observed[:, t], t, m)
        assert np.array_equal(settled_leader(log_c, observed, m), lead)
