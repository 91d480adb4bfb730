"""``DIR/series/`` of the scale-out runs is a Hive-partitioned dataset: read as one table, it
gives every series' rows with its ``id`` (from the directory names) and, for the change points
with a time column, the ``time`` of each event. Expected rows come from the plain detector run
on each series alone."""

from __future__ import annotations

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")
pytest.importorskip("dask")

import possibly as ps  # noqa: E402
from possibly.cli import main  # noqa: E402
from possibly.integrations.scaleout import changepoints_many, kalman_many  # noqa: E402

#: ids that differ only in case, hold a '/' or a '%', and one series without any event
IDS = ("!flat", "Pump", "pump", "a/b", "a%2Fb")


def fleet(n: int = 60) -> tuple[pd.DataFrame, dict]:
    noise = np.resize([0.2, -0.2, 0.0], n)
    step = np.r_[np.zeros(n // 2), np.full(n - n // 2, 5.0)]
    stamps = pd.date_range("2024-01-01", periods=n, freq="D")
    series = {k: (0.0 if k == "!flat" else (1 + i) * step) + noise for i, k in enumerate(IDS)}
    frames = [pd.DataFrame({"sensor": pd.Series([k] * n, dtype=object), "when": stamps,
                            "v": y}) for k, y in series.items()]
    return pd.concat(frames, ignore_index=True), series


def expected_events(series: dict, stamps) -> pd.DataFrame:
    rows = []
    for key, y in series.items():
        res = ps.ChangepointDetector(sigma=0.2).fit(y)
        rows += [(key, int(i), stamps[i], "changepoint") for i in res.changepoints]
        rows += [(key, int(i), stamps[i], "outlier") for i in res.outliers]
    return pd.DataFrame(rows, columns=["id", "index", "time", "kind"])


def rows(frame: pd.DataFrame) -> list[tuple]:
    return sorted((str(r.id), int(r.index), pd.Timestamp(r.time), str(r.kind))
                  for r in frame.itertuples(index=False))


def test_changepoint_series_read_back_with_id_and_time(tmp_path):
    df, series = fleet()
    out = tmp_path / "out"
    res = changepoints_many(df, "sensor", "v", scheduler="synchronous", out=out,
                            time_column="when", sigma=0.2)
    assert res.summary.set_index("id").loc["!flat", "n_changepoints"] == 0
    got = pd.read_parquet(out / "series")
    assert {"id", "index", "time", "kind", "value"} <= set(got.columns)
    want = expected_events(series, df["when"].iloc[:60].tolist())
    assert len(want) >= 4 and rows(got) == rows(want)
    assert set(got["id"].astype(str)) == set(IDS) - {"!flat"}  # its file, read first, has no rows
    # each file: the series' events with their time stamps
    for key in IDS:
        one = pd.read_parquet(out / res.summary.set_index("id").loc[key, "file"])
        assert list(one.columns) == ["index", "time", "kind", "value"]
        assert rows(one.assign(id=key)) == rows(want[want["id"] == key])


def test_cli_writes_partitions_and_overwrite_removes_them(tmp_path, capsys):
    df, series = fleet()
    src = tmp_path / "in.csv"
    df.to_csv(src, index=False)
    out = tmp_path / "out"
    argv = ["changepoint-many", str(src), "--id", "sensor", "--value", "v", "--time", "when",
            "--scheduler", "synchronous", "--sigma", "0.2", "--out", str(out)]
    assert main(argv) == 0
    got = pd.read_parquet(out / "series")
    assert rows(got) == rows(expected_events(series, df["when"].iloc[:60].tolist()))
    parts = sorted(p.name for p in (out / "series").iterdir())
    assert len(parts) == len(IDS) and all(p.startswith("id=") for p in parts)
    assert len({p.lower() for p in parts}) == len(IDS)
    # a rerun over fewer series: the partitions of the others are removed, directories too
    df[df["sensor"].isin(["pump", "!flat"])].to_csv(src, index=False)
    assert main([*argv, "--overwrite"]) == 0
    capsys.readouterr()
    assert sorted(p.name for p in (out / "series").iterdir()) == ["id=%21flat", "id=pump"]
    assert set(pd.read_parquet(out / "series")["id"].astype(str)) == {"pump"}


def test_kalman_series_read_back_with_id_and_time(tmp_path, capsys):
    rng = np.random.default_rng(3)
    ys = {k: rng.normal(size=40).cumsum() for k in (3, 1, 2)}  # integer ids stay integers
    stamps = pd.date_range("2024-01-01", periods=40, freq="h")
    df = pd.concat([pd.DataFrame({"trk": k, "when": stamps, "x": y}) for k, y in ys.items()])
    out = tmp_path / "out"
    model = ps.filters.constant_velocity()
    kalman_many(df, "trk", "x", model, scheduler="synchronous", out=out, time_column="when",
                state_names=["position", "velocity"])
    got = pd.read_parquet(out / "series")
    kf = ps.KalmanFilter(*model)
    for key, y in ys.items():
        one = got[got["id"] == key].sort_values("step")
        np.testing.assert_array_equal(one["step"], np.arange(40))
        assert one["time"].tolist() == stamps.tolist()
        np.testing.assert_allclose(one["mean_position"], kf.filter(y).mean[:, 0], rtol=1e-12)
    # the command: --time with --out
    src = tmp_path / "tracks.parquet"
    df.to_parquet(src, index=False)
    assert main(["kalman-many", str(src), "--id", "trk", "--value", "x", "--time", "when",
                 "--obs-sd", "1", "--accel-sd", "1", "--scheduler", "synchronous", "--out",
                 str(tmp_path / "cli")]) == 0
    capsys.readouterr()
    got = pd.read_parquet(tmp_path / "cli" / "series")
    assert sorted(got["id"].unique().tolist()) == [1, 2, 3]
    assert got[got["id"] == 1].sort_values("step")["time"].tolist() == stamps.tolist()
