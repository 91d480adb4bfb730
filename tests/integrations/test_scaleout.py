"""Scale-out on a real Dask cluster (loopback only) equals the single-process results.

One ``LocalCluster`` with two worker processes serves the whole module. Every result from
the cluster is compared with a reference computed here, in this process, by the plain
detector/filter run on each series alone (no Dask involved in the reference).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")
distributed = pytest.importorskip("distributed")

import possibly as ps  # noqa: E402
from possibly.changepoint import ChangepointDetector  # noqa: E402
from possibly.cli import main  # noqa: E402
from possibly.integrations.scaleout import (  # noqa: E402
    _load,
    _task_frames,
    changepoints_many,
    kalman_many,
    series_path,
)

IDS = ["pump/1", "pump 2", "valve-3", "é4", "s5", "s6", "s7", "s8", "s9", "s10"]


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       host="127.0.0.1", dashboard_address="127.0.0.1:0")
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


@pytest.fixture(scope="module")
def series() -> dict[str, np.ndarray]:
    """Series of different lengths with change points, outliers and missing values."""
    out = {}
    for i, key in enumerate(IDS):
        y, _, _ = ps.datasets.piecewise_constant(200 + 37 * i, n_changes=2 + i % 3,
                                                 outlier_rate=0.02, seed=i)
        y[(7 * i + 11) % 50] = np.nan
        out[key] = y
    out["flat"] = np.zeros(150)  # sigma="auto" fails on it: reported, the others still run
    return out


def interleaved(series: dict[str, np.ndarray]):
    """Rows ordered by time across sensors (as ingested), so every series spans partitions."""
    df = pd.concat([pd.DataFrame({"sensor": k, "t": np.arange(y.size), "v": y})
                    for k, y in series.items()], ignore_index=True)
    return df.sort_values(["t", "sensor"], kind="stable", ignore_index=True)


def reference_events(series: dict[str, np.ndarray], **kwargs):
    """Change points and outliers of each series alone, by the plain detector."""
    rows = []
    for key, y in series.items():
        try:
            res = ChangepointDetector(**kwargs).fit(y)
        except ValueError:
            continue
        rows += [(key, int(i), "changepoint") for i in res.changepoints]
        rows += [(key, int(i), "outlier") for i in res.outliers]
    return sorted(rows)


def as_rows(events) -> list:
    return sorted(zip(events["id"], events["index"].astype(int), events["kind"], strict=True))


def test_changepoints_cluster_equals_single_process(client, series, tmp_path):
    df = interleaved(series)
    path = tmp_path / "fleet.parquet"
    df.to_parquet(path, index=False, row_group_size=500)  # series split across row groups
    res = changepoints_many(path, "sensor", "v", scheduler=client, out=tmp_path / "out")
    expected = reference_events(series)
    assert len(expected) > 2 * len(IDS)  # several change points and outliers to compare
    assert as_rows(res.events) == expected
    # values are the observations at the reported indices
    for key, idx, value in zip(res.events["id"], res.events["index"], res.events["value"],
                               strict=True):
        assert value == series[key][idx]
    summary = res.summary.set_index("id")
    assert set(summary.index) == set(series)
    for key, y in series.items():
        assert summary.loc[key, "n_points"] == y.size
    # the default models take a constant series (no change, no outlier)
    assert summary.loc["flat", "n_changepoints"] == 0 and summary.loc["flat", "n_outliers"] == 0
    assert summary["error"].isna().all() and res.n_failed == 0
    # the same run in this process without a cluster gives identical frames
    sync = changepoints_many(df, "sensor", "v", scheduler="synchronous")
    pd.testing.assert_frame_equal(sync.events, res.events)
    # the paper's model estimates sigma, which fails on the constant series alone
    paper = changepoints_many(df, "sensor", "v", scheduler="synchronous", model="normal")
    summary = paper.summary.set_index("id")
    assert summary.loc["flat", "error"].startswith("sigma='auto'")
    assert summary["error"].notna().sum() == 1 and paper.n_failed == 1
    assert as_rows(paper.events) == reference_events(series, model="normal")
    pd.testing.assert_frame_equal(sync.summary.drop(columns="file"),
                                  res.summary.drop(columns="file"))
    # σ is reported for the normal model only; the default models report each segment's model
    head, tail = ["id", "n_points", "n_changepoints", "n_outliers"], ["file", "error"]
    assert list(res.summary.columns) == [*head, "segment_models", *tail]
    assert list(paper.summary.columns) == [*head, "sigma", *tail]
    for key, y in series.items():
        names = ChangepointDetector().fit(y).segment_model_names
        assert res.summary.set_index("id").loc[key, "segment_models"] == "; ".join(names)
        if key != "flat":
            sigma = ChangepointDetector(model="normal").fit(y).sigma
            assert paper.summary.set_index("id").loc[key, "sigma"] == sigma
    assert pd.isna(paper.summary.set_index("id").loc["flat", "sigma"])  # it failed


def test_changepoints_files_per_series(client, series, tmp_path):
    out = tmp_path / "out"
    res = changepoints_many(interleaved(series), "sensor", "v", scheduler=client, out=out,
                            sigma=1.0, hazard=1e-3)
    pd.testing.assert_frame_equal(pd.read_parquet(out / "events.parquet"), res.events)
    pd.testing.assert_frame_equal(pd.read_parquet(out / "summary.parquet"), res.summary)
    files = sorted(p.relative_to(out / "series").as_posix()
                   for p in (out / "series").rglob("*") if p.is_file())
    assert files == sorted(series_path(k) for k in series)
    for key, y in series.items():
        ev = pd.read_parquet(out / "series" / series_path(key))
        alone = ChangepointDetector(sigma=1.0, hazard=1e-3).fit(y)
        np.testing.assert_array_equal(ev.loc[ev["kind"] == "changepoint", "index"],
                                      alone.changepoints)
        np.testing.assert_array_equal(ev.loc[ev["kind"] == "outlier", "index"], alone.outliers)
    with pytest.raises(ValueError, match="overwrite"):
        changepoints_many(interleaved(series), "sensor", "v", scheduler="synchronous", out=out)


def test_sorted_parquet_by_address_and_cli(client, series, tmp_path):
    """Series whole in each partition (no shuffle); scheduler given by address; the CLI."""
    keys = [k for k in series if k != "flat"]
    path = tmp_path / "dataset"  # a directory of 3 files, each holding whole series
    path.mkdir()
    for j in range(3):
        part = pd.concat([pd.DataFrame({"sensor": k, "v": series[k]}) for k in keys[j::3]])
        part.to_parquet(path / f"part-{j}.parquet", index=False)
    # the plan: one task per partition here, hash buckets (4 per worker thread) otherwise
    ddf = _load(path, "sensor", ["v"])
    assert len(_task_frames(ddf, "sensor", client)) == ddf.npartitions == 3
    assert len(_task_frames(_load(interleaved(series), "sensor", ["v"]), "sensor", client)) == 8
    addr = client.scheduler.address
    assert addr.startswith("tcp://127.0.0.1:")
    # the paper's model, which the CLI runs
    res = changepoints_many(path, "sensor", "v", scheduler=addr, forgetting=0.95,
                            model="normal")
    expected = []
    for key, y in series.items():
        if key != "flat":
            r = ChangepointDetector(forgetting=0.95, model="normal").fit(y)
            expected += [(key, int(i), "changepoint") for i in r.changepoints]
            expected += [(key, int(i), "outlier") for i in r.outliers]
    assert as_rows(res.events) == sorted(expected)
    assert res.n_failed == 0

    out = tmp_path / "cli"
    status = main(["changepoint-many", str(path), "--id", "sensor", "--value", "v",
                   "--scheduler", addr, "--out", str(out), "--forgetting", "0.95"])
    assert status == 0
    pd.testing.assert_frame_equal(pd.read_parquet(out / "events.parquet"), res.events)


def tracks() -> dict[str, np.ndarray]:
    """Constant-velocity tracks of two lengths (two batches), outliers and a gap."""
    rng = np.random.default_rng(7)
    out = {}
    for i in range(9):
        T = 80 if i % 3 else 120
        pos = np.cumsum(np.full(T, 0.3 * (i - 4))) + rng.normal(0.0, 1.0, T)
        pos[rng.random(T) < 0.1] += 25.0
        pos[10 + i] = np.nan
        out[f"trk{i}"] = pos
    return out


def test_changepoints_time_column(series, tmp_path):
    """time_column: the events carry the stamps of their rows, in the frame and the file."""
    stamps = {k: pd.date_range("2024-01-01", periods=y.size, freq="h") for k, y in
              series.items()}
    df = interleaved(series)
    df["when"] = [stamps[k][t] for k, t in zip(df["sensor"], df["t"], strict=True)]
    out = tmp_path / "out"
    res = changepoints_many(df, "sensor", "v", scheduler="synchronous", out=out,
                            time_column="when", sigma=1.0, hazard=1e-3)
    assert list(res.events.columns) == ["id", "index", "time", "kind", "value"]
    expect = [stamps[k][i] for k, i in zip(res.events["id"], res.events["index"], strict=True)]
    assert res.events["time"].tolist() == expect
    assert as_rows(res.events) == reference_events(series, sigma=1.0, hazard=1e-3)
    pd.testing.assert_frame_equal(pd.read_parquet(out / "events.parquet"), res.events)
    # the per-series files: the same columns without the id (their directory names it)
    first = pd.read_parquet(out / "series" / series_path(IDS[0]))
    assert list(first.columns) == ["index", "time", "kind", "value"]
    with pytest.raises(ValueError, match="must be distinct"):
        changepoints_many(df, "sensor", "v", scheduler="synchronous", time_column="v")
    with pytest.raises(ValueError, match="column 'nope' not found"):
        changepoints_many(df, "sensor", "v", scheduler="synchronous", time_column="nope")


def test_cli_time_events_written_once(series, tmp_path, monkeypatch, capsys):
    """changepoint-many --time --out writes events.parquet once, with the time column."""
    path = tmp_path / "in.parquet"
    df = interleaved({"a": series["s5"], "b": series["s6"]})
    df.assign(when=df["t"].map(lambda t: f"day {t}")).to_parquet(path, index=False)
    written: list[str] = []
    to_parquet = pd.DataFrame.to_parquet

    def counting(self, target, *args, **kwargs):
        written.append(Path(target).name)
        return to_parquet(self, target, *args, **kwargs)

    monkeypatch.setattr(pd.DataFrame, "to_parquet", counting)
    out = tmp_path / "out"
    assert main(["changepoint-many", str(path), "--id", "sensor", "--value", "v",
                 "--scheduler", "synchronous", "--sigma", "1", "--time", "when",
                 "--out", str(out)]) == 0
    assert sum("events" in name for name in written) == 1, written
    events = pd.read_parquet(out / "events.parquet")
    assert list(events.columns) == ["id", "index", "time", "kind", "value"]
    assert events["time"].tolist() == [f"day {i}" for i in events["index"]]
    assert len(events) > 0


def test_kalman_cluster_equals_single_process(client, tmp_path):
    data = tracks()
    df = pd.concat([pd.DataFrame({"trk": k, "t": np.arange(y.size), "pos": y})
                    for k, y in data.items()]).sort_values(["t", "trk"], kind="stable")
    model = ps.filters.constant_velocity(dt=1.0, accel_sd=0.05, obs_sd=1.0)
    res = kalman_many(df, "trk", "pos", model, scheduler=client,
                      state_names=["position", "velocity"])
    kf = ps.KalmanFilter(*model)
    for key, y in data.items():
        alone = kf.filter(y[:, None])  # each track alone, no batch
        got = res.states[res.states["id"] == key]
        np.testing.assert_array_equal(got["step"], np.arange(y.size))
        # batched vs alone: same arithmetic per track up to BLAS summation order
        np.testing.assert_allclose(got[["mean_position", "mean_velocity"]], alone.mean,
                                   rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(got["discount"], alone.discount, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(got["consistency"], alone.consistency, rtol=1e-12,
                                   atol=1e-15)
        row = res.summary.set_index("id").loc[key]
        assert row["n_missing"] == 1
        assert row["n_discounted"] == int(np.sum(alone.discount < 0.1))
    assert res.summary["n_discounted"].sum() > 0  # the injected outliers were discounted

    path = tmp_path / "tracks.parquet"
    df.to_parquet(path, index=False)
    out = tmp_path / "kout"
    status = main(["kalman-many", str(path), "--id", "trk", "--value", "pos",
                   "--scheduler", client.scheduler.address, "--out", str(out),
                   "--accel-sd", "0.05", "--obs-sd", "1"])
    assert status == 0
    for key in data:
        got = pd.read_parquet(out / "series" / series_path(key))
        want = res.states[res.states["id"] == key].drop(columns="id").reset_index(drop=True)
        pd.testing.assert_frame_equal(got, want)


@pytest.mark.skipif(not ps.changepoint.numba_available(), reason="numba is not installed")
def test_kalman_compiled_engine_gives_the_same_numbers_anywhere(client):
    """``engine="numba"`` pins the arithmetic: the cluster's workers and this process, which
    has run the compiled filter before (``"auto"`` would choose by that), give the same
    tables, bit for bit, whatever tracks share a task."""
    ps.KalmanFilter(ps.filters.constant_velocity()).filter(np.zeros(50), engine="numba")
    data = tracks()
    df = pd.concat([pd.DataFrame({"trk": k, "pos": y}) for k, y in data.items()])
    model = ps.filters.constant_velocity(dt=1.0, accel_sd=0.05, obs_sd=1.0)
    here = kalman_many(df, "trk", "pos", model, scheduler="synchronous", engine="numba")
    there = kalman_many(df, "trk", "pos", model, scheduler=client, engine="numba")
    pd.testing.assert_frame_equal(here.states, there.states, check_exact=True)
    pd.testing.assert_frame_equal(here.summary, there.summary, check_exact=True)


def test_kalman_many_refuses_an_unknown_engine():
    df = pd.DataFrame({"trk": ["a"] * 5, "pos": np.arange(5.0)})
    with pytest.raises(ValueError, match="engine must be 'auto', 'numpy' or 'numba', got 'c'"):
        kalman_many(df, "trk", "pos", ps.filters.constant_velocity(), scheduler="synchronous",
                    engine="c")


def test_kalman_many_refuses_the_compiled_engine_where_the_filter_would(monkeypatch):
    """A model the compiled loop cannot run, or no numba: one clear error before any task,
    not a failed row per track."""
    df = pd.DataFrame({"trk": ["a"] * 5, "x": np.arange(5.0), "y": np.arange(5.0)})
    twice = ps.filters.LinearGaussianModel(F=[[1.0]], Q=[[0.1]], H=[[1.0], [1.0]],
                                           R=np.eye(2))  # H of rank 1 for 2 values
    with pytest.raises(ValueError, match="engine='numba' needs a time-invariant model whose H "
                                         "has full row rank"):
        kalman_many(df, "trk", ["x", "y"], twice, scheduler="synchronous", engine="numba")
    assert kalman_many(df, "trk", ["x", "y"], twice, scheduler="synchronous",
                       engine="numpy").summary["error"].isna().all()
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "numba" else real(name, *a))
    with pytest.raises(ValueError, match="engine='numba' needs numba"):
        kalman_many(df, "trk", "x", ps.filters.constant_velocity(), scheduler="synchronous",
                    engine="numba")


def test_kalman_two_axes_synchronous():
    rng = np.random.default_rng(3)
    ys = {k: rng.normal(size=(60, 2)).cumsum(axis=0) for k in ("a", "b", "c")}
    df = pd.concat([pd.DataFrame({"id": k, "x": y[:, 0], "y": y[:, 1]}) for k, y in ys.items()])
    model = ps.filters.constant_velocity(ndim=2)
    res = kalman_many(df, "id", ["x", "y"], model, scheduler="synchronous")
    kf = ps.KalmanFilter(*model)
    for k, y in ys.items():
        got = res.states[res.states["id"] == k][[f"mean_{s}" for s in model.names]]
        np.testing.assert_allclose(got, kf.filter(y).mean, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="value_columns has 1"):
        kalman_many(df, "id", "x", model, scheduler="synchronous")


def test_default_local_cluster(series):
    """scheduler=None starts (and closes) a loopback cluster for the call."""
    small = {k: series[k] for k in IDS[:3]}
    res = changepoints_many(interleaved(small), "sensor", "v", n_workers=1)
    assert as_rows(res.events) == reference_events(small)


# -- bad input -------------------------------------------------------------------------------
def test_bad_scheduler_address(series):
    df = interleaved({"a": series["s5"]})
    with pytest.raises(ValueError, match="scheduler: cannot connect to 'tcp://127.0.0.1:1'"):
        changepoints_many(df, "sensor", "v", scheduler="tcp://127.0.0.1:1", connect_timeout=1)
    with pytest.raises(ValueError, match="scheduler: cannot connect to 'no port here'"):
        changepoints_many(df, "sensor", "v", scheduler="no port here", connect_timeout=1)
    with pytest.raises(ValueError, match="scheduler must be"):
        changepoints_many(df, "sensor", "v", scheduler=42)


def test_bad_input_errors(series, tmp_path):
    df = interleaved({"a": series["s5"]})
    sync = {"scheduler": "synchronous"}
    with pytest.raises(ValueError, match="column 'sensr' not found.*sensor, t, v"):
        changepoints_many(df, "sensr", "v", **sync)
    with pytest.raises(ValueError, match="column 'value' not found"):
        changepoints_many(df, "sensor", "value", **sync)
    with pytest.raises(ValueError, match="value column 'sensor' must be numeric"):
        changepoints_many(df, "t", "sensor", **sync)
    with pytest.raises(ValueError, match="id column 'sensor' has missing values"):
        changepoints_many(df.assign(sensor=df["sensor"].where(df["t"] != 3)), "sensor", "v",
                          **sync)
    with pytest.raises(ValueError, match="the input has no rows"):
        changepoints_many(df.iloc[:0], "sensor", "v", **sync)
    with pytest.raises(ValueError, match="hazard"):
        changepoints_many(df, "sensor", "v", hazard=2.0, **sync)
    with pytest.raises(FileNotFoundError, match="no such file"):
        changepoints_many(tmp_path / "missing.parquet", "sensor", "v", **sync)
    junk = tmp_path / "junk.parquet"
    junk.write_text("not parquet\n")
    with pytest.raises(OSError, match="not a readable Parquet"):
        changepoints_many(junk, "sensor", "v", **sync)
    text = tmp_path / "text.parquet"
    df.assign(v=df["v"].astype(str)).to_parquet(text, index=False)
    with pytest.raises(ValueError, match="value column 'v' must be numeric"):
        changepoints_many(text, "sensor", "v", **sync)


def test_empty_dataset_named_in_the_error(tmp_path, capsys):
    import dask.dataframe as dd
    import pyarrow as pa
    import pyarrow.parquet as pq

    empty = tmp_path / "empty.parquet"
    pq.write_table(pa.table({}), empty)
    sync = {"scheduler": "synchronous"}
    for data, name in [(pd.DataFrame(), "the pandas DataFrame"),
                       (dd.from_pandas(pd.DataFrame(), npartitions=1), "the dask DataFrame"),
                       (empty, f"input {str(empty)!r}")]:
        for run in (changepoints_many,
                    lambda *a, **k: kalman_many(*a, ps.filters.constant_velocity(), **k)):
            with pytest.raises(ValueError) as info:
                run(data, "sensor", "v", **sync)
            assert str(info.value) == (f"column 'sensor' not found: {name} has no columns "
                                       "(an empty dataset)")
    with pytest.raises(ValueError, match=r"not found in the pandas DataFrame; its columns "
                                         r"are sensor, t, v$"):
        changepoints_many(interleaved({"a": np.zeros(3)}), "id", "v", **sync)
    assert main(["changepoint-many", str(empty), "--id", "sensor", "--value", "v"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"input {str(empty)!r} has no columns" in err


@pytest.mark.parametrize("argv, message", [
    (["--id", "nope", "--value", "v"], "column 'nope' not found"),
    (["--id", "sensor", "--value", "sensor"], "must be distinct"),
    (["--id", "sensor", "--value", "v", "--scheduler", "tcp://127.0.0.1:1",
      "--connect-timeout", "1"], "scheduler: cannot connect"),
    (["--id", "sensor", "--value", "v", "--workers", "2", "--scheduler", "synchronous"],
     "--workers"),
])
def test_cli_errors_one_line(argv, message, series, tmp_path, capsys):
    path = tmp_path / "in.parquet"
    interleaved({"a": series["s5"]}).to_parquet(path, index=False)
    assert main(["changepoint-many", str(path), *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err
    assert main(["kalman-many", str(tmp_path / "none.parquet"), "--id", "a", "--value", "b"]) == 2
    assert "no such file" in capsys.readouterr().err


def test_cli_prints_csv_and_reports_failures(series, tmp_path, capsys):
    path = tmp_path / "in.parquet"
    interleaved({"a": series["s5"], "flat": series["flat"]}).to_parquet(path, index=False)
    # the paper's model with sigma estimated per series: the constant series fails
    status = main(["changepoint-many", str(path), "--id", "sensor", "--value", "v",
                   "--scheduler", "synchronous", "--model", "normal"])
    captured = capsys.readouterr()
    assert status == 1  # the flat series failed; the other was processed
    assert "1 failed" in captured.err and "'flat'" in captured.err
    lines = captured.out.splitlines()
    assert lines[0] == "id,index,kind,value"
    alone = ChangepointDetector(model="normal").fit(series["s5"])
    assert len(lines) - 1 == alone.changepoints.size + alone.outliers.size
    # the default (--model auto) takes both series
    assert main(["changepoint-many", str(path), "--id", "sensor", "--value", "v",
                 "--scheduler", "synchronous"]) == 0
    lines = capsys.readouterr().out.splitlines()
    alone = ChangepointDetector().fit(series["s5"])
    flat = ChangepointDetector().fit(series["flat"])
    assert flat.changepoints.size == flat.outliers.size == 0
    expect = [f"a,{i},{kind}," for kind, idx in (("changepoint", alone.changepoints),
                                                 ("outlier", alone.outliers)) for i in idx]
    assert sorted(ln[:ln.rindex(",") + 1] for ln in lines[1:]) == sorted(expect)


def test_cli_model_option(series, tmp_path, capsys):
    """--model auto (default) reports each segment's model; --sigma/--forgetting select normal."""
    path = tmp_path / "in.parquet"
    interleaved({"a": series["s5"], "b": series["s6"]}).to_parquet(path, index=False)
    base = ["changepoint-many", str(path), "--id", "sensor", "--value", "v",
            "--scheduler", "synchronous"]
    cases = [([], {}, "segment_models"),
             (["--model", "auto", "--forgetting", "0.95"], {"forgetting": 0.95},
              "segment_models"),
             (["--sigma", "1"], {"sigma": 1.0}, "sigma"),
             (["--forgetting", "0.95"], {"model": "normal", "forgetting": 0.95}, "sigma")]
    for run, (extra, kwargs, column) in enumerate(cases):
        out = tmp_path / f"out{run}"
        assert main([*base, *extra, "--out", str(out)]) == 0, extra
        summary = pd.read_parquet(out / "summary.parquet").set_index("id")
        other = ({"sigma", "segment_models"} - {column}).pop()
        assert column in summary.columns and other not in summary.columns
        events = pd.read_parquet(out / "events.parquet")
        for key in ("a", "b"):
            res = ChangepointDetector(**kwargs).fit(series[{"a": "s5", "b": "s6"}[key]])
            got = events[(events["id"] == key) & (events["kind"] == "changepoint")]["index"]
            assert got.tolist() == res.changepoints.tolist(), extra
            expect = ("; ".join(res.segment_model_names) if column == "segment_models"
                      else res.sigma)
            assert summary.loc[key, column] == expect
    capsys.readouterr()
    assert main([*base, "--model", "auto", "--sigma", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--sigma" in err and "--model" in err


def test_missing_extra_message(monkeypatch):
    monkeypatch.setitem(sys.modules, "dask.dataframe", None)
    with pytest.raises(ImportError, match=r"pip install 'possibly\[dask\]'"):
        changepoints_many(pd.DataFrame({"a": [1], "b": [1.0]}), "a", "b",
                          scheduler="synchronous")


def test_package_import_does_not_import_dask():
    code = "import possibly, possibly.integrations.scaleout, sys; print('dask' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"
