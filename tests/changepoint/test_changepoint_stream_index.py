"""Time stamps after streaming: ``result().index`` after ``update``/``extend`` is the index of
fit's input extended by the stamps of the streamed observations (given, or continued by the
index's regular step), also across a pickle; and the result's repr is a short summary.

Expected indexes are built independently with pandas (``date_range``, ``RangeIndex``...), and
streamed results are compared with one ``fit`` of the whole series."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import possibly as ps

pd = pytest.importorskip("pandas")


def step_series(index) -> pd.Series:
    n = len(index)
    level = np.where(np.arange(n) < n // 2, 0.0, 5.0)
    return pd.Series(level + np.resize([0.1, -0.1, 0.0, 0.05], n), index=index)


def detector() -> ps.ChangepointDetector:
    return ps.ChangepointDetector(sigma=0.2, hazard=1e-3)


@pytest.mark.parametrize("index", [
    pd.date_range("2024-01-01", periods=60, freq="D"),
    pd.date_range("2024-01-31", periods=60, freq="ME"),
    pd.period_range("2020-01", periods=60, freq="M"),
    pd.RangeIndex(10, 130, 2),
    pd.Index(np.arange(1871, 1931)),              # years: an evenly spaced integer index
    pd.DatetimeIndex(pd.date_range("2024-01-01", periods=60, freq="h").tolist()),  # no freq set
])
def test_update_and_extend_continue_a_regular_index(index):
    y = step_series(index)
    whole = detector().fit(y)
    det = detector()
    det.fit(y.iloc[:20])
    for x in y.iloc[20:30].to_numpy():
        det.update(x)
    det.extend(y.iloc[30:45].to_numpy())
    det.extend(y.iloc[45:].to_numpy())
    res = det.result()
    assert res.index is not None and res.index.equals(index)
    assert res.changepoints.tolist() == whole.changepoints.tolist() == [30]
    assert res.to_frame().index.equals(index)


def test_given_stamps_extend_the_index():
    stamps = pd.DatetimeIndex(["2024-01-01", "2024-01-02", "2024-01-04", "2024-01-09"])
    det = detector()
    det.fit(pd.Series([0.0, 0.1, -0.1, 0.0], index=stamps))
    det.update(0.1, time=pd.Timestamp("2024-01-10"))
    det.update(5.0, time="2024-01-12")                    # text: read as the index's dtype
    det.extend(pd.Series([5.1, 4.9], index=pd.DatetimeIndex(["2024-01-13", "2024-01-20"])))
    expect = pd.DatetimeIndex(["2024-01-01", "2024-01-02", "2024-01-04", "2024-01-09",
                               "2024-01-10", "2024-01-12", "2024-01-13", "2024-01-20"])
    assert det.result().index.equals(expect)


@pytest.mark.parametrize("index", [
    pd.DatetimeIndex(["2024-01-01", "2024-01-02", "2024-01-04", "2024-01-09"]),  # irregular
    pd.Index(["a", "b", "c", "d"]),
    pd.Index([1, 2, 4, 8]),
])
def test_an_index_without_a_step_needs_the_stamp(index):
    det = detector()
    det.fit(pd.Series([0.0, 0.1, -0.1, 0.0], index=index))
    with pytest.raises(ValueError, match="time must be given"):
        det.update(0.1)
    with pytest.raises(ValueError, match="time must be given"):
        det.extend([0.1, 0.2])
    assert det.t == 4 and len(det.result().y) == 4          # nothing was processed
    det.update(0.1, time=index[-1])
    assert det.result().index.tolist() == [*index.tolist(), index[-1]]


def test_a_positional_stream_stays_positional():
    det = detector()
    det.fit(np.zeros(10))
    det.update(0.1)
    det.extend(pd.Series([0.0, 0.2], index=[100, 101]))     # its index is not used
    assert det.result().index is None and det.t == 13
    with pytest.raises(ValueError, match="time: the observations so far have no time"):
        det.update(0.0, time=5)
    assert det.t == 13


def test_streaming_with_stamps_from_the_first_observation():
    det = detector()
    days = pd.date_range("2024-03-01", periods=5, freq="D")
    for day, x in zip(days, [0.0, 0.1, -0.1, 5.0, 5.1], strict=True):
        det.update(x, time=day)
    assert det.result().index.equals(days)


def test_pickle_resume_keeps_the_stamps():
    index = pd.date_range("2024-01-01", periods=80, freq="D")
    y = step_series(index)
    whole = detector().fit(y)
    det = detector()
    det.fit(y.iloc[:25])
    for x in y.iloc[25:35].to_numpy():
        det.update(x)
    resumed = pickle.loads(pickle.dumps(det))
    resumed.extend(y.iloc[35:60])
    for t, x in y.iloc[60:].items():
        resumed.update(x, time=t)
    res = resumed.result()
    assert res.index.equals(index)
    assert res.changepoints.tolist() == whole.changepoints.tolist() == [40]
    np.testing.assert_array_equal(res.mean, whole.mean)


def test_repr_is_a_short_summary():
    n = 20_000
    index = pd.date_range("2020-01-01", periods=n, freq="min")
    y = np.resize([0.0, 0.1, -0.1, 0.05], n)
    y[np.arange(7, n, 500)] = 50.0                                       # 40 spikes
    y[n // 2:] += 5.0
    res = ps.ChangepointDetector().fit(pd.Series(y, index=index))
    text = repr(res)
    lines = text.splitlines()
    assert len(lines) == 4 and max(map(len, lines)) <= 100, text
    assert lines[0] == (f"ChangepointResult({n} observations, 0 missing, index "
                        f"2020-01-01 00:00:00 ... {index[-1]}")
    assert lines[2] == f"  change points (1): [{n // 2}]"
    spikes = np.arange(7, n, 500)
    assert res.outliers.tolist() == spikes.tolist()
    assert lines[3] == ("  outliers (40): [7, 507, 1007, 1507, 2007, ..., 17507, 18007, 18507, "
                        "19007, 19507])")
    assert "array(" not in text


def test_stamps_of_another_kind_or_going_back_are_refused():
    """A number is no stamp of a DatetimeIndex (pandas would make it 1970), and time does not
    go back; a Series with pandas' default index carries positions, not stamps."""
    days = pd.date_range("2024-01-01", periods=30, freq="D")
    det = ps.ChangepointDetector(sigma=1.0)
    det.fit(pd.Series(np.zeros(30), index=days))
    det.extend(pd.Series([0.1, 0.2]))  # default index: continues by the frequency
    assert det.result().index[-2:].tolist() == list(pd.date_range("2024-01-31", periods=2))
    with pytest.raises(ValueError, match="time must be a date/time stamp"):
        det.update(0.3, time=5)
    with pytest.raises(ValueError, match="time must not go back"):
        det.update(0.3, time=pd.Timestamp("2024-01-05"))
    det.update(0.3, time="2024-02-10")  # text is read as a stamp of the index's kind
    assert det.result().index[-1] == pd.Timestamp("2024-02-10")
    assert det.t == 33 and (np.diff(det.result().index.asi8) > 0).all()


@pytest.mark.parametrize("bad", [pd.NaT, np.datetime64("NaT")])
def test_a_missing_time_stamp_is_refused_and_changes_nothing(bad) -> None:
    y = pd.Series(np.arange(30.0) % 3, index=pd.date_range("2024-01-01", periods=30, freq="h"))
    det = ps.ChangepointDetector(period=None)
    det.fit(y)
    with pytest.raises(ValueError, match="time must be a time stamp, got NaT"):
        det.update(0.5, time=bad)
    with pytest.raises(ValueError, match="time must be a time stamp, got NaT"):
        det.extend(pd.Series([0.5, 1.0], index=pd.DatetimeIndex([y.index[-1], pd.NaT])))
    det.update(0.5)  # the stream goes on by its hour
    assert det.t == 31 and det.result().index[-1] == y.index[-1] + pd.Timedelta(hours=1)


def test_a_nan_stamp_of_a_numbered_index_is_refused() -> None:
    det = ps.ChangepointDetector(period=None)
    det.fit(pd.Series(np.zeros(10), index=np.arange(10) * 2))
    with pytest.raises(ValueError, match="time must be a time stamp, got nan"):
        det.update(0.1, time=float("nan"))
    assert det.t == 10
