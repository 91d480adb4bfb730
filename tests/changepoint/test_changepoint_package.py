"""The change-point package: several models, bounded cost, streaming flags, pandas, hostile input.

References are independent of the code under test: the unpruned, unmerged recursion (itself
checked against brute force in test_changepoint.py), hand-built series with known segments.
"""

from __future__ import annotations

import functools
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import possibly as ps
from possibly.changepoint import ConjugateModel, NormalMean, numba_available
from possibly.changepoint.recursion import merge_keep

ENGINES = ["numpy", "numba"] if numba_available() else ["numpy"]
FAST = "numba" if numba_available() else "numpy"


def long_segments(n: int, n_changes: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    cps = np.sort(rng.choice(np.arange(200, n - 200), n_changes, replace=False))
    levels = np.cumsum(rng.choice([-1.0, 1.0], n_changes + 1) * rng.uniform(3, 6, n_changes + 1))
    y = np.repeat(levels, np.diff(np.r_[0, cps, n])) + rng.normal(size=n)
    y[rng.choice(n, n // 500, replace=False)] += 12.0  # outliers
    return y


# -- bounded cost ------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1])
def test_merging_keeps_the_changepoints_of_the_full_recursion_on_long_segments(seed):
    y = long_segments(6000, 3, seed)
    fast = ps.ChangepointDetector(sigma=1.0, hazard=1e-3, engine=FAST).fit(y)
    full = ps.ChangepointDetector(sigma=1.0, hazard=1e-3, tol=0.0, merge_tol=0.0,
                                  engine=FAST).fit(y)
    np.testing.assert_array_equal(fast.changepoints, full.changepoints)
    np.testing.assert_array_equal(fast.outliers, full.outliers)
    np.testing.assert_array_equal(fast.map_run_length, full.map_run_length)
    np.testing.assert_allclose(fast.mean, full.mean, rtol=1e-9)
    # the full recursion keeps thousands of runs, the merged one a bounded number
    assert full.n_active.max() > 1000
    assert fast.n_active.max() < 300


def test_cost_per_observation_is_bounded_at_any_segment_length():
    y = long_segments(60_000, 2, 3)
    res = ps.ChangepointDetector(sigma=1.0, hazard=1e-3, engine=FAST).fit(y)
    assert res.n_active.max() < 300
    assert res.changepoints.size == 2


def test_merge_keeps_the_larger_weight_and_the_older_on_ties():
    close = np.array([True, False, True])
    np.testing.assert_array_equal(merge_keep(np.array([-1.0, 0.0, -3.0, -3.0]), close),
                                  [False, True, True, False])


@pytest.mark.parametrize("engine", ENGINES)
def test_numba_equals_numpy_bit_for_bit_with_merging(engine):
    y = long_segments(3000, 2, 5)
    y[[10, 11, 2000]] = np.nan
    ref = ps.ChangepointDetector(sigma=1.0, hazard=1e-3, engine="numpy").fit(y)
    got = ps.ChangepointDetector(sigma=1.0, hazard=1e-3, engine=engine).fit(y)
    for f in ("map_run_length", "mean", "log_consistency", "discount", "n_active",
              "log_online_change_possibility"):
        np.testing.assert_array_equal(getattr(got, f), getattr(ref, f), err_msg=f)


def test_history_is_compact_and_history_false_is_bounded():
    y = long_segments(20_000, 3, 1)
    det = ps.ChangepointDetector(sigma=1.0, hazard=1e-3)
    det.extend(y)
    assert det.history_nbytes() / y.size <= 100
    lean = ps.ChangepointDetector(sigma=1.0, hazard=1e-3, history=False)
    lean.extend(y)
    assert lean.history_nbytes() < 10_000  # only the MAP switches
    np.testing.assert_array_equal(lean.changepoints, det.result().changepoints)


def test_history_false_fit_works():
    y = long_segments(2000, 2, 2)
    det = ps.ChangepointDetector(sigma=1.0, history=False)
    res = det.fit(y)
    ref = ps.ChangepointDetector(sigma=1.0).fit(y)
    np.testing.assert_array_equal(res.changepoints, ref.changepoints)
    np.testing.assert_array_equal(det.changepoints, ref.changepoints)
    with pytest.raises(ValueError, match="history=True"):
        det.result()


def test_changepoints_incremental_equals_backtrack():
    y = long_segments(3000, 4, 4)
    det = ps.ChangepointDetector(sigma=1.0, hazard=1e-3)
    seen = []
    for i, v in enumerate(y):
        det.update(v)
        if i % 500 == 499:
            seen.append(det.changepoints.tolist())
    res = ps.ChangepointDetector(sigma=1.0, hazard=1e-3).fit(y)
    assert seen[-1] == res.changepoints.tolist() == ps.changepoint.backtrack(
        res.map_run_length).tolist()


# -- several models ----------------------------------------------------------------------------


def test_list_of_models_reports_each_segments_model():
    rng = np.random.default_rng(0)
    y = np.r_[rng.normal(0.0, 0.5, 150), rng.normal(10.0, 4.0, 150)]
    # informative priors: model 0 expects a level near 0, model 1 near 10 (with the profile
    # evidence an uninformative model is never less consistent, so both are informative)
    lik = functools.partial(ps.likelihood.normal, sd=1.0)
    near_zero = ConjugateModel(ps.Normal(0.0, 100.0), lik)
    near_ten = ConjugateModel(ps.Normal(10.0, 100.0), lik)
    y = np.r_[rng.normal(0.0, 1.0, 150), rng.normal(10.0, 1.0, 150)]
    res = ps.ChangepointDetector(model=[near_zero, near_ten], hazard=1e-3).fit(y)
    assert res.changepoints.tolist() == [150]
    assert res.segment_models == [0, 1]
    # a single model equals the one-element list
    one = ps.ChangepointDetector(model=[NormalMean(1.0)], hazard=1e-3, engine="numpy").fit(y)
    ref = ps.ChangepointDetector(sigma=1.0, hazard=1e-3, engine="numpy").fit(y)
    np.testing.assert_array_equal(one.discount, ref.discount)


def test_two_identical_models_change_nothing():
    # a duplicated model only duplicates hypotheses: same weights, same MAP segmentation
    y = long_segments(800, 2, 6)
    two = ps.ChangepointDetector(model=[NormalMean(1.0), NormalMean(1.0)], merge_tol=0.0,
                                 tol=0.0).fit(y)
    one = ps.ChangepointDetector(sigma=1.0, merge_tol=0.0, tol=0.0, engine="numpy").fit(y)
    np.testing.assert_array_equal(two.changepoints, one.changepoints)
    np.testing.assert_array_equal(two.discount, one.discount)
    assert set(two.segment_models) == {0}


def test_changepoints_many_with_a_conjugate_model():
    pd = pytest.importorskip("pandas")
    pytest.importorskip("dask")
    from possibly.integrations.scaleout import changepoints_many

    counts = np.r_[np.full(30, 3.0), np.full(30, 12.0)]
    df = pd.DataFrame({"id": np.repeat([1, 2], 60), "y": np.r_[counts, counts[::-1]]})
    model = ConjugateModel(ps.Gamma.uninformative(), ps.likelihood.poisson)
    res = changepoints_many(df, "id", "y", scheduler="synchronous", model=model)
    assert res.summary["n_changepoints"].tolist() == [1, 1]
    # no σ to report: the summary names each segment's model instead
    assert "sigma" not in res.summary.columns
    assert res.summary["segment_models"].tolist() == ["ConjugateModel; ConjugateModel"] * 2


# -- streaming (river-style), scikit-learn conventions, pandas ---------------------------------


def test_update_flags():
    det = ps.ChangepointDetector(sigma=1.0, hazard=1e-3)
    y = np.r_[np.zeros(30), 9.0, np.zeros(30), np.full(30, 6.0)]
    infos = [det.update(v) for v in y]
    changes = [i.t for i in infos if i.change_detected]
    outliers = [i.t for i in infos if i.outlier_detected]
    assert len(changes) == 1 and 61 <= changes[0] <= 66
    assert infos[changes[0]].t - infos[changes[0]].map_run_length == 61
    assert 30 in outliers
    assert isinstance(infos[0], ps.sequential.Info)


def test_get_set_params_and_repr():
    det = ps.ChangepointDetector(sigma=2.0, hazard=0.01)
    assert repr(det) == "ChangepointDetector(sigma=2.0, hazard=0.01)"
    assert repr(ps.ChangepointDetector()) == "ChangepointDetector()"
    p = det.get_params()
    # the model-dependent defaults are None/"auto" sentinels; the values used are in params
    assert p["sigma"] == 2.0 and p["forgetting"] is None and p["tol"] is None
    assert p["model"] is None and "merge_tol" in p  # None: "auto", or "normal" with a sigma
    used = det.fit(np.arange(10.0)).params
    assert (used.forgetting, used.tol) == (0.9, 1e-12)  # the paper's model keeps its defaults
    assert used.models == (ps.changepoint.NormalMean(2.0),)
    det.set_params(hazard=0.02)
    assert det.hazard == 0.02
    with pytest.raises(ValueError, match="hazard"):
        det.set_params(hazard=2.0)
    assert det.hazard == 0.02  # unchanged after a bad value
    with pytest.raises(ValueError, match="unknown parameter 'sgima'"):
        det.set_params(sgima=1.0)
    clone = ps.ChangepointDetector(**det.get_params())
    assert repr(clone) == repr(det)


def test_pandas_index_is_kept():
    pd = pytest.importorskip("pandas")
    idx = pd.date_range("2024-01-01", periods=80, freq="h")
    noise = np.random.default_rng(1).normal(0.0, 0.1, 80)
    y = pd.Series(np.r_[np.zeros(40), np.full(40, 5.0)] + noise, index=idx)
    y.iloc[10] = 0.6  # 6 σ
    res = ps.ChangepointDetector(sigma=0.1, hazard=1e-3).fit(y)
    assert res.changepoints.tolist() == [40]  # positions stay integers
    assert res.index.equals(idx)
    frame = res.to_frame()
    assert frame.index.equals(idx)
    assert list(frame.columns) == ["changepoint", "change_possibility",
                                   "online_change_possibility", "outlier",
                                   "outlier_score", "segment_mean", "discount",
                                   "log_consistency", "anomaly"]
    assert frame.index[frame["changepoint"]].tolist() == [idx[40]]
    assert frame.index[frame["outlier"]].tolist() == [idx[10]]
    np.testing.assert_array_equal(frame["discount"].to_numpy(), res.discount)
    for col in ("change_possibility", "online_change_possibility"):
        assert ((frame[col] >= 0) & (frame[col] <= 1)).all()
    np.testing.assert_array_equal(frame["change_possibility"].to_numpy(),
                                  res.change_possibility)
    plain = ps.ChangepointDetector(sigma=0.1).fit(y.to_numpy()).to_frame()
    assert isinstance(plain.index, pd.RangeIndex)


# -- hostile input -----------------------------------------------------------------------------


@pytest.mark.parametrize("sigma", [1e-200, 1e-160, 1e200, 0.0, -1.0])
def test_extreme_sigma_is_a_clean_error(sigma):
    with pytest.raises(ValueError, match=r"sigma must be in \[1e-100, 1e\+100\]"):
        ps.ChangepointDetector(sigma=sigma)


@pytest.mark.parametrize("engine", ENGINES)
def test_smallest_sigma_gives_finite_results(engine):
    y = 1e-100 * (np.r_[np.zeros(20), np.full(20, 10.0)] + 0.1 * np.sin(np.arange(40)))
    res = ps.ChangepointDetector(sigma=1e-100, engine=engine).fit(y)
    assert np.isfinite(res.mean).all() and np.isfinite(res.discount).all()
    assert res.changepoints.tolist() == [20]


@pytest.mark.parametrize(("kw", "exc", "match"), [
    (dict(robust="no"), TypeError, "robust must be a bool"),
    (dict(history="yes"), TypeError, "history must be a bool"),
    (dict(hazard=0.3, tol=0.5), ValueError, r"tol must be in \[0, hazard\)"),
    (dict(hazard="0.1"), TypeError, "hazard must be a real number, got the string"),
    (dict(hazard=1e-13), ValueError, r"hazard must be greater than tol = 1e-12"),
    (dict(hazard=0.3, tol=0.4), ValueError, r"tol must be in \[0, hazard\)"),
    (dict(hazard=1.5), ValueError, "hazard must be in"),
    (dict(merge_tol=-1.0), ValueError, r"merge_tol must be in \[0, 1\)"),
])
def test_bad_arguments_name_the_argument(kw, exc, match):
    with pytest.raises(exc, match=match):
        ps.ChangepointDetector(sigma=1.0, **kw)


def test_large_hazard_is_accepted():
    # the derived outlier level 2 √hazard would exceed 1: it is capped, not an error
    det = ps.ChangepointDetector(sigma=1.0, hazard=0.3)
    assert det.fit(np.r_[np.zeros(10), np.ones(10) * 5]).changepoints.tolist() == [10]


def test_pickle_round_trip_mid_stream():
    y = long_segments(1000, 2, 7)
    det = ps.ChangepointDetector(sigma=1.0)
    det.extend(y[:500])
    det = pickle.loads(pickle.dumps(det))
    det.extend(y[500:])
    ref = ps.ChangepointDetector(sigma=1.0).fit(y)
    np.testing.assert_array_equal(det.result().discount, ref.discount)


@pytest.mark.skipif(not numba_available(), reason="needs numba")
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_during_a_numba_fit_is_a_clean_keyboard_interrupt(tmp_path):
    script = textwrap.dedent("""
        import sys, numpy as np, possibly as ps
        det = ps.ChangepointDetector(sigma=1.0, tol=0.0, merge_tol=0.0, engine="numba")
        det.fit(np.zeros(3000))  # compile (or load the cache) first
        print("ready", flush=True)
        try:
            det.fit(np.random.default_rng(0).normal(size=400_000))
        except KeyboardInterrupt:
            print("interrupted", flush=True)
            sys.exit(7)
        print("finished", flush=True)
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout.readline().strip() == "ready"
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 7, (out, err)
    assert "interrupted" in out
    assert "SystemError" not in err and "Segmentation" not in err


# -- fuzz: clean errors or finite outputs --------------------------------------------------------

_values = st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                    st.floats(min_value=-1e150, max_value=1e150))
_params = st.fixed_dictionaries({}, optional={
    "sigma": st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.just("auto"),
                       st.text(max_size=3), st.integers(-3, 3)),
    "hazard": st.one_of(st.floats(allow_nan=True), st.just("0.1"), st.booleans()),
    "forgetting": st.floats(allow_nan=True),
    "robust": st.one_of(st.booleans(), st.just("no"), st.integers(0, 1)),
    "tau": st.one_of(st.none(), st.floats(allow_nan=True)),
    "tol": st.floats(allow_nan=True),
    "merge_tol": st.floats(allow_nan=True),
    "engine": st.sampled_from(["auto", "numpy", "numba", "fast"]),
})


@settings(max_examples=300, deadline=None)
@given(y=st.lists(_values, max_size=40), params=_params)
def test_fuzz_detector_clean_errors_or_finite_outputs(y, params):
    try:
        det = ps.ChangepointDetector(**params)
        res = det.fit(y)
    except (ValueError, TypeError) as exc:
        assert str(exc)  # a message, not a bare exception
        return
    except ImportError:  # engine="numba" without numba
        return
    observed = ~np.isnan(np.asarray(y, dtype=float))
    assert np.isfinite(res.discount[observed]).all()
    assert np.isfinite(res.log_consistency[observed]).all()
    assert np.all(res.log_consistency[observed] <= 0.0)
    assert np.isfinite(res.mean[~np.isnan(res.mean)]).all()
    assert res.changepoints.dtype == np.int64


@settings(max_examples=200, deadline=None)
@given(y=st.lists(st.one_of(st.floats(min_value=-1e150, max_value=1e150), st.just(np.nan)),
                  min_size=1, max_size=60),
       sigma=st.floats(min_value=1e-100, max_value=1e100),
       hazard=st.floats(min_value=1e-10, max_value=0.99),
       forgetting=st.floats(min_value=1e-3, max_value=1.0),
       robust=st.booleans(), engine=st.sampled_from(ENGINES))
def test_fuzz_valid_parameters_give_finite_outputs(y, sigma, hazard, forgetting, robust,
                                                   engine):
    res = ps.ChangepointDetector(sigma=sigma, hazard=hazard, forgetting=forgetting,
                                 robust=robust, engine=engine).fit(y)
    observed = ~np.isnan(np.asarray(y))
    assert np.isfinite(res.discount[observed]).all()
    assert np.isfinite(res.log_consistency[observed]).all()
    assert (res.log_consistency[observed] <= 0.0).all()
    assert np.isfinite(res.mean[~np.isnan(res.mean)]).all()
    # a segment's estimate exists once it has seen an observation
    seen = np.array([observed[t - r:t + 1].any() for t, r in enumerate(res.map_run_length)])
    assert not np.isnan(res.mean[seen]).any()


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("forgetting, n", [(0.5, 3000), (1.8873950889669965e-145, 4)])
def test_forgetting_on_a_constant_series_stays_finite(engine, forgetting, n):
    """A run of identical values adds nothing to a run's gamma rate b, which forgetting
    shrinks geometrically: without a floor it underflowed to 0 and the evidence divided 0 by
    0 (ZeroDivisionError in the compiled engine, an IndexError in numpy's)."""
    res = ps.ChangepointDetector(forgetting=forgetting, hazard=1e-3, engine=engine).fit(
        np.zeros(n))
    assert np.isfinite(res.log_consistency).all() and np.isfinite(res.discount).all()
    assert np.isfinite(res.mean).all()


@pytest.mark.parametrize("forgetting", [0.5, 1e-100])
def test_vector_forgetting_keeps_a_proper_inverse_wishart(forgetting):
    """Forgetting shrinks ν and Ψ geometrically; on identical values nothing adds to them, and
    ν fell below d - 1 (an improper inverse-Wishart: NaN evidence, every run pruned, an
    IndexError) while Ψ underflowed. Both are floored where that would happen."""
    res = ps.ChangepointDetector(model=ps.changepoint.MultivariateNormalSegments(),
                                 forgetting=forgetting).fit(np.zeros((500, 3)))
    assert np.isfinite(res.log_consistency).all() and np.isfinite(res.discount).all()
    assert res.changepoints.size == 0
