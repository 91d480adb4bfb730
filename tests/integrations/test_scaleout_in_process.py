"""A pandas table in this process runs without a Dask task graph, with the tables Dask gives.

Planning a graph (cutting the frame into partitions, keys, tokens) cost more than grouping
the series; the run in this process now groups the table itself. Its tables must be those of
the same table read through Dask (a dask DataFrame input, which still goes through the
graph): same values, same column types (Dask turns text columns into pyarrow strings).
"""

from __future__ import annotations

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")
dd = pytest.importorskip("dask.dataframe")

import possibly as ps  # noqa: E402
from possibly.integrations.scaleout import changepoints_many, kalman_many  # noqa: E402

N = 60


def fleet(ids: list) -> pd.DataFrame:
    """Three series (a step up, a step down with a spike, flat), their rows interleaved (row
    ``t`` of each in turn); ``t`` counts the rows of each series, ``stamp`` is it as text."""
    t = np.arange(N)
    noise = np.resize([0.2, -0.2, 0.0], N)
    parts = []
    for i, key in enumerate(ids):
        v = (1, -1, 0)[i] * 5.0 * (t >= N // 2) + noise
        if i == 1:
            v[10] += 30.0
        parts.append(pd.DataFrame({"sensor": [key] * N, "v": v, "t": t}))
    df = pd.concat(parts).sort_values("t", kind="stable").reset_index(drop=True)
    df["stamp"] = pd.Series([f"t{k:03d}" for k in df["t"]], dtype=object)
    return df


IDS = {
    "integers": [3, 1, 2],
    "text": ["pump", "fan", "valve"],
    "object text": pd.Series(["pump", "fan", "valve"], dtype=object).tolist(),
    "dates": list(pd.to_datetime(["2024-03-01", "2024-01-01", "2024-02-01"])),
}


def fleet_of(kind: str) -> pd.DataFrame:
    df = fleet(IDS[kind])
    if kind == "object text":
        df["sensor"] = df["sensor"].astype(object)
    return df


def test_no_task_graph_for_a_pandas_table_in_this_process(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a task graph was planned for a pandas table in this process")

    monkeypatch.setattr(dd, "from_pandas", refuse)
    df = fleet_of("text")
    res = changepoints_many(df, "sensor", "v", scheduler="synchronous", sigma=0.2)
    assert res.summary["n_changepoints"].tolist() == [1, 1, 0]  # fan, pump, valve
    kalman_many(df, "sensor", "v", ps.filters.constant_velocity(), scheduler="synchronous")


@pytest.mark.parametrize("kind", list(IDS))
@pytest.mark.parametrize("time_column", [None, "t", "stamp"])
def test_changepoint_tables_as_through_dask(kind, time_column):
    df = fleet_of(kind)
    through = dd.from_pandas(df, npartitions=2, sort=False)
    kw = {"scheduler": "synchronous", "time_column": time_column, "sigma": 0.2}
    here, dask = changepoints_many(df, "sensor", "v", **kw), changepoints_many(
        through, "sensor", "v", **kw)
    pd.testing.assert_frame_equal(here.events, dask.events)
    pd.testing.assert_frame_equal(here.summary, dask.summary)
    assert len(here.events) > 0


@pytest.mark.parametrize("kind", list(IDS))
def test_kalman_tables_as_through_dask(kind):
    df = fleet_of(kind)
    through = dd.from_pandas(df, npartitions=2, sort=False)
    model = ps.filters.constant_velocity()
    kw = {"scheduler": "synchronous", "time_column": "stamp"}
    here, dask = kalman_many(df, "sensor", "v", model, **kw), kalman_many(
        through, "sensor", "v", model, **kw)
    pd.testing.assert_frame_equal(here.states, dask.states)
    pd.testing.assert_frame_equal(here.summary, dask.summary)


def test_bad_ids_refused_in_this_process():
    df = pd.DataFrame({"sensor": ["a", None, "b"], "v": [1.0, 2.0, 3.0]})
    with pytest.raises(ValueError, match="'sensor' has missing values"):
        changepoints_many(df, "sensor", "v", scheduler="synchronous", sigma=1.0)
    with pytest.raises(ValueError, match="no rows"):
        changepoints_many(df.iloc[:0], "sensor", "v", scheduler="synchronous", sigma=1.0)
