"""Streaming with ``ChangepointDetector.update``: one compiled step on state kept between calls.

The reference is ``fit`` on the same values (the compiled loop, and the numpy engine's pure
``step``): every per-step output must agree bit for bit, whatever mix of fit, update, extend,
pickling and reads of the detector produced the stream.
"""

from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pytest

import possibly as ps
from possibly.changepoint import ChangepointDetector, ChangepointInfo, compiled_engine, model_family

HAS_NUMBA = ChangepointDetector(sigma=1.0)._engine() == "numba"
needs_numba = pytest.mark.skipif(not HAS_NUMBA, reason="numba not installed")

FIELDS = ("y", "map_run_length", "map_model", "mean", "log_consistency", "discount",
          "n_active", "log_online_change_possibility")
INFO = ("log_consistency", "discount", "t", "map_run_length", "map_model", "mean", "n_active",
        "log_change_possibility", "change_detected", "outlier_detected")


def series(n: int, seed: int = 0) -> np.ndarray:
    """Level shifts, a trend, outliers and missing values."""
    rng = np.random.default_rng(seed)
    y = rng.normal(size=n) + np.repeat(rng.normal(scale=4.0, size=n // 300 + 1), 300)[:n]
    y[n // 2:] += 0.02 * np.arange(n - n // 2)
    y[rng.choice(n, n // 50, replace=False)] += 25.0
    y[rng.choice(n, n // 40, replace=False)] = np.nan
    return y


def same(a: ps.ChangepointResult, b: ps.ChangepointResult) -> None:
    for name in FIELDS:
        np.testing.assert_array_equal(np.asarray(getattr(a, name)),
                                      np.asarray(getattr(b, name)), err_msg=name)
    np.testing.assert_array_equal(a.changepoints, b.changepoints)
    # the hindsight change possibility kept by the stream's own steps (None: replayed)
    assert a.log_change_possibility is not None
    np.testing.assert_array_equal(a.log_change_possibility, b.log_change_possibility)


def detectors(engine: str) -> list[tuple[str, ChangepointDetector, int]]:
    """(name, detector, warm-up length): the default family (priors from a fit of the warm
    up, then streamed), the paper's model from the first value, and without merging."""
    return [("default", ChangepointDetector(engine=engine), 500),
            ("normal", ChangepointDetector(sigma=1.0, engine=engine), 0),
            ("normal, every run", ChangepointDetector(sigma=1.0, tol=0.0, merge_tol=0.0,
                                                      engine=engine), 0)]


def streamed(det: ChangepointDetector, y: np.ndarray, warm: int) -> list:
    infos = []
    if warm:
        det.fit(y[:warm])
    for x in y[warm:]:
        infos.append(det.update(x))
    return infos


def reference(det: ChangepointDetector, y: np.ndarray, warm: int) -> ps.ChangepointResult:
    """fit of the whole series with the warm-up's priors (the models the warm-up resolved)."""
    if warm:
        models = ChangepointDetector().fit(y[:warm]).params.models
        det = ChangepointDetector(model=list(models), engine=det.engine)
    return det.fit(y)


@pytest.mark.parametrize("engine", [pytest.param("numba", marks=needs_numba), "numpy"])
@pytest.mark.parametrize("case", range(3), ids=["default", "normal", "every-run"])
def test_update_equals_fit_bit_for_bit(engine, case):
    # 2500 values: several blocks of recorded rows, and (every run kept) buffers that grow
    y = series(2500)
    name, det, warm = detectors(engine)[case]
    infos = streamed(det, y, warm)
    same(det.result(), reference(det, y, warm))
    ref = reference(det, y, warm)
    for k, info in enumerate(infos):
        t = warm + k
        assert info.t == t and info.map_run_length == ref.map_run_length[t]
        assert info.map_model == ref.map_model[t] and info.n_active == ref.n_active[t]
        np.testing.assert_array_equal(
            [info.log_consistency, info.discount, info.mean, info.log_change_possibility],
            [ref.log_consistency[t], ref.discount[t], ref.mean[t],
             ref.log_online_change_possibility[t]])


@pytest.mark.parametrize("engine", [pytest.param("numba", marks=needs_numba), "numpy"])
@pytest.mark.parametrize("case", range(3), ids=["default", "normal", "every-run"])
def test_update_and_extend_keep_the_change_possibility_of_fit(engine, case):
    # fit, a loop of update and extend: the same hindsight change possibility bit for bit,
    # kept by the recursion as it runs (the stream's blocks of rows and its buffers grow)
    y = series(2500, seed=5)
    name, det, warm = detectors(engine)[case]
    streamed(det, y, warm)
    ref = reference(det, y, warm)
    same(det.result(), ref)
    _, extended, _ = detectors(engine)[case]
    if warm:
        extended.fit(y[:warm])
    extended.extend(y[warm:])
    same(extended.result(), ref)


@needs_numba
@pytest.mark.parametrize("case", range(3), ids=["default", "normal", "every-run"])
def test_compiled_update_gives_the_numpy_engines_infos(case):
    # the numpy engine's update is the slow reference: each Info equal field by field (the
    # trend models' compiled kernel agrees with their numpy steps to rounding, the normal
    # mean's bit for bit)
    y = series(700, seed=1)
    name, fast, warm = detectors("numba")[case]
    _, slow, _ = detectors("numpy")[case]
    rtol = 1e-9 if name == "default" else 0.0
    for a, b in zip(streamed(fast, y, warm), streamed(slow, y, warm), strict=True):
        assert type(a) is type(b)
        for field in INFO:
            va, vb = getattr(a, field), getattr(b, field)
            assert type(va) is type(vb), field
            if isinstance(va, float):
                np.testing.assert_allclose(va, vb, rtol=rtol, atol=0.0, err_msg=field)
            else:
                assert va == vb, field
        if rtol == 0.0:  # the whole Info equal too (NaN != NaN: missing values)
            assert a == b or np.isnan(a.log_consistency)


@pytest.mark.parametrize("engine", [pytest.param("numba", marks=needs_numba), "numpy"])
def test_mixed_fit_update_extend_pickle_and_reads(engine):
    y = series(3000, seed=2)
    det = ChangepointDetector(sigma=1.0, engine=engine)
    det.fit(y[:400])
    for x in y[400:900]:
        det.update(x)
    assert det.t == 900 and det.changepoints.size  # read mid-stream, rows pending
    det = pickle.loads(pickle.dumps(det))          # pickled with rows pending
    for x in y[900:1500]:
        det.update(x)
    state = det.state_                               # the RunState, mid-stream
    assert state.t == 1500
    det.extend(y[1500:2000])
    for x in y[2000:2600]:
        det.update(float(x))
    mid = det.result()
    assert len(mid.y) == 2600
    for x in y[2600:]:
        det.update(x)
    same(det.result(), ChangepointDetector(sigma=1.0, engine=engine).fit(y))
    assert det.state.t == len(y)


@pytest.mark.parametrize("engine", [pytest.param("numba", marks=needs_numba), "numpy"])
def test_update_without_history_keeps_the_change_points(engine):
    y = series(3000, seed=3)
    det = ChangepointDetector(sigma=1.0, engine=engine, history=False)
    for x in y:
        det.update(x)
    ref = ChangepointDetector(sigma=1.0, engine=engine).fit(y)
    np.testing.assert_array_equal(det.changepoints, ref.changepoints)
    assert det.history_nbytes() < 20_000


@needs_numba
def test_update_does_not_repack_the_state_per_call(count_calls):
    # amortised O(1) per call: the run hypotheses are packed for the compiled step once per
    # stream, not copied in and out at every observation
    calls = count_calls(compiled_engine, "packed_state")
    y = series(600, seed=4)
    det = ChangepointDetector(model=model_family(prior=ps.changepoint.automatic_prior(y)))
    for x in y:
        det.update(x)
    assert len(calls) <= 1


@pytest.mark.parametrize("bad, match", [
    (np.inf, "one observation .* got inf"), (-np.inf, "got -inf"), (1e200, "got 1e\\+200"),
    (np.nan + 1j, "complex"), ([1.0, 2.0], "one observation"),
    (np.array([2.0]), "one observation"), ("text", "one observation"),
])
@pytest.mark.parametrize("engine", [pytest.param("numba", marks=needs_numba), "numpy"])
def test_bad_values_are_refused_and_change_nothing(engine, bad, match):
    det = ChangepointDetector(sigma=1.0, engine=engine)
    for x in (0.1, 0.2, 0.3):
        det.update(x)
    with pytest.raises(ValueError, match=match):
        det.update(bad)
    det.update(0.4)
    same(det.result(), ChangepointDetector(sigma=1.0, engine=engine).fit([0.1, 0.2, 0.3, 0.4]))


@pytest.mark.parametrize("engine", [pytest.param("numba", marks=needs_numba), "numpy"])
def test_numbers_of_every_kind_are_streamed_alike(engine):
    values = [1, np.float64(2.5), np.float32(0.5), np.int64(3), float("nan"), np.array(1.5),
              2**60, -1e150]
    det = ChangepointDetector(sigma=1.0, engine=engine)
    infos = [det.update(v) for v in values]
    ref = ChangepointDetector(sigma=1.0, engine=engine).fit(
        np.array([float(np.ravel(v)[0]) for v in values]))
    np.testing.assert_array_equal([i.discount for i in infos], ref.discount)
    assert all(type(i.mean) is float for i in infos)


@pytest.mark.parametrize("bad", ["1.0", "nan", b"1", None, True, False, np.bool_(True),
                                 [None], ["2"], 10**400], ids=lambda v: repr(v)[:12])
@pytest.mark.parametrize("engine", [pytest.param("numba", marks=needs_numba), "numpy"])
def test_text_none_booleans_and_huge_integers_are_refused_by_name(engine, bad):
    # numpy would read them as 1.0, NaN or raise an OverflowError from deep inside
    det = ChangepointDetector(sigma=1.0, engine=engine)
    for x in (0.1, 0.2, 0.3):
        det.update(x)
    with pytest.raises(ValueError, match="^y must be one observation .*, got "):
        det.update(bad)
    det.update(0.4)
    same(det.result(), ChangepointDetector(sigma=1.0, engine=engine).fit([0.1, 0.2, 0.3, 0.4]))


def test_the_compiled_step_writes_every_output_of_the_loop():
    # update's compiled step records the recursion's outputs itself: a new output of
    # run_kernels must be written by step_kernels too (else update falls back to the slow
    # generic path)
    assert set(compiled_engine.OUTPUTS) <= set(compiled_engine.STEP_COLUMNS)


@needs_numba
def test_the_compiled_update_sets_every_field_of_the_info(monkeypatch):
    # the compiled step's Info is built without __init__ (its fields written at once): a
    # field added to ChangepointInfo must be written there too, not left to a class default
    det = ChangepointDetector(sigma=1.0, engine="numba")
    det.update(0.0)

    def refused(self, *args, **kwargs):
        raise AssertionError("update built its Info through __init__, not the compiled step")

    monkeypatch.setattr(ChangepointInfo, "__init__", refused)
    names = {f.name for f in dataclasses.fields(ChangepointInfo)}
    for x in [0.1, np.nan, 9.0, 9.2, 30.0, 9.1]:
        info = det.update(x)
        assert set(info.__dict__) == names


def merging_series() -> np.ndarray:
    """Runs of exact zeros (every run's weight tied, its mean 0: chains of indistinguishable
    runs), level shifts, noise, an outlier and a missing value."""
    rng = np.random.default_rng(7)
    y = np.concatenate([np.zeros(80), 5.0 + rng.normal(scale=0.1, size=120), np.full(60, 5.0),
                        -3.0 + rng.normal(size=150)])
    y[230], y[300] = 40.0, np.nan
    return y


@pytest.mark.parametrize("merge_tol", [1e-6, 0.3, 0.9])
def test_merging_runs_gives_the_numpy_engines_numbers(merge_tol):
    # the compiled merge (one pass, in place) against the numpy engine's (recursion.py), in
    # fit and in update, on chains of mergeable runs with tied weights
    y = merging_series()
    make = lambda engine: ChangepointDetector(sigma=1.0, hazard=0.01, merge_tol=merge_tol,  # noqa: E731
                                              engine=engine)
    ref = make("numpy").fit(y)
    kept = ChangepointDetector(sigma=1.0, hazard=0.01, merge_tol=0.0, engine="numpy").fit(y)
    assert (ref.n_active < kept.n_active).any()  # runs were merged
    engines = ["numpy", "numba"] if HAS_NUMBA else ["numpy"]
    for engine in engines:
        same(make(engine).fit(y), ref)
        det = make(engine)
        for x in y:
            det.update(x)
        same(det.result(), ref)


@needs_numba
def test_the_paper_models_update_runs_without_numbas_runtime():
    # the merge allocates no scratch: the compiled step of a merging kernel, as of one that
    # does not merge, is compiled without reference counts (numba's _nrt=False)
    for det in (ChangepointDetector(sigma=1.0), ChangepointDetector(sigma=1.0, period=24)):
        det.update(0.0)
        stepper = det._stream.stepper
        assert stepper.targetoptions.get("_nrt") is False
        assert det._stream.kernels[0].functions.indistinguishable is not None


@needs_numba
def test_streams_of_the_same_models_share_one_compiled_step():
    # a fleet of detectors holds one compiled step, not one copy of its machine code each;
    # and no stream is kept alive by the compiling of its step once it is dropped
    import gc
    import weakref

    first, second = ChangepointDetector(sigma=1.0), ChangepointDetector(sigma=1.0)
    first.update(0.0)
    second.update(0.0)
    assert first._stream.stepper is second._stream.stepper
    gone = weakref.ref(second._stream)
    del second
    gc.collect()
    assert gone() is None
