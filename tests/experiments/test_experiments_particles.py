"""The particle-filter study runs in quick mode, is reproducible, JSON-serialisable, plots."""

import json

import numpy as np
import pytest

from possibly.experiments import particle_study as ex


@pytest.fixture(scope="module")
def quick_result():
    return ex.run(quick=True, seed=3)


def test_quick_run_structure_and_reproducibility(quick_result):
    res = quick_result
    json.dumps(res)  # JSON-serialisable
    lin, rb = res["linear"], res["range_bearing"]
    assert set(lin["summary"]) == {"kalman discount", "particle discount", "kalman std all",
                                   "particle std all"}
    assert set(rb["summary"]) == set(ex.METHODS)
    for errs in (*lin["errors"].values(), *rb["errors"].values()):
        assert len(errs) == res["config"]["repeats"] and np.isfinite(errs).all()
    # compared as JSON: missing measurements have NaN discounts, and NaN != NaN
    assert json.dumps(res, sort_keys=True) == json.dumps(ex.run(quick=True, seed=3),
                                                         sort_keys=True)


def test_simulated_range_bearing_data_is_consistent():
    states, ys, out, _ = ex.simulate_range_bearing(4, seed=1, T=20)
    # inlier measurements are within 5 sd of the true bearing and range
    bearing = np.arctan2(states[..., 2], states[..., 0])
    rng = np.hypot(states[..., 0], states[..., 2])
    db = np.abs(ex._wrap(ys[..., 0] - bearing))[~out] / ex.BEARING_SD
    dr = np.abs(ys[..., 1] - rng)[~out] / ex.RANGE_SD
    assert db.max() < 5 and dr.max() < 5
    # the velocity-driven track moves about 1 unit per step along x
    assert np.abs(np.diff(states[..., 0], axis=1).mean() - 1.0) < 0.2


def test_plots_are_written(quick_result, tmp_path):
    pytest.importorskip("matplotlib")
    paths = ex.plot(quick_result, tmp_path)
    assert len(paths) == 3
    for p in paths:
        with open(p, "rb") as fh:
            assert fh.read(8) == b"\x89PNG\r\n\x1a\n"
