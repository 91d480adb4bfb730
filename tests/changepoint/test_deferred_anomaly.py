"""fit defers the anomaly calibration of its records until they are read: every output is the
one an eager calibration gives, whatever is read first (the result, an update, a pickle, a
peek), from whichever thread."""

from __future__ import annotations

import pickle
import threading

import numpy as np
import pytest

import possibly as ps
from possibly.changepoint import anomaly


def _series(seed: int = 0, n: int = 700) -> np.ndarray:
    rng = np.random.default_rng(seed)
    y = np.round(rng.normal(size=n) + np.where(np.arange(n) > 400, 3.0, 0.0), 1)
    y[[50, 300]] = [12.0, np.nan]
    return y


def _detector(y: np.ndarray, **kwargs) -> ps.ChangepointDetector:
    """The default family with priors from the first 600 records: fit = fit + update."""
    prior = ps.changepoint.automatic_prior(y[:600])
    return ps.ChangepointDetector(ps.changepoint.model_family(prior=prior), **kwargs)


def _eager(det: ps.ChangepointDetector, y: np.ndarray) -> np.ndarray:
    """The calibration run at once from the definition (the numpy step), on the records and
    the surprises ``−log c`` the recursion gave."""
    res = ps.ChangepointDetector(det.model, period=det.period_, engine=det.engine).fit(y)
    state, out = anomaly.new_calibration(det.period_), np.empty(len(y))
    values = np.where(np.isnan(y), np.nan, y)
    anomaly.calibrate(state, values, -res.log_consistency, out)
    return out


@pytest.mark.parametrize("engine", ["numpy", "auto"])
@pytest.mark.parametrize("period", [None, 24])
def test_every_reading_order_gives_the_same_numbers(engine, period):
    y = _series()
    head, tail = y[:600], y[600:]
    reference = _detector(y, engine=engine, period=period).fit(y).anomaly
    np.testing.assert_array_equal(reference, _eager(_detector(y, engine=engine, period=period),
                                                    y))
    outcomes = {}
    for first in ["result", "update", "extend", "pickle", "peek", "result()", "nothing"]:
        det = _detector(y, engine=engine, period=period)
        res = det.fit(head)
        if first == "result":
            res.anomaly  # noqa: B018
        elif first == "pickle":
            det = pickle.loads(pickle.dumps(det))
        elif first == "peek":
            assert det.peek_anomaly(tail[0]) == pytest.approx(reference[600], abs=0.0)
        elif first == "result()":
            assert det.result().anomaly is not det.result().anomaly  # each its own copy
        if first == "extend":
            det.extend(tail[:50])
            rest = tail[50:]
        else:
            rest = tail
        streamed = [det.update(float(x)).anomaly for x in rest]
        np.testing.assert_array_equal(streamed, reference[len(y) - len(rest):])
        np.testing.assert_array_equal(res.anomaly, reference[:600])  # not a stale view
        np.testing.assert_array_equal(det.result().anomaly, reference)
        outcomes[first] = pickle.dumps(det.result().anomaly)
    assert len(set(outcomes.values())) == 1


def test_a_result_pickled_unread_holds_its_anomalies():
    y = _series(1)
    det = ps.ChangepointDetector()
    res = det.fit(y)
    det.fit(y[::-1].copy())  # the detector moves on: the first result keeps its own records
    loaded = pickle.loads(pickle.dumps(res))
    assert isinstance(loaded.__dict__["anomaly"], np.ndarray)
    np.testing.assert_array_equal(loaded.anomaly, _eager(det, y))
    np.testing.assert_array_equal(res.anomaly, loaded.anomaly)


def test_without_history_the_stream_continues_the_same():
    y = _series(2)
    ref = _detector(y).fit(y).anomaly
    det = _detector(y, history=False)
    res = det.fit(y[:500])
    streamed = [det.update(float(x)).anomaly for x in y[500:]]
    np.testing.assert_array_equal(streamed, ref[500:])
    np.testing.assert_array_equal(res.anomaly, ref[:500])


def test_the_calibration_runs_once_on_first_need(monkeypatch):
    calls = []
    real = anomaly.calibrate

    def counted(*args):
        calls.append(len(args[1]))
        return real(*args)

    monkeypatch.setattr(anomaly, "calibrate", counted)
    y = _series(3)
    det = ps.ChangepointDetector(engine="numpy")
    res = det.fit(y)
    assert calls == []
    first = res.anomaly
    assert calls == [len(y)] and res.anomaly is first
    det.update(0.5)  # the state comes from the same run
    assert calls == [len(y), 1]


def test_an_interrupted_calibration_stays_pending(monkeypatch):
    y = _series(4)
    det = ps.ChangepointDetector(engine="numpy")
    res = det.fit(y)
    real = anomaly.calibrate

    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(anomaly, "calibrate", interrupted)
    with pytest.raises(KeyboardInterrupt):
        res.anomaly  # noqa: B018
    with pytest.raises(KeyboardInterrupt):
        det.update(0.5)
    monkeypatch.setattr(anomaly, "calibrate", real)
    assert det.t == len(y)  # the interrupted update changed nothing
    np.testing.assert_array_equal(res.anomaly, _eager(det, y))


def test_a_result_read_from_another_thread_while_the_detector_streams():
    y = _series(5, 3000)
    ref = _detector(y).fit(y).anomaly
    for _ in range(3):
        det = _detector(y)
        res = det.fit(y[:2500])
        got: list[np.ndarray] = []
        readers = [threading.Thread(target=lambda r=res, g=got: g.append(r.anomaly))
                   for _ in range(4)]
        for r in readers:
            r.start()
        streamed = [det.update(float(x)).anomaly for x in y[2500:]]
        for r in readers:
            r.join()
        assert all(g is got[0] for g in got)  # one array, whichever thread ran it
        np.testing.assert_array_equal(got[0], ref[:2500])
        np.testing.assert_array_equal(streamed, ref[2500:])


def test_the_pending_calibration_is_dropped_by_reset_and_refit():
    y = _series(6)
    det = ps.ChangepointDetector()
    first = det.fit(y)
    det.reset()
    assert det._pending is None
    second = det.fit(y[:300])
    np.testing.assert_array_equal(first.anomaly, _eager(det, y))
    np.testing.assert_array_equal(second.anomaly, _eager(det, y[:300]))
