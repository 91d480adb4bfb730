"""The Kalman filter in the data's units: noise scales set from the data, and a warning when
most observations are discounted."""

from __future__ import annotations

import csv
import re
import warnings

import numpy as np
import pandas as pd
import pytest

import possibly as ps
from possibly.cli import main
from possibly.integrations.scaleout import kalman_many


def simulate_cv(rng, T, accel_sd, obs_sd, dt=1.0):
    """The constant-velocity model of ps.filters.constant_velocity, simulated directly."""
    a = accel_sd * rng.standard_normal(T)
    vel = np.cumsum(dt * a)
    pos = np.cumsum(dt * (vel - dt * a / 2))  # pos_t = pos_t-1 + dt vel_t-1 + dt² a_t / 2
    return pos, pos + obs_sd * rng.standard_normal(T)


def local_level(seed, T=100, Q=1469.0, R=15000.0, start=1120.0):
    """A level like the Nile's (the local-level fit: Q ≈ 1469, R ≈ 15099), in its units."""
    rng = np.random.default_rng(seed)
    level = start + np.cumsum(np.r_[0.0, np.sqrt(Q) * rng.standard_normal(T - 1)])
    return level, level + np.sqrt(R) * rng.standard_normal(T)


def read_csv(path):
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    return {k: np.array([float(r[k]) for r in rows]) for k in rows[0] if k != "time"}


# -- the estimates --------------------------------------------------------------------------------
@pytest.mark.parametrize("accel_sd, obs_sd, dt", [(0.5, 3.0, 1.0), (0.05, 1.0, 1.0),
                                                  (2.0, 0.5, 1.0), (0.2, 1.0, 0.5)])
def test_noise_scales_of_a_long_simulated_track(accel_sd, obs_sd, dt):
    rng = np.random.default_rng(11)
    _, ys = simulate_cv(rng, 20000, accel_sd, obs_sd, dt)
    got_a, got_s = ps.filters.constant_velocity_noise(ys, dt)
    assert got_a == pytest.approx(accel_sd, rel=0.1)
    assert got_s == pytest.approx(obs_sd, rel=0.05)
    # one scale given: the other from the data
    assert ps.filters.constant_velocity_noise(ys, dt, obs_sd=obs_sd)[0] == pytest.approx(
        accel_sd, rel=0.1)
    assert ps.filters.constant_velocity_noise(ys, dt, accel_sd=accel_sd)[1] == pytest.approx(
        obs_sd, rel=0.05)


def test_outliers_and_gaps_move_the_estimates_little():
    rng = np.random.default_rng(5)
    _, ys = simulate_cv(rng, 5000, 0.3, 2.0)
    clean = ps.filters.constant_velocity_noise(ys)
    ys[rng.random(5000) < 0.05] += 200.0 * rng.standard_normal(1)  # 5% gross outliers
    ys[rng.random(5000) < 0.05] = np.nan
    dirty = ps.filters.constant_velocity_noise(ys)
    np.testing.assert_allclose(dirty, clean, rtol=0.35)


@pytest.mark.parametrize("a, b", [(1e-3, 0.0), (-7.0, 3.0), (1e4, -5e5), (2.0**-30, 0.0)])
def test_estimates_are_equivariant(a, b):
    rng = np.random.default_rng(2)
    _, ys = simulate_cv(rng, 300, 0.1, 1.0)
    ys[[3, 50, 51]] += 30.0
    ys[20] = np.nan
    two = np.stack([ys, ys[::-1]], axis=1)
    for y in (ys, two, ys[:4]):  # a 1-D track, a 2-D track, one too short to tell
        base = np.array(ps.filters.constant_velocity_noise(y, 0.5))
        np.testing.assert_allclose(ps.filters.constant_velocity_noise(a * y + b, 0.5),
                                   abs(a) * base, rtol=1e-9)


def test_degenerate_tracks():
    line = 3.0 + 0.5 * np.arange(20.0)  # no noise: tiny scales, relative to the spread
    accel_sd, obs_sd = ps.filters.constant_velocity_noise(line)
    assert obs_sd == pytest.approx(1e-3 * 4.75) and accel_sd == pytest.approx(1e-3 * 4.75)
    # too short to tell: the filter follows the observations
    short = np.array([1.0, 2.1, 2.9, 4.2])
    model = ps.filters.constant_velocity(*(1.0, *ps.filters.constant_velocity_noise(short)))
    res = ps.KalmanFilter(model).filter(short)
    np.testing.assert_allclose(res.mean[:, 0], short, atol=1e-3)
    with pytest.raises(ValueError, match="no observed position"):
        ps.filters.constant_velocity_noise([np.nan, np.nan])
    with pytest.raises(ValueError, match="dt"):
        ps.filters.constant_velocity_noise(short, dt=0.0)
    with pytest.raises(ValueError, match="obs_sd"):
        ps.filters.constant_velocity_noise(short, obs_sd=-1.0)


# -- the command line ----------------------------------------------------------------------------
def run_kalman(tmp_path, name, ys, *extra):
    src = tmp_path / f"{name}.csv"
    src.write_text("flow\n" + "\n".join("" if np.isnan(v) else repr(float(v)) for v in ys)
                   + "\n")
    out = tmp_path / f"{name}_out.csv"
    assert main(["kalman", str(src), "--out", str(out), *extra]) == 0
    return read_csv(out)


def test_cli_default_follows_a_level_in_its_units(tmp_path, capsys):
    """A Nile-like series (values near 1000, noise sd 122): with the old defaults
    (--obs-sd 1 --accel-sd 0.05) 94 of 100 observations were discounted and the level drifted
    away; from the data none is, and the filtered level stays with the series."""
    level, ys = local_level(0)
    got = run_kalman(tmp_path, "nile", ys)
    captured = capsys.readouterr()
    assert "; noise scales from the data: --accel-sd" in captured.out and captured.err == ""
    assert np.sum(got["discount"] < 0.1) <= 5
    assert np.abs(got["position"][10:] - level[10:]).max() < 250  # 2 noise sd
    # the old defaults, given explicitly: a warning line, exit status 0
    got = run_kalman(tmp_path, "old", ys, "--obs-sd", "1", "--accel-sd", "0.05")
    err = capsys.readouterr().err
    assert np.sum(got["discount"] < 0.1) > 50
    assert re.fullmatch(r"possibly kalman: warning: 9\d% of the observations were discounted "
                        r"below 0.1: .*\n", err)


@pytest.mark.parametrize("a, b", [(1e-3, 0.0), (-50.0, 1e6)])
@pytest.mark.parametrize("extra", [(), ("--smooth",), ("--obs-sd", "120")])
def test_cli_results_are_equivariant(tmp_path, capsys, a, b, extra):
    _, ys = local_level(1)
    ys[[0, 40, 41]] += [900.0, -1500.0, 1200.0]  # outliers, the first among them
    ys[60] = np.nan
    ref = run_kalman(tmp_path, "ref", ys, *extra)
    if "--obs-sd" in extra:  # a given scale is in the data's units: transform it too
        extra = ("--obs-sd", repr(120 * abs(a)))
    got = run_kalman(tmp_path, "got", a * ys + b, *extra)
    scale = np.nanmax(np.abs(ys))
    for q in ("position", "velocity"):
        shift = b if q == "position" else 0.0
        np.testing.assert_allclose(got[q], a * ref[q] + shift, rtol=1e-7,
                                   atol=1e-7 * abs(a) * scale)
        np.testing.assert_allclose(got[f"{q}_sd"], abs(a) * ref[f"{q}_sd"], rtol=1e-7)
    np.testing.assert_allclose(got["discount"], ref["discount"], rtol=1e-6, atol=1e-9)
    assert set(np.flatnonzero(got["discount"] < 0.1)) == set(np.flatnonzero(
        ref["discount"] < 0.1))
    assert {40, 41} <= set(np.flatnonzero(ref["discount"] < 0.1))


def test_kalman_many_sets_the_noise_per_track(tmp_path, capsys):
    """Two tracks, the same data in units 1000 apart: each gets its own scales, so the
    filtered states are the same up to the units (the old defaults discounted the large
    one almost everywhere)."""
    _, ys = local_level(2, T=60)
    df = pd.DataFrame({"id": np.repeat(["m", "km"], 60), "flow": np.r_[ys, ys / 1000.0]})
    path = tmp_path / "panel.csv"
    df.to_csv(path, index=False)
    assert main(["kalman-many", str(path), "--id", "id", "--value", "flow",
                 "--scheduler", "synchronous"]) == 0
    captured = capsys.readouterr()
    assert "warning" not in captured.err
    states = pd.read_csv(pd.io.common.StringIO(captured.out))
    m, km = (states[states["id"] == k] for k in ("m", "km"))
    np.testing.assert_allclose(km["mean_position"], m["mean_position"] / 1000.0, rtol=1e-7)
    np.testing.assert_allclose(km["discount"], m["discount"], rtol=1e-6, atol=1e-9)
    assert (m["discount"] < 0.1).sum() <= 3
    # the old defaults: the track in metres is mostly discounted, and the command says so
    assert main(["kalman-many", str(path), "--id", "id", "--value", "flow",
                 "--scheduler", "synchronous", "--obs-sd", "1", "--accel-sd", "0.05"]) == 0
    err = capsys.readouterr().err
    assert "possibly kalman-many: warning: 1 track(s) had more than half" in err


def test_kalman_many_with_a_model_per_track():
    _, ys = local_level(3, T=40)
    df = pd.DataFrame({"id": np.repeat(["a", "b", "c"], 40),
                       "v": np.r_[ys, 10 * ys, ys[:3].tolist() + [np.nan] * 37]})

    def model(track):
        return ps.filters.constant_velocity(1.0, *ps.filters.constant_velocity_noise(track))

    with pytest.warns(ps.MostlyDiscountedWarning, match="2 of 3 tracks"):
        fixed = kalman_many(df, "id", "v", ps.filters.constant_velocity(),
                            scheduler="synchronous")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ps.MostlyDiscountedWarning)
        res = kalman_many(df, "id", "v", model, scheduler="synchronous")
    summary = res.summary.set_index("id")
    for key, y in (("a", ys), ("b", 10 * ys)):
        want = ps.KalmanFilter(model(y)).filter(y)
        got = res.states[res.states["id"] == key]
        np.testing.assert_allclose(got[["mean_position", "mean_velocity"]], want.mean,
                                   rtol=1e-12)
        assert summary.loc[key, "discounted_fraction"] == float(want.discounted_fraction)
    assert fixed.summary.set_index("id").loc["b", "discounted_fraction"] > 0.5
    assert fixed.summary.set_index("id").loc["c", "discounted_fraction"] < 0.5
    with pytest.raises(ValueError, match="tau"):
        kalman_many(df, "id", "v", model, tau=2.0, scheduler="synchronous")


# -- the warning and the fraction -----------------------------------------------------------------
def test_discounted_fraction_by_hand():
    from possibly.filters.filter_result import discounted_fraction

    assert float(discounted_fraction([1.0, 0.0, np.nan, 0.05, 1.0])) == 0.5
    assert float(discounted_fraction([np.nan, np.nan])) == 0.0
    np.testing.assert_array_equal(discounted_fraction([[0.0, 0.2], [0.09, np.nan]]),
                                  [0.5, 1.0])


def test_library_warns_when_most_observations_are_discounted():
    level, ys = local_level(0)
    kf = ps.KalmanFilter(*ps.filters.constant_velocity())  # R = 1 for data of sd 122
    with pytest.warns(ps.MostlyDiscountedWarning,
                      match=r"9\d of 100 observations \(9\d%\) were discounted below 0.1"):
        res = kf.filter(ys)
    assert res.discounted_fraction > 0.9
    assert float(res.discounted_fraction) == np.mean(res.discount < 0.1)
    assert issubclass(ps.MostlyDiscountedWarning, UserWarning)
    with pytest.warns(ps.MostlyDiscountedWarning, match="2 of 3 series"):
        batch = kf.filter(np.stack([ys, ys / 1e4, 2 * ys])[..., None])
    assert batch.discounted_fraction.shape == (3,) and batch.discounted_fraction[1] < 0.5
    with pytest.warns(ps.MostlyDiscountedWarning):
        kf.smooth(ys)
    model = ps.filters.constant_velocity(1.0, *ps.filters.constant_velocity_noise(ys))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ps.MostlyDiscountedWarning)
        fine = ps.KalmanFilter(model).filter(ys)
    assert fine.discounted_fraction < 0.05


def test_other_filters_warn_too():
    _, ys = local_level(0)
    F, Q, H, R = ps.filters.constant_velocity()
    prior = ps.MultivariateNormal([ys[0], 0.0], np.eye(2))
    mod = ps.filters.NonlinearModel(f=lambda x: x @ F.T, h=lambda x: x @ H.T, Q=Q, R=R)
    with pytest.warns(ps.MostlyDiscountedWarning):
        res = ps.ExtendedKalmanFilter(mod, prior=prior).fit(ys)
    assert res.discounted_fraction > 0.5
    # the learned scale fixes R's units: no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", ps.MostlyDiscountedWarning)
        learned = ps.KalmanFilter(F, Q, H, R, learn_noise_scale=True).fit(ys)
    assert learned.discounted_fraction < 0.5


def test_a_constant_axis_does_not_pull_the_noise_scales_to_zero():
    """A 2-D track whose second coordinate never moves: the scales come from the moving axis
    (pooling the axes' differences gave a median of 0 and discounted most observations)."""
    rng = np.random.default_rng(3)
    moving = np.arange(300.0) + rng.normal(0.0, 1.0, 300)
    accel_1d, obs_1d = ps.filters.constant_velocity_noise(moving)
    accel_2d, obs_2d = ps.filters.constant_velocity_noise(np.c_[moving, np.zeros(300)])
    assert obs_2d == pytest.approx(obs_1d) and accel_2d == pytest.approx(accel_1d)
    assert 0.8 < obs_2d < 1.25  # the truth: 1
