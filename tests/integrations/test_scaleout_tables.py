"""The tables of the scale-out, column types included, against one series at a time.

The reference builds each series' table with pandas, one frame per series (the plain
detector or filter on that series alone, its events sorted by position, change points before
outliers), and joins them: values and column types must be the same, on ids and time stamps of
several types, series sorted by time, series without any event and a series that fails.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")
pytest.importorskip("dask")

import possibly as ps  # noqa: E402
from possibly.integrations.scaleout import changepoints_many, kalman_many  # noqa: E402

SIGMA = 0.2


def fleet(ids, n: int = 60) -> pd.DataFrame:
    """Series stepping up, stepping down (with a spike), and flat; rows of the series
    interleaved; ``t`` counts the rows of each series."""
    noise = np.resize([0.2, -0.2, 0.0], n)
    step = np.r_[np.zeros(n // 2), np.full(n - n // 2, 5.0)]
    shapes = [step + noise, -step + noise, noise.copy()]
    shapes[1][10] += 30.0
    frames = [pd.DataFrame({"sensor": [k] * n, "v": shapes[i % 3], "t": np.arange(n)})
              for i, k in enumerate(ids)]
    df = pd.concat(frames, ignore_index=True)
    return df.iloc[np.lexsort((df.index % len(ids), df["t"].to_numpy()))].reset_index(drop=True)


def reference_events(df: pd.DataFrame, time_column: str | None = None) -> pd.DataFrame:
    frames = []
    for key, g in df.groupby("sensor", sort=False):
        if time_column is not None and pd.api.types.is_numeric_dtype(g[time_column]):
            g = g.sort_values(time_column, kind="stable")
        y = g["v"].to_numpy(dtype=float)
        try:
            res = ps.ChangepointDetector(sigma=SIGMA).fit(y)
            idx = np.r_[res.changepoints, res.outliers].astype(np.int64)
            kind = ["changepoint"] * res.changepoints.size + ["outlier"] * res.outliers.size
        except ValueError:
            idx, kind = np.empty(0, np.int64), np.empty(0, str)
        ev = pd.DataFrame({"index": idx, "kind": kind, "value": y[idx]})
        ev = ev.sort_values(["index", "kind"], kind="stable", ignore_index=True)
        if time_column is not None:
            ev.insert(1, "time", g[time_column].iloc[ev["index"]].to_numpy())
        frames.append(ev.assign(id=key)[["id", *ev.columns]])
    out = pd.concat(frames, ignore_index=True)
    out = out.sort_values(["id", "index"], kind="stable", ignore_index=True)
    out["kind"] = out["kind"].astype(str)
    return out


IDS = {"text": ["b", "a", "c", "d"], "integers": [7, 3, 5, 1],
       "dates": list(pd.to_datetime(["2024-03-01", "2024-01-01", "2024-02-01", "2024-04-01"]))}
TIMES = {"none": None, "numbers": lambda t: t.astype(float),
         "text": lambda t: "t" + t.astype(str),
         "zoned": lambda t: pd.Timestamp("2024-01-01", tz="Europe/Paris")
         + pd.to_timedelta(t, "min")}


@pytest.mark.parametrize("ids", IDS)
@pytest.mark.parametrize("times", TIMES)
def test_events_as_one_series_at_a_time(ids, times):
    df = fleet(IDS[ids])
    time_column = None if TIMES[times] is None else "t"
    if time_column is not None:
        df["t"] = TIMES[times](df["t"])
    else:
        df = df.drop(columns="t")
    if times == "numbers":  # one series out of time order: sorted first
        first = df.index[df["sensor"] == IDS[ids][0]]
        df.loc[first[:4], "t"] = df.loc[first[:4], "t"].to_numpy()[::-1]
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "1 series were not in time order", UserWarning)
        got = changepoints_many(df, "sensor", "v", scheduler="synchronous", sigma=SIGMA,
                                time_column=time_column).events
    pd.testing.assert_frame_equal(got, reference_events(df, time_column), check_exact=True)


@pytest.mark.parametrize("times", ["text", "zoned"])
def test_every_series_with_events_keeps_the_type_of_its_stamps(times):
    df = fleet(["a", "b"])  # a step up and a step down: every series has events
    df["t"] = TIMES[times](df["t"])
    got = changepoints_many(df, "sensor", "v", scheduler="synchronous", sigma=SIGMA,
                            time_column="t").events
    assert len(got) >= 2
    pd.testing.assert_frame_equal(got, reference_events(df, "t"), check_exact=True)


def test_a_series_that_fails_has_no_events():
    df = pd.concat([fleet(["a", "b", "c"]),
                    pd.DataFrame({"sensor": ["z"] * 3, "v": [np.nan] * 3, "t": [0, 1, 2]})],
                   ignore_index=True)
    res = changepoints_many(df, "sensor", "v", scheduler="synchronous", sigma=SIGMA,
                            time_column="t")
    assert res.summary.set_index("id").loc["z", "error"] is not None
    pd.testing.assert_frame_equal(res.events, reference_events(df, "t"), check_exact=True)


@pytest.mark.parametrize("lengths", [(50, 50, 50), (50, 30, 50, 7)])
def test_kalman_states_as_one_track_at_a_time(lengths):
    rng = np.random.default_rng(3)
    ids = [f"k{i}" for i in range(len(lengths))]
    df = pd.concat([pd.DataFrame({"sensor": k, "v": np.cumsum(rng.normal(size=n)),
                                  "t": pd.Timestamp("2024-01-01", tz="UTC")
                                  + pd.to_timedelta(np.arange(n), "s")})
                    for k, n in zip(ids, lengths, strict=True)], ignore_index=True)
    model = ps.filters.constant_velocity(dt=1.0, accel_sd=0.1, obs_sd=1.0)
    got = kalman_many(df, "sensor", "v", model, scheduler="synchronous", time_column="t")
    frames = []
    for key, g in df.groupby("sensor", sort=False):
        res = ps.KalmanFilter(model).filter(g[["v"]].to_numpy())
        frames.append(pd.DataFrame({
            "id": key, "step": np.arange(len(g), dtype=np.int64), "time": g["t"].to_numpy(),
            "mean_position": res.mean[:, 0], "mean_velocity": res.mean[:, 1],
            "consistency": res.consistency, "discount": res.discount}))
    expected = pd.concat(frames, ignore_index=True).sort_values(["id", "step"],
                                                                ignore_index=True)
    pd.testing.assert_frame_equal(got.states, expected, check_exact=True)
