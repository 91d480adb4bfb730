"""DetectorBank: every stream gives what a ChangepointDetector with the same settings gives
through update(), bit for bit, with either engine."""

from __future__ import annotations

import inspect
import pickle

import numpy as np
import pytest

import possibly as ps
from possibly.changepoint import (
    BankInfo,
    ChangepointDetector,
    DetectorBank,
    SegmentPrior,
    automatic_prior,
    compiled_engine,
    model_family,
    numba_available,
)
from possibly.changepoint.anomaly import new_calibration

NO_NUMBA = pytest.mark.skipif(not numba_available(), reason="numba is not installed")
ENGINES = ["numpy", pytest.param("numba", marks=NO_NUMBA)]
#: the engines, and the compiled one with the streams shared out among threads
SETUPS = [("numpy", False), pytest.param("numba", False, marks=NO_NUMBA),
          pytest.param("numba", True, marks=NO_NUMBA)]
FIELDS = ("log_consistency", "discount", "change_detected", "outlier_detected",
          "map_run_length", "map_model", "mean", "n_active", "log_change_possibility", "t",
          "anomaly")


def streams(n_streams: int, length: int, seed: int) -> list[np.ndarray]:
    """Noisy streams with level shifts, a trend, spikes and missing values."""
    rng = np.random.default_rng(seed)
    out = []
    for s in range(n_streams):
        y = rng.normal(size=length) * (1 + s) + 10.0 * s
        y[length // 2:] += 6.0 * (1 + s) * (s % 2)
        y += 0.02 * (s % 3) * np.arange(length)
        y[rng.integers(0, length, 3)] += 25.0 * (1 + s)
        y[rng.integers(0, length, 4)] = np.nan
        out.append(y)
    return out


def equal(a: object, b: object) -> bool:
    """Bit for bit (NaN equal to NaN)."""
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and bool(
        np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))


def replay(bank: DetectorBank, data: dict, rng: np.random.Generator, calls: int) -> dict:
    """Feed ``data[id]`` to the bank in ``calls`` calls, each with a random subset of the ids
    in a random order; returns each id's per-step fields, in stream order."""
    pos = dict.fromkeys(data, 0)
    got: dict = {i: {f: [] for f in FIELDS} for i in data}
    for _ in range(calls):
        left = [i for i in data if pos[i] < len(data[i])]
        if not left:
            break
        ids = [left[j] for j in rng.permutation(len(left))[:rng.integers(1, len(left) + 1)]]
        info = bank.update_many(ids, [data[i][pos[i]] for i in ids])
        assert isinstance(info, BankInfo) and len(info) == len(ids)
        for j, i in enumerate(ids):
            for f in FIELDS:
                got[i][f].append(getattr(info, f)[j])
            pos[i] += 1
    assert all(pos[i] == len(data[i]) for i in data), "the calls were too few"
    return got


def expected_steps(det: ChangepointDetector, values: np.ndarray) -> dict:
    out: dict = {f: [] for f in FIELDS}
    for x in values:
        info = det.update(float(x))
        for f in FIELDS:
            out[f].append(getattr(info, f))
    return out


def assert_same(got: dict, want: dict, name: object) -> None:
    for f in FIELDS:
        g, w = np.array(got[f]), np.array(want[f])
        if w.dtype.kind == "b":
            g = g.astype(bool)
        assert np.array_equal(g, w.astype(g.dtype), equal_nan=g.dtype.kind == "f"), (name, f)
        assert equal(np.array(got[f]).astype(w.dtype), w), (name, f)


@pytest.mark.parametrize("engine, parallel", SETUPS)
def test_default_models_from_warm_ups_match_the_detector(engine, parallel):
    """Warm-ups of different lengths (with NaNs), then random subsets of the ids in random
    orders: each stream is a detector after fit(warm_up), fed by update()."""
    data = streams(5, 180, seed=1)
    ids = ["cpu", 17, "disk", ("host", 2), 3.5]
    lengths = [40, 60, 25, 60, 33]
    bank = DetectorBank(engine=engine, parallel=parallel)
    bank.add(ids, warm_up=[d[:n] for d, n in zip(data, lengths, strict=True)])
    rest = {i: d[n:] for i, d, n in zip(ids, data, lengths, strict=True)}
    got = replay(bank, rest, np.random.default_rng(0), calls=1000)
    for i, d, n in zip(ids, data, lengths, strict=True):
        det = ChangepointDetector(engine=engine)
        det.fit(d[:n])
        assert bank.params(i) == det.params_
        assert_same(got[i], expected_steps(det, d[n:]), i)
        assert equal(bank.changepoints(i), det.changepoints), i
        assert bank.t(i) == det.t == len(d)
        assert len(bank.changepoints(i)) > 0 or i in ("cpu", "disk", 3.5)
        want, have = det.state_, bank.state(i)
        assert have.t == want.t
        for a, b in zip(have.blocks, want.blocks, strict=True):
            assert equal(a.start, b.start) and equal(a.log_w, b.log_w)
            for key in b.runs:
                assert equal(a.runs[key], b.runs[key]), key


@pytest.mark.parametrize("engine", ENGINES)
def test_a_warm_up_array_matches_fit_and_update(engine):
    """One (n_streams, n_warmup) array: the streams continue as detectors after fit."""
    data = np.array(streams(4, 120, seed=2))
    bank = DetectorBank(engine=engine)
    bank.add(np.arange(4), warm_up=data[:, :50])
    for t in range(50, 120):
        bank.update_many([3, 1, 0, 2], data[[3, 1, 0, 2], t])
    for s in range(4):
        det = ChangepointDetector(engine=engine)
        det.fit(data[s, :50])
        for x in data[s, 50:]:
            det.update(float(x))
        assert equal(bank.changepoints(s), det.changepoints)
        assert equal(bank.segment_models(s), np.asarray(det.result().segment_models))
        assert equal(bank.state(s).log_w, det.state_.log_w)


@pytest.mark.parametrize("engine", ENGINES)
def test_priors_without_warm_up_match_a_streaming_detector(engine):
    data = streams(3, 150, seed=3)
    priors = [automatic_prior(d[:30]) for d in data]
    bank = DetectorBank(engine=engine, hazard=0.01)
    bank.add(["a", "b", "c"], prior=priors)
    got = replay(bank, dict(zip("abc", data, strict=True)), np.random.default_rng(1), 800)
    for i, d, p in zip("abc", data, priors, strict=True):
        det = ChangepointDetector(model=model_family(prior=p), hazard=0.01, engine=engine)
        assert_same(got[i], expected_steps(det, d), i)
        assert equal(bank.changepoints(i), det.changepoints)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_prior_reaches_the_seasonal_models(engine):
    """``add(prior=...)`` with the seasonal family: every member takes the prior on y, and
    each stream is a detector of ``model_family(period=24, prior=...)`` fed by update()."""
    rng = np.random.default_rng(8)
    t = np.arange(24 * 12)
    data = [5.0 * (1 + s) * np.sin(2 * np.pi * t / 24) + rng.normal(size=t.size) + 3.0 * s
            for s in range(2)]
    data[1][150:] += 8.0
    priors = [automatic_prior(d[:48]) for d in data]
    bank = DetectorBank(model=model_family(period=24), hazard=0.01, engine=engine)
    bank.add(["a", "b"], prior=priors)
    got = replay(bank, dict(zip("ab", data, strict=True)), np.random.default_rng(2), 800)
    for i, d, p in zip("ab", data, priors, strict=True):
        assert all(m.prior == p for m in bank.params(i).models)
        det = ChangepointDetector(model=model_family(period=24, prior=p), hazard=0.01,
                                  engine=engine)
        assert_same(got[i], expected_steps(det, d), i)
        assert equal(bank.changepoints(i), det.changepoints)


def test_a_prior_on_y_is_not_given_to_a_model_on_log_y():
    """A LogTrend's prior is on log y: a prior on y leaves it its own, and a LogTrend
    without one is refused by name, not given the prior on y."""
    y = np.exp(np.random.default_rng(3).normal(2.0, 0.3, 200)) * 10.0
    on_y, on_log_y = automatic_prior(y), automatic_prior(np.log(y))
    scale = on_y.scale
    det = ChangepointDetector(model=model_family() + [
        ps.changepoint.LogTrend(0, prior=on_log_y, reference_scale=scale)])
    params = det.stream_params(prior=on_y)
    assert params.models[-1].prior == on_log_y
    assert all(m.prior == on_y for m in params.models[:-1])
    bank = DetectorBank(model=model_family() + [ps.changepoint.LogTrend(
        0, reference_scale=scale)])
    with pytest.raises(ValueError, match=r"prior was given .* LogTrend\(log level\) .*"
                                         r"prior is on log y"):
        bank.add(["a"], prior=on_y)
    bank.add(["a"], warm_up=[y[:100]])  # a warm-up sets the prior on log y
    assert bank.params("a").models[-1].prior == automatic_prior(np.log(y[:100]))


def test_a_prior_no_model_takes_is_refused_by_what_was_given():
    with pytest.raises(ValueError, match=r"prior was given .* none of these models takes one "
                                         r"\(NormalMean\(level\)\): drop prior"):
        ChangepointDetector(sigma=1.0).stream_params(prior=SegmentPrior(0.0, 1.0, 10.0))


@NO_NUMBA
@pytest.mark.parametrize("error, when", [(KeyError, "compile"), (KeyError, "call"),
                                         (TypeError, "call")])
def test_a_numba_without_the_runtime_switch_falls_back(monkeypatch, error, when):
    """A numba that does not know the option turning its runtime off (an unknown option
    raises KeyError when the function compiles) still gets the compiled bank's numbers, from
    the driver with reference counts."""
    from possibly.changepoint import bank as bank_module

    real = bank_module.compiled_streams
    asked = []

    def without_the_switch(*args, refcounts=True, **kwargs):
        asked.append(refcounts)
        if refcounts:
            return real(*args, refcounts=refcounts, **kwargs)
        if when == "compile":
            raise error("Unrecognized options: {'_nrt'}")

        def driver(*_):
            raise error("Unrecognized options: {'_nrt'}")
        return driver

    data = streams(3, 120, seed=5)
    priors = [automatic_prior(d[:30]) for d in data]
    want = replay(_bank_with(priors), dict(zip("abc", data, strict=True)),
                  np.random.default_rng(4), 600)
    monkeypatch.setattr(bank_module, "compiled_streams", without_the_switch)
    # the failure is remembered per process: keep this fake numba's out of the other tests
    monkeypatch.setattr(compiled_engine, "_NEEDS_REFCOUNTS", set())
    got = replay(_bank_with(priors), dict(zip("abc", data, strict=True)),
                 np.random.default_rng(4), 600)
    assert asked == [False, True]  # the plain driver was tried, then the counted one
    for i, d, p in zip("abc", data, priors, strict=True):
        assert_same(got[i], want[i], i)
        det = ChangepointDetector(model=model_family(prior=p), hazard=0.01, engine="numba")
        assert_same(got[i], expected_steps(det, d), i)


def _bank_with(priors: list[SegmentPrior]) -> DetectorBank:
    bank = DetectorBank(engine="numba", hazard=0.01)
    bank.add(["a", "b", "c"], prior=priors)
    return bank


@pytest.mark.parametrize("engine, parallel", SETUPS)
def test_paper_model_grows_the_run_buffers(engine, parallel, monkeypatch):
    """Without pruning or merging every step keeps a new run: each stream outgrows its first
    capacity several times, interleaved with the others (regions moved, pools compacted),
    and a pickled copy resumes with its pools packed."""
    data = streams(6, 150, seed=4)
    settings = dict(sigma=2.0, hazard=0.02, tol=0.0, merge_tol=0.0, forgetting=1.0)
    bank = DetectorBank(engine=engine, parallel=parallel, **settings)
    compacted = []
    compact = DetectorBank._compact

    def counted(self: DetectorBank) -> None:
        compacted.append(True)
        compact(self)

    monkeypatch.setattr(DetectorBank, "_compact", counted)
    got = replay(bank, dict(enumerate(data[:3])), np.random.default_rng(2), calls=2000)
    bank = pickle.loads(pickle.dumps(bank))
    more = replay(bank, dict(enumerate(data[3:], 3)), np.random.default_rng(3), calls=2000)
    got.update(more)
    assert bool(compacted) == (engine == "numba")
    for i, d in enumerate(data):
        det = ChangepointDetector(engine=engine, **settings)
        want = expected_steps(det, d)
        assert want["n_active"][-1] > 100  # far past the first capacity
        assert_same(got[i], want, i)
        assert equal(bank.changepoints(i), det.changepoints)


@pytest.mark.parametrize("engine", ENGINES)
def test_paper_model_with_merging_matches(engine):
    data = streams(3, 200, seed=5)
    bank = DetectorBank(engine=engine, sigma=1.5)
    got = replay(bank, dict(enumerate(data)), np.random.default_rng(3), calls=1000)
    if engine == "numba":  # the merge allocates nothing: the loop without numba's runtime
        assert bank._driver.py_func.__qualname__.endswith("_plain")
    for i, d in enumerate(data):
        assert_same(got[i], expected_steps(ChangepointDetector(engine=engine, sigma=1.5), d),
                    i)


@pytest.mark.parametrize("engine, parallel", SETUPS)
def test_pickle_resume(engine, parallel):
    data = np.array(streams(3, 100, seed=6))
    whole = DetectorBank(engine=engine, parallel=parallel)
    whole.add(list("xyz"), warm_up=data[:, :30])
    resumed = pickle.loads(pickle.dumps(whole))
    for t in range(30, 100):
        a = whole.update_many(list("xyz"), data[:, t])
        b = resumed.update_many(list("xyz"), data[:, t])
        if t == 60:
            resumed = pickle.loads(pickle.dumps(resumed))
        for f in FIELDS:
            assert equal(getattr(a, f), getattr(b, f)), f
    for i in "xyz":
        assert equal(whole.changepoints(i), resumed.changepoints(i))


def cyclic_streams(n_streams: int, length: int, seed: int) -> list[np.ndarray]:
    """Daily cycles (24 records) of different units, a level shift, a missing peak, spikes
    and missing values."""
    rng = np.random.default_rng(seed)
    t = np.arange(length)
    out = []
    for s in range(n_streams):
        y = 10.0 ** s * (5.0 + 3.0 * np.sin(2 * np.pi * (t + 5 * s) / 24) + rng.normal(size=length))
        y[length // 2:] += 10.0 ** s * 2.0 * (s % 2)
        peak = 24 * (length // 48) + 6 - 5 * s % 24
        y[peak - 2:peak + 3] = 10.0 ** s * 5.0  # a flat stretch where the peak should be
        y[rng.integers(0, length, 2)] += 10.0 ** s * 15.0
        y[rng.integers(0, length, 5)] = np.nan
        out.append(y)
    return out


@pytest.mark.parametrize("engine, parallel", SETUPS)
def test_anomaly_with_a_period_per_stream_matches_the_detector(engine, parallel):
    """Streams with their own periods (and none), from warm-ups, in random subsets and
    orders; streams with a longer period added later (wider calibration rows), a pickled
    copy resumed: every stream's anomaly is the detector's with its period, bit for bit."""
    data = cyclic_streams(6, 200, seed=11)
    ids, periods, lengths = ["a", "b", "c", "d"], [24, None, 12, None], [60, 50, 72, 49]
    bank = DetectorBank(engine=engine, parallel=parallel, period=24)
    bank.add(ids[:2], warm_up=[data[0][:60], data[1][:50]], period=[24, None])
    bank.add(ids[2:], warm_up=[data[2][:72], data[3][:49]], period=[12, None])
    rest = {i: d[n:] for i, d, n in zip(ids, data[:4], lengths, strict=True)}
    got = replay(bank, {i: r[:70] for i, r in rest.items()}, np.random.default_rng(5), 400)
    bank.add(["e"], warm_up=[data[4][:30]], period=96)
    bank.add(["f"], warm_up=[data[5][:30]])
    bank = pickle.loads(pickle.dumps(bank))
    more = {i: r[70:] for i, r in rest.items()} | {"e": data[4][30:], "f": data[5][30:]}
    later = replay(bank, more, np.random.default_rng(6), 800)
    for i in ids:
        for f in FIELDS:
            got[i][f] += later[i][f]
    got["e"], got["f"] = later["e"], later["f"]
    lengths += [30, 30]
    for i, d, n, p in zip([*ids, "e", "f"], data, lengths, [*periods, 96, 24], strict=True):
        det = ChangepointDetector(engine=engine, period=p)
        det.fit(d[:n])
        want = expected_steps(det, d[n:])
        assert_same(got[i], want, i)
        assert max(want["anomaly"]) > 0.9, i  # not trivially equal: the spikes rank high
    assert bank._post.shape[1] == len(new_calibration(96))


@pytest.mark.parametrize("engine", ENGINES)
def test_new_streams_of_update_many_take_the_banks_period(engine):
    data = cyclic_streams(2, 150, seed=12)
    bank = DetectorBank(sigma=2.0, hazard=0.01, engine=engine, period=24)
    got = replay(bank, dict(enumerate(data)), np.random.default_rng(7), 600)
    for i, d in enumerate(data):
        det = ChangepointDetector(sigma=2.0, hazard=0.01, engine=engine, period=24)
        assert_same(got[i], expected_steps(det, d), i)


def test_anomaly_is_zero_for_missing_values_and_the_first_records():
    bank = DetectorBank(sigma=1.0, period=3)
    rows = [bank.update_many(["a", "b"], [x, np.nan]).anomaly.tolist()
            for x in (1.0, 2.0, 3.0, 1.5, np.nan)]
    # with a period, no anomaly before a first earlier period of the phase and a first
    # residual; a missing value: 0
    assert rows == [[0.0, 0.0]] * 5


@NO_NUMBA
def test_the_compiled_loop_with_the_calibration_keeps_no_reference_counts():
    """The calibration step allocates nothing: the bank keeps the loop compiled without
    numba's runtime (a step that allocated would fall back to the refcounted loop)."""
    bank = DetectorBank(engine="numba", period=24)
    bank.add(["a"], warm_up=[cyclic_streams(1, 60, seed=1)[0]])
    bank.update_many(["a"], [1.0])
    assert bank._driver.py_func.__qualname__.endswith("_plain")


def test_engines_agree_to_rounding():
    """The two engines run the same recursion (the compiled one to rounding)."""
    if not numba_available():
        pytest.skip("numba is not installed")
    data = np.array(streams(3, 150, seed=7))
    banks = [DetectorBank(engine=e) for e in ("numpy", "numba")]
    infos = []
    for bank in banks:
        bank.add([0, 1, 2], warm_up=data[:, :40])
        infos.append([bank.update_many([0, 1, 2], data[:, t]) for t in range(40, 150)])
    for a, b in zip(*infos, strict=True):
        assert np.allclose(a.log_consistency, b.log_consistency, equal_nan=True)
    for s in range(3):
        assert equal(banks[0].changepoints(s), banks[1].changepoints(s))


def test_missing_values_predict_only():
    bank = DetectorBank(sigma=1.0)
    info = bank.update_many(["a", "b"], [np.nan, 1.0])
    assert np.isnan(info.log_consistency[0]) and np.isnan(info.discount[0])
    assert not info.outlier_detected[0] and info.t.tolist() == [0, 0]
    assert np.isnan(info.mean[0]) and info.mean[1] == 1.0


def test_new_ids_need_a_prior_with_the_default_models():
    bank = DetectorBank()
    with pytest.raises(ValueError, match=r"stream 'a' needs a warm-up or a prior"):
        bank.update_many(["a"], [1.0])
    assert len(bank) == 0
    bank.add(["a"], prior=SegmentPrior(0.0, 1.0, 100.0))
    with pytest.raises(ValueError, match="needs a warm-up or a prior"):
        bank.update_many(["a", "b"], [1.0, 2.0])
    assert bank.t("a") == 0  # nothing processed by the refused call


@pytest.mark.parametrize("ids, values, match", [
    ("ab", [1.0, 2.0], "ids must be a sequence of hashable labels"),
    (5, [1.0], "ids must be a sequence of hashable labels"),
    ([[1], [2]], [1.0, 2.0], "ids must be hashable labels"),
    (["a", "a"], [1.0, 2.0], "ids must be distinct within one call"),
    (["c", "a", "a"], [1.0, 2.0, 3.0], "ids must be distinct within one call"),  # no "c" made
    ([1, 1.0], [1.0, 2.0], "ids must be distinct within one call"),  # equal labels
    (["a", "b"], [1.0], r"values must be one number per id .*: 2 of them, got shape \(1,\)"),
    (["a"], [np.inf], "values must be one number per id.*got inf at position 0"),
    (["a", "b"], [1.0, 1e200], "values must be .*at most 1e\\+150.*position 1"),
    (["a"], ["x"], "values must be"),
    (["a"], [[1.0]], "values must be"),
])
def test_bad_input_is_refused_by_name(ids, values, match):
    bank = DetectorBank(sigma=1.0)
    bank.update_many(["a", "b"], [0.0, 0.0])
    with pytest.raises(ValueError, match=match):
        bank.update_many(ids, values)
    assert bank.t("a") == 1 and len(bank) == 2


def test_add_refuses_bad_input_by_name():
    bank = DetectorBank()
    bank.add(["a"], prior=SegmentPrior(0.0, 1.0, 10.0))
    with pytest.raises(ValueError, match="ids must be new: 'a' already in the bank"):
        bank.add(["a"], prior=SegmentPrior(0.0, 1.0, 10.0))
    with pytest.raises(ValueError, match=r"warm_up must have one series per id \(2\), got 1"):
        bank.add(["b", "c"], warm_up=np.zeros((1, 10)))
    with pytest.raises(ValueError, match="give warm_up or prior, not both"):
        bank.add(["b"], warm_up=[[1.0, 2.0]], prior=SegmentPrior(0.0, 1.0, 10.0))
    with pytest.raises(ValueError, match="prior must be a SegmentPrior"):
        bank.add(["b"], prior=[3.0])
    with pytest.raises(ValueError, match="warm_up of stream 'b'"):
        bank.add(["b"], warm_up=[[1.0, np.inf]])
    with pytest.raises(ValueError, match="warm_up must be an array of shape"):
        bank.add(["b"], warm_up=np.zeros(3))
    with pytest.raises(ValueError, match="ids must be distinct"):
        bank.add(["b", "b"], prior=SegmentPrior(0.0, 1.0, 10.0))
    with pytest.raises(KeyError, match="no stream with id 'zz'"):
        bank.changepoints("zz")
    with pytest.raises(ValueError, match="hazard"):
        DetectorBank(hazard=2.0)
    with pytest.raises(ValueError, match=r"period must be None or a whole number of records "
                                         r"in \[2, 1000000\], got 1"):
        DetectorBank(period=1)
    with pytest.raises(ValueError, match=r"period must be None or a whole number .* got 2.5"):
        bank.add(["b"], prior=SegmentPrior(0.0, 1.0, 10.0), period=2.5)
    with pytest.raises(ValueError, match=r"period must be one period \(or None\) per id "
                                         r"\(1\), got 2"):
        bank.add(["b"], prior=SegmentPrior(0.0, 1.0, 10.0), period=[24, 12])
    assert bank.ids == ["a"]


def test_exported_at_the_top_level():
    assert ps.DetectorBank is DetectorBank
    assert "DetectorBank" in repr(DetectorBank(sigma=1.0))


def record_discount(post, row, out):  # compiled into the bank's loop by the test below
    post[row, 0] += 1.0
    post[row, 1] = out[5]  # BANK_COLUMNS: the discount


@NO_NUMBA
def test_the_per_stream_hook_sees_each_stream_step():
    """The seam for a per-stream signal: compiled_streams(..., post_step) is called after
    each stream's step with the bank's per-stream state, the stream's row and its outputs."""
    from possibly.changepoint.compiled_engine import BANK_COLUMNS, compiled_streams

    assert BANK_COLUMNS[5] == "discount"
    bank = DetectorBank(sigma=1.0, engine="numba")
    bank.update_many(["a", "b", "c"], [0.0, 0.0, 0.0])
    bank._post = np.zeros((3, 2))
    bank._driver = compiled_streams(bank._compiled.kernels[0].functions,
                                    bank._settings.shape[2], False, record_discount)
    info = bank.update_many(["c", "b"], [0.5, 4.0])
    assert bank._post.tolist() == [[0.0, 0.0], [1.0, info.discount[1]], [1.0, info.discount[0]]]
    assert info.discount[1] < 0.5 < info.discount[0]


def allocating_estimate(params, runs, j):  # the trend kernel's estimate, through an array
    level = np.empty(1)
    level[0] = params[3] + params[4] * runs[j, 0]
    return level[0] if runs[j, 14] != 0.0 else np.nan


class AllocatingLevel(ps.PolynomialTrend):
    """A level whose compiled kernel allocates an array in a kernel function."""

    def compiled_kernel(self):
        kernel = ps.PolynomialTrend(self.degree, prior=self.prior).compiled_kernel()
        return kernel._replace(functions=ALLOCATING)


ALLOCATING = ps.PolynomialTrend(0).compiled_kernel().functions._replace(
    estimate=allocating_estimate)


@NO_NUMBA
def test_a_kernel_that_allocates_runs_with_reference_counts():
    """The compiled loop without numba's runtime cannot allocate: such a kernel falls back to
    the loop with reference counts, with the same numbers as the detector."""
    data = streams(2, 60, seed=8)
    model = AllocatingLevel(0, prior=SegmentPrior(0.0, 5.0, 60.0))
    bank = DetectorBank(model=model, engine="numba")
    got = replay(bank, dict(enumerate(data)), np.random.default_rng(4), calls=500)
    assert not bank._driver.py_func.__qualname__.endswith("_plain")
    for i, d in enumerate(data):
        assert_same(got[i], expected_steps(ChangepointDetector(model=model, engine="numba"),
                                           d), i)


@NO_NUMBA
@pytest.mark.parametrize("where", ["bank", "stream"])
def test_an_allocating_kernel_is_tried_without_reference_counts_once(where, monkeypatch):
    """numba does not remember a failed compile: the next bank or stream of a kernel that
    allocates goes straight to the loop with reference counts, instead of compiling (and
    failing) again."""
    from possibly.changepoint import bank as bank_module

    name = {"bank": "compiled_streams", "stream": "compiled_stepper"}[where]
    module = {"bank": bank_module, "stream": compiled_engine}[where]
    original = getattr(module, name)
    made = []

    def counting(*args, **kwargs):
        bound = inspect.signature(original).bind(*args, **kwargs)
        made.append(bound.arguments.get("refcounts", True))
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, counting)
    # forget what earlier tests of this process compiled
    monkeypatch.setattr(compiled_engine, "_NEEDS_REFCOUNTS", set())
    model = AllocatingLevel(0, prior=SegmentPrior(0.0, 5.0, 60.0))
    data = streams(3, 30, seed=9)
    for d in data:  # three banks or streams of the same kernel
        if where == "bank":
            bank = DetectorBank(model=model, engine="numba", parallel=False)
            bank.update_many(["a", "b"], d[:2])
        else:
            ChangepointDetector(model=model, engine="numba").update(d[0])
    assert made.count(False) == 1
    assert made.count(True) == 3


@NO_NUMBA
@pytest.mark.parametrize("parallel", [False, True])
def test_a_dropped_bank_is_freed_after_its_first_compiled_call(parallel):
    # compiling the bank's driver at its first call must not keep the call's arrays (and so
    # the bank) alive once the bank is dropped
    import gc
    import weakref

    bank = DetectorBank(engine="numba", parallel=parallel)
    bank.add(["a", "b"], warm_up=streams(2, 40, seed=3))
    bank.update_many(["a", "b"], [0.5, 1.5])
    gone = weakref.ref(bank)
    del bank
    gc.collect()
    assert gone() is None
