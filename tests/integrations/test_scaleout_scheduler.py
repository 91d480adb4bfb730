"""Scale-out picks its scheduler by the size of the job (#13 item 5, #16): a small table runs in
this process without starting a cluster; a large one (or an explicit ``n_workers``) starts a
local cluster. The cluster is replaced by a stub that records being started."""

from __future__ import annotations

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")
distributed = pytest.importorskip("distributed")

import possibly as ps  # noqa: E402
from possibly.cli import main  # noqa: E402
from possibly.integrations import scaleout  # noqa: E402


class ClusterStarted(Exception):
    pass


@pytest.fixture
def no_cluster(monkeypatch):
    """Starting a LocalCluster raises ClusterStarted (and records the call)."""
    calls = []

    def stub(*args, **kwargs):
        calls.append(kwargs)
        raise ClusterStarted

    monkeypatch.setattr(distributed, "LocalCluster", stub)
    return calls


def three_series(n=400):
    ys = {k: ps.datasets.piecewise_constant(n, n_changes=2, seed=s)[0]
          for s, k in enumerate("abc")}
    frame = pd.DataFrame({"id": np.repeat(list(ys), n), "y": np.concatenate(list(ys.values()))})
    return ys, frame


def test_small_job_runs_without_a_cluster(no_cluster, tmp_path):
    # the 3 x 400-point job of #13: 17.6 s on the default local cluster, 3.4 s without
    ys, frame = three_series()
    res = scaleout.changepoints_many(frame, "id", "y", sigma=1.0)
    assert no_cluster == []
    for k, y in ys.items():
        events = res.events[(res.events["id"] == k) & (res.events["kind"] == "changepoint")]
        got = events["index"].tolist()
        assert got == ps.ChangepointDetector(sigma=1.0).fit(y).changepoints.tolist()
    path = tmp_path / "fleet.parquet"
    frame.to_parquet(path, index=False)
    assert scaleout._job_rows(str(path)) == len(frame) == 1200  # from the Parquet metadata
    model = ps.filters.constant_velocity()
    res = scaleout.kalman_many(path, "id", "y", model)
    assert no_cluster == [] and res.summary["n_steps"].tolist() == [400, 400, 400]


def test_cli_small_job_runs_without_a_cluster(no_cluster, tmp_path, capsys):
    _, frame = three_series(100)
    path = tmp_path / "fleet.parquet"
    frame.to_parquet(path, index=False)
    assert main(["changepoint-many", str(path), "--id", "id", "--value", "y"]) == 0
    assert no_cluster == [] and capsys.readouterr().out.startswith("id,index,kind,value")


def test_large_or_sized_job_starts_a_cluster(no_cluster, monkeypatch):
    _, frame = three_series(100)
    with pytest.raises(ClusterStarted):  # n_workers asks for a cluster whatever the size
        scaleout.changepoints_many(frame, "id", "y", sigma=1.0, n_workers=2)
    assert no_cluster[-1]["n_workers"] == 2
    monkeypatch.setattr(scaleout, "LOCAL_CLUSTER_MIN_ROWS", len(frame))
    with pytest.raises(ClusterStarted):  # as many rows as the threshold: a cluster
        scaleout.changepoints_many(frame, "id", "y", sigma=1.0)
    with pytest.raises(ClusterStarted):
        scaleout.kalman_many(frame, "id", "y", ps.filters.constant_velocity())
    assert len(no_cluster) == 3
    monkeypatch.setattr(scaleout, "LOCAL_CLUSTER_MIN_ROWS", len(frame) + 1)
    scaleout.changepoints_many(frame, "id", "y", sigma=1.0)
    assert len(no_cluster) == 3


def test_unknown_size_starts_a_cluster(no_cluster):
    dd = pytest.importorskip("dask.dataframe")
    _, frame = three_series(100)
    assert scaleout._job_rows(dd.from_pandas(frame, npartitions=2)) is None
    with pytest.raises(ClusterStarted):
        scaleout.changepoints_many(dd.from_pandas(frame, npartitions=2), "id", "y", sigma=1.0)
    assert scaleout._job_rows("no such file.parquet") is None
