"""``overwrite`` never writes through a link, and refuses before it changes anything.

A previous run's results are replaced only once the new run has passed every check (its
arguments, the cluster, the ids of the input) and its results are written; every table and
series file is written to a temporary file and renamed into place, so a link at its name is
replaced (never followed) and a failed write leaves no file. A path of ours that is not a
regular file (a link, a directory) is refused before any work.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")
pytest.importorskip("dask")

from possibly.cli import main  # noqa: E402
from possibly.integrations.scaleout import changepoints_many  # noqa: E402


def fleet(ids=("a", "b"), n=60) -> pd.DataFrame:
    noise = np.resize([0.2, -0.2, 0.0], n)
    step = np.r_[np.zeros(n // 2), np.full(n - n // 2, 5.0)]
    return pd.concat([pd.DataFrame({"sensor": [k] * n, "v": step + noise}) for k in ids],
                     ignore_index=True)


def cli(*argv: str) -> int:
    return main(["changepoint-many", *argv, "--id", "sensor", "--value", "v",
                 "--scheduler", "synchronous", "--sigma", "0.2"])


def snapshot(folder) -> dict:
    """Every entry under ``folder``: the target of a link, the bytes of a file, or 'dir'."""
    found = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = os.path.join(root, name)
            rel = os.path.relpath(path, folder)
            if os.path.islink(path):
                found[rel] = ("link", os.readlink(path))
            elif os.path.isdir(path):
                found[rel] = "dir"
            else:
                with open(path, "rb") as f:
                    found[rel] = f.read()
    return found


@pytest.fixture
def previous(tmp_path):
    """An output directory written by a first run, and the input of a second."""
    src = tmp_path / "in.csv"
    fleet().to_csv(src, index=False)
    out = tmp_path / "out"
    assert cli(str(src), "--out", str(out)) == 0
    return src, out


@pytest.mark.parametrize("name", ["events.parquet", "summary.parquet",
                                  "series/id=a/part-0.parquet"])
def test_a_link_at_a_listed_name_is_refused_and_never_written_through(previous, tmp_path,
                                                                       capsys, name):
    src, out = previous
    precious = tmp_path / "precious.txt"
    precious.write_text("keep")
    (out / name).unlink()
    (out / name).symlink_to(precious)
    before = snapshot(out)
    capsys.readouterr()
    assert cli(str(src), "--out", str(out), "--overwrite") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{name} is not a regular file" in err, err
    assert precious.read_text() == "keep"
    assert snapshot(out) == before  # refused before anything was deleted


def test_a_link_at_a_table_name_without_a_manifest_entry_is_refused(previous, tmp_path):
    src, out = previous
    precious = tmp_path / "precious.txt"
    precious.write_text("keep")
    (out / "events.parquet").unlink()
    (out / "events.parquet").symlink_to(precious)
    before = snapshot(out)
    with pytest.raises(ValueError, match="events.parquet is not a regular file"):
        changepoints_many(fleet(), "sensor", "v", scheduler="synchronous", out=out,
                          overwrite=True, sigma=0.2)
    assert precious.read_text() == "keep" and snapshot(out) == before


def test_a_listed_series_file_that_became_a_directory_is_refused_up_front(previous, capsys):
    src, out = previous
    part = out / "series" / "id=b" / "part-0.parquet"
    part.unlink()
    part.mkdir()
    (part / "mine.txt").write_text("mine")
    before = snapshot(out)
    capsys.readouterr()
    assert cli(str(src), "--out", str(out), "--overwrite") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "id=b/part-0.parquet is not a regular file" in err, err
    assert snapshot(out) == before


def test_a_partition_directory_that_is_a_link_is_refused_up_front(previous, tmp_path):
    src, out = previous
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (out / "series" / "id=b" / "part-0.parquet").unlink()
    (out / "series" / "id=b").rmdir()
    (out / "series" / "id=b").symlink_to(elsewhere, target_is_directory=True)
    before = snapshot(out)
    with pytest.raises(ValueError, match="series/id=b is not a directory of its own"):
        changepoints_many(fleet(), "sensor", "v", scheduler="synchronous", out=out,
                          overwrite=True, sigma=0.2)
    assert snapshot(out) == before and not any(elsewhere.iterdir())


# -- every refusal before the previous results are touched ----------------------------------
def refused_run(out, data, **kwargs):
    before = snapshot(out)
    with pytest.raises(ValueError) as info:
        changepoints_many(data, "sensor", "v", out=out, overwrite=True, sigma=0.2, **kwargs)
    assert snapshot(out) == before, "a refused run changed the output directory"
    return str(info.value)


def test_bad_n_workers_leaves_the_previous_results(previous):
    _, out = previous
    assert "n_workers" in refused_run(out, fleet(), n_workers=0)


def test_an_unreachable_scheduler_leaves_the_previous_results(previous):
    _, out = previous
    message = refused_run(out, fleet(), scheduler="tcp://127.0.0.1:1", connect_timeout=0.5)
    assert "cannot connect" in message


@pytest.mark.parametrize("bad, why", [
    (pd.DataFrame({"sensor": ["a", None], "v": [1.0, 2.0]}), "missing values"),
    (pd.DataFrame({"sensor": pd.Series([], dtype=str), "v": pd.Series([], dtype=float)}),
     "no rows"),
])
def test_ids_refused_in_a_parquet_input_leave_the_previous_results(previous, tmp_path, bad,
                                                                   why):
    _, out = previous
    path = tmp_path / "bad.parquet"
    bad.to_parquet(path, index=False)
    assert why in refused_run(out, path, scheduler="synchronous")


# -- writes: renamed into place ------------------------------------------------------------
def test_a_series_written_again_replaces_its_file_and_a_failed_write_leaves_none(tmp_path):
    # a task that Dask runs again (a worker was lost) writes its series' file a second time
    from possibly.integrations import scaleout

    frame = pd.DataFrame({"index": np.array([3], np.int64), "kind": ["changepoint"],
                          "value": [1.5]})
    series_dir = str(tmp_path)
    rel = scaleout._write_series(frame, series_dir, "a")
    assert scaleout._write_series(frame.assign(value=2.5), series_dir, "a") == rel
    assert pd.read_parquet(tmp_path / "id=a" / "part-0.parquet")["value"].tolist() == [2.5]
    pa = pytest.importorskip("pyarrow")
    wrong = pa.schema([("other", pa.int64())])  # to_parquet fails: the frame lacks it
    with pytest.raises(Exception):  # noqa: B017 (pyarrow's own error)
        scaleout._write_series(frame, series_dir, "b", wrong)
    assert not os.path.lexists(tmp_path / "id=b" / "part-0.parquet")
    assert sorted(os.listdir(tmp_path / "id=b")) == []  # no temporary file left either
