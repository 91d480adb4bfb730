"""A time column puts each series in time order before it is analysed.

A series given newest first (or shuffled) gives the change points and filtered states of the
same series in time order, with a warning (the library) or one note line (the CLI); rows that
share a stamp keep their order; a series that needs sorting but has a row without a stamp is
refused, by name. The expected results come from the plain detector and filter run on each
series in time order.
"""

from __future__ import annotations

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")
pytest.importorskip("dask")

import possibly as ps  # noqa: E402
from possibly.cli import main  # noqa: E402
from possibly.integrations.scaleout import changepoints_many, kalman_many  # noqa: E402

N = 80
DAYS = pd.date_range("2024-01-01", periods=N, freq="D")


def series(shift: float) -> np.ndarray:
    noise = np.resize([0.2, -0.2, 0.0, 0.1], N)
    return np.r_[np.zeros(50), np.full(N - 50, shift)] + noise


def table(reverse_b: bool) -> pd.DataFrame:
    """Two sensors, in time order; ``reverse_b``: sensor b listed newest first."""
    a = pd.DataFrame({"sensor": "a", "day": DAYS, "v": series(5.0)})
    b = pd.DataFrame({"sensor": "b", "day": DAYS, "v": series(-4.0)})
    if reverse_b:
        b = b.iloc[::-1]
    return pd.concat([a, b], ignore_index=True)


def test_a_reversed_series_gives_the_change_points_of_the_sorted_one():
    with pytest.warns(UserWarning, match=r"1 series were not in time order .*'b'"):
        got = changepoints_many(table(True), "sensor", "v", scheduler="synchronous",
                                sigma=0.2, time_column="day")
    for key, shift in (("a", 5.0), ("b", -4.0)):
        alone = ps.ChangepointDetector(sigma=0.2).fit(series(shift)).changepoints
        ev = got.events.query(f"id == '{key}' and kind == 'changepoint'")
        assert ev["index"].tolist() == alone.tolist() == [50]
        assert ev["time"].tolist() == list(DAYS[alone])
    assert got.n_failed == 0


def test_a_series_in_time_order_gives_no_warning(recwarn):
    changepoints_many(table(False), "sensor", "v", scheduler="synchronous", sigma=0.2,
                      time_column="day")
    assert not [w for w in recwarn if "time order" in str(w.message)]


def test_kalman_many_filters_a_reversed_track_forwards_in_time():
    model = ps.filters.constant_velocity(obs_sd=0.2, accel_sd=0.05)
    with pytest.warns(UserWarning, match="not in time order"):
        got = kalman_many(table(True), "sensor", "v", model, scheduler="synchronous",
                          time_column="day")
    for key, shift in (("a", 5.0), ("b", -4.0)):
        alone = ps.KalmanFilter(model).filter(series(shift))
        states = got.states.query(f"id == '{key}'")
        assert states["time"].tolist() == list(DAYS)
        np.testing.assert_allclose(states["mean_position"], alone.mean[:, 0], rtol=1e-12)


def test_rows_sharing_a_stamp_keep_their_order():
    # newest first, and rows 3 and 4 share day 3, listed in that order: sorted stably by
    # day they are rows 0, 1, ..., 11 again
    y = np.arange(12, dtype=float) ** 1.5
    y[4] = 100.0
    days = np.r_[0, 1, 2, 3, 3, np.arange(4, 11)]
    rows = [11, 10, 9, 8, 7, 6, 5, 3, 4, 2, 1, 0]
    df = pd.DataFrame({"sensor": "a", "day": days[rows], "v": y[rows]})
    model = ps.filters.constant_velocity(obs_sd=1.0, accel_sd=1.0)
    with pytest.warns(UserWarning, match="not in time order"):
        got = kalman_many(df, "sensor", "v", model, scheduler="synchronous",
                          time_column="day")
    alone = ps.KalmanFilter(model).filter(y)
    np.testing.assert_allclose(got.states["mean_position"], alone.mean[:, 0], rtol=1e-12)


def test_a_series_to_sort_without_a_stamp_fails_by_name():
    df = table(True)
    df["day"] = df["day"].astype("datetime64[ns]")
    df.loc[df.index[-1], "day"] = pd.NaT  # in sensor b, which needs sorting
    got = changepoints_many(df, "sensor", "v", scheduler="synchronous", sigma=0.2,
                            time_column="day")
    failed = got.summary[got.summary["error"].notna()]
    assert failed["id"].tolist() == ["b"]
    assert "'b'" in failed["error"].iloc[0] and "time stamp" in failed["error"].iloc[0]
    # a series in time order may lack a stamp: nothing to sort
    df = table(False)
    df.loc[3, "day"] = pd.NaT
    assert changepoints_many(df, "sensor", "v", scheduler="synchronous", sigma=0.2,
                             time_column="day").n_failed == 0


# -- the command -------------------------------------------------------------------------------
def cli(path, *extra) -> int:
    return main(["changepoint-many", str(path), "--id", "sensor", "--value", "v",
                 "--time", "day", "--scheduler", "synchronous", "--sigma", "0.2", *extra])


def write_csv(df, path) -> None:
    df.assign(day=df["day"].dt.strftime("%Y-%m-%d")).to_csv(path, index=False)


def test_cli_sorts_a_series_listed_newest_first(tmp_path, capsys):
    write_csv(table(False), tmp_path / "sorted.csv")
    assert cli(tmp_path / "sorted.csv") == 0
    expected = capsys.readouterr()
    assert "time order" not in expected.err
    write_csv(table(True), tmp_path / "reversed.csv")
    assert cli(tmp_path / "reversed.csv") == 0
    got = capsys.readouterr()
    assert got.out == expected.out and "b,50,2024-02-20,changepoint" in got.out
    notes = [ln for ln in got.err.splitlines() if "time order" in ln]
    assert len(notes) == 1 and "'b'" in notes[0], got.err


def test_cli_refuses_a_series_to_sort_without_a_stamp(tmp_path, capsys):
    df = table(True)
    path = tmp_path / "reversed.csv"
    write_csv(df, path)
    lines = path.read_text().splitlines()
    lines[-1] = lines[-1].replace("2024-01-01", "")  # sensor b's last row (its first day)
    path.write_text("\n".join(lines) + "\n")
    assert cli(path) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'b'" in err and f"line {len(lines)}" in err, err
