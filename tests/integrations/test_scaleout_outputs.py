"""What the scale-out commands write and delete, and how they tell series apart.

``--overwrite`` removes only the files the previous run listed in its manifest; an input
inside the output directory is refused before anything is read or deleted; ids of different
kinds are never merged; ids that differ only in case get partition directories whose names
differ on a file system that ignores case; a series that failed gets no file. Expected results
come from the plain detector run on each series alone.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")
pytest.importorskip("dask")

import possibly as ps  # noqa: E402
from possibly.cli import main  # noqa: E402
from possibly.integrations.scaleout import changepoints_many, kalman_many, series_path  # noqa: E402

MANIFEST = ".possibly-manifest.json"  # the documented name


def fleet(ids=("a", "b"), n=60) -> pd.DataFrame:
    noise = np.resize([0.2, -0.2, 0.0], n)
    step = np.r_[np.zeros(n // 2), np.full(n - n // 2, 5.0)]
    frames = [pd.DataFrame({"sensor": pd.Series([k] * n, dtype=object),
                            "v": (step if i % 2 else -step) + noise})
              for i, k in enumerate(ids)]
    return pd.concat(frames, ignore_index=True)


def cli(*argv: str) -> int:
    return main(["changepoint-many", *argv, "--id", "sensor", "--value", "v",
                 "--scheduler", "synchronous", "--sigma", "0.2"])


def partition(key) -> str:
    """The directory of a series' file under ``series/``."""
    return series_path(key).split("/")[0]


def listing(folder) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


# -- overwrite: only what a previous run wrote ---------------------------------------------------
def test_overwrite_keeps_the_users_files(tmp_path, capsys):
    src = tmp_path / "in.csv"
    fleet().to_csv(src, index=False)
    out = tmp_path / "out"
    assert cli(str(src), "--out", str(out)) == 0
    written = listing(out)
    assert written == sorted([MANIFEST, "events.parquet", "summary.parquet",
                              "series/id=a/part-0.parquet", "series/id=b/part-0.parquet"])
    manifest = json.loads((out / MANIFEST).read_text())
    assert sorted(manifest["files"]) == [f for f in written if f != MANIFEST]
    (out / "series" / "notes.txt").write_text("mine")
    (out / "README").write_text("mine too")
    assert cli(str(src), "--out", str(out)) == 2  # no --overwrite: refused
    assert "already holds results" in capsys.readouterr().err
    fleet(("a", "c")).to_csv(src, index=False)
    assert cli(str(src), "--out", str(out), "--overwrite") == 0
    assert (out / "series" / "notes.txt").read_text() == "mine"
    assert (out / "README").read_text() == "mine too"
    # b's file of the first run is gone (listed), c's is new
    assert listing(out) == sorted([MANIFEST, "README", "events.parquet", "summary.parquet",
                                   "series/id=a/part-0.parquet", "series/id=c/part-0.parquet",
                                   "series/notes.txt"])


@pytest.mark.parametrize("name", ["events.parquet", "summary.parquet",
                                  "series/id=a/part-0.parquet", "in.csv"])
def test_input_inside_the_output_is_refused_before_it_is_read(tmp_path, capsys, name):
    out = tmp_path / "out"
    src = out / name
    src.parent.mkdir(parents=True)
    if name.endswith(".parquet"):
        fleet().to_parquet(src, index=False)
    else:
        fleet().to_csv(src, index=False)
    before = src.read_bytes()
    assert cli(str(src), "--out", str(out), "--overwrite") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "inside" in err, err
    assert src.read_bytes() == before and listing(out) == [name]
    if name.endswith(".parquet"):  # the library refuses it too
        with pytest.raises(ValueError, match="holds the input"):
            changepoints_many(src, "sensor", "v", scheduler="synchronous", out=out,
                              overwrite=True, sigma=0.2)
        assert src.read_bytes() == before


def test_results_without_a_manifest_are_not_deleted(tmp_path, capsys):
    out = tmp_path / "out"
    (out / "series").mkdir(parents=True)
    fleet().to_parquet(out / "summary.parquet")  # the user's own file of that name
    (out / "series" / "id=a").mkdir()
    (out / "series" / "id=a" / "part-0.parquet").write_bytes(b"user data")
    src = tmp_path / "in.csv"
    fleet().to_csv(src, index=False)
    assert cli(str(src), "--out", str(out), "--overwrite") == 2
    err = capsys.readouterr().err
    assert MANIFEST in err and err.count("\n") == 1, err
    assert listing(out) == ["series/id=a/part-0.parquet", "summary.parquet"]
    assert (out / "series" / "id=a" / "part-0.parquet").read_bytes() == b"user data"


def test_manifest_is_not_a_license_to_delete(tmp_path, capsys):
    src = tmp_path / "in.csv"
    fleet().to_csv(src, index=False)
    out = tmp_path / "out"
    assert cli(str(src), "--out", str(out)) == 0
    outside = tmp_path / "precious.txt"
    outside.write_text("keep")
    manifest = out / MANIFEST
    good = manifest.read_text()
    # a listed file replaced by a link to a file elsewhere: refused, the link left as it is
    (out / "series" / "id=b" / "part-0.parquet").unlink()
    (out / "series" / "id=b" / "part-0.parquet").symlink_to(outside)
    fleet(("a",)).to_csv(src, index=False)
    before = listing(out)
    assert cli(str(src), "--out", str(out), "--overwrite") == 2
    assert "id=b/part-0.parquet is not a regular file" in capsys.readouterr().err
    assert outside.read_text() == "keep" and listing(out) == before
    assert (out / "series" / "id=b" / "part-0.parquet").is_symlink()
    # a manifest naming anything else than our outputs, or unreadable: nothing is deleted
    for text in (json.dumps({"format": json.loads(good)["format"],
                             "files": ["../precious.txt"]}),
                 json.dumps({"format": json.loads(good)["format"], "files": ["README"]}),
                 good[: len(good) // 2]):
        manifest.write_text(text)
        before = listing(out)
        assert cli(str(src), "--out", str(out), "--overwrite") == 2
        assert MANIFEST in capsys.readouterr().err
        assert listing(out) == before and outside.read_text() == "keep"
    # a file of our naming that the manifest does not list (the user's): refused
    manifest.write_text(good)
    (out / "series" / "id=zz").mkdir()
    (out / "series" / "id=zz" / "part-0.parquet").write_bytes(b"user data")
    assert cli(str(src), "--out", str(out), "--overwrite") == 2
    assert "id=zz/part-0.parquet" in capsys.readouterr().err
    assert (out / "series" / "id=zz" / "part-0.parquet").read_bytes() == b"user data"


# -- ids ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("pair", [(1, "1"), (True, 1), (1, 1.5), ("a", b"a")])
def test_ids_of_different_kinds_are_never_merged(pair):
    df = fleet(pair)
    with pytest.raises(ValueError, match="mixes kinds of value"):
        changepoints_many(df, "sensor", "v", scheduler="synchronous", sigma=0.2)
    with pytest.raises(ValueError, match="mixes kinds of value"):
        kalman_many(df, "sensor", "v", ps.filters.constant_velocity(), scheduler="synchronous")
    # one kind: two series, each as the detector finds it alone
    res = changepoints_many(df.assign(sensor=df["sensor"].map(repr)), "sensor", "v",
                            scheduler="synchronous", sigma=0.2)
    assert len(res.summary) == 2 and res.summary["n_points"].tolist() == [60, 60]


def test_ids_differing_in_case_get_distinct_files(tmp_path):
    ids = ["Pump", "pump", "PUMP", "pump~1", "a%2Fb", "a/b"]
    df = fleet(ids)
    out = tmp_path / "out"
    res = changepoints_many(df, "sensor", "v", scheduler="synchronous", out=out, sigma=0.2)
    files = [p.name for p in (out / "series").iterdir()]
    assert len(files) == len(ids) and len({f.lower() for f in files}) == len(ids)
    assert all(f.isascii() for f in files)
    summary = res.summary.set_index("id")
    for key in ids:
        y = df.loc[df["sensor"] == key, "v"].to_numpy()
        alone = ps.ChangepointDetector(sigma=0.2).fit(y)
        ev = pd.read_parquet(out / summary.loc[key, "file"])
        assert ev.loc[ev["kind"] == "changepoint", "index"].tolist() == \
            alone.changepoints.tolist()
        assert summary.loc[key, "file"] == f"series/{series_path(key)}"


def test_failed_series_get_no_file_and_are_reported(tmp_path, capsys):
    df = fleet(("ok", "flat"))
    df.loc[df["sensor"] == "flat", "v"] = 3.0  # the paper's model cannot estimate σ on it
    out = tmp_path / "out"
    res = changepoints_many(df, "sensor", "v", scheduler="synchronous", out=out,
                            model="normal")
    summary = res.summary.set_index("id")
    assert summary.loc["flat", "error"].startswith("sigma='auto'")
    assert pd.isna(summary.loc["flat", "file"]) and res.n_failed == 1
    assert [p.name for p in (out / "series").iterdir()] == [partition("ok")]
    assert "flat" not in set(res.events["id"])
    src = tmp_path / "in.csv"
    df.to_csv(src, index=False)
    assert main(["changepoint-many", str(src), "--id", "sensor", "--value", "v",
                 "--scheduler", "synchronous", "--model", "normal", "--out",
                 str(tmp_path / "cli")]) == 1
    assert "1 failed" in capsys.readouterr().err
    assert [p.name for p in (tmp_path / "cli" / "series").iterdir()] == [partition("ok")]


# -- fuzz: mixed ids ---------------------------------------------------------------------------
ID = st.one_of(st.integers(-3, 3), st.integers(-3, 3).map(str), st.booleans(),
               st.sampled_from(["Pump", "pump", "PUMP", "p~1", "é", "É", "a/b", "a%2Fb",
                                "x" * 250, "X" * 250]))


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(ids=st.lists(ID, min_size=1, max_size=6))
def test_fuzz_mixed_ids_are_refused_or_kept_apart(tmp_path_factory, ids):
    kinds = {"text" if isinstance(k, str) else "bool" if isinstance(k, bool) else "integer"
             for k in ids}
    distinct = list(dict.fromkeys((type(k), k) for k in ids))
    df = pd.concat([pd.DataFrame({"sensor": pd.Series([k] * 20, dtype=object),
                                  "v": np.resize([0.0, 1.0, -1.0], 20) + j})
                    for j, (_, k) in enumerate(distinct)], ignore_index=True)
    out = tmp_path_factory.mktemp("fuzz") / "out"
    if len(kinds) > 1:
        with pytest.raises(ValueError, match="mixes kinds of value"):
            changepoints_many(df, "sensor", "v", scheduler="synchronous", out=out, sigma=1.0)
        assert not out.exists() or not any((out / "series").iterdir())
        return
    res = changepoints_many(df, "sensor", "v", scheduler="synchronous", out=out, sigma=1.0)
    assert len(res.summary) == len(distinct)
    assert res.summary["n_points"].tolist() == [20] * len(distinct)
    files = [p.name for p in (out / "series").iterdir()]
    assert len({f.lower() for f in files}) == len(files) == len(distinct)
    assert sorted(res.summary["file"]) == sorted(f"series/{f}/part-0.parquet" for f in files)


def test_out_dash_prints_the_tables(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    src = tmp_path / "in.csv"
    fleet().to_csv(src, index=False)
    assert cli(str(src)) == 0
    expected = capsys.readouterr().out
    assert expected.startswith("id,index,kind,value\n")
    assert cli(str(src), "--out", "-") == 0
    assert capsys.readouterr().out == expected
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv"]


def test_kalman_overwrites_a_change_point_run(tmp_path):
    out = tmp_path / "out"
    df = fleet()
    changepoints_many(df, "sensor", "v", scheduler="synchronous", out=out, sigma=0.2)
    (out / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="already holds results"):
        kalman_many(df, "sensor", "v", ps.filters.constant_velocity(), scheduler="synchronous",
                    out=out)
    res = kalman_many(df, "sensor", "v", ps.filters.constant_velocity(),
                      scheduler="synchronous", out=out, overwrite=True)
    assert res.n_failed == 0
    assert listing(out) == sorted([MANIFEST, "notes.txt", "summary.parquet",
                                   "series/id=a/part-0.parquet", "series/id=b/part-0.parquet"])
    assert "step" in pd.read_parquet(out / "series" / "id=a" / "part-0.parquet").columns
