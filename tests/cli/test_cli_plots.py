"""What ``possibly changepoint --plot`` and ``possibly kalman --plot`` draw: the figures are
kept (``plt.close`` recorded) and their Axes inspected: time stamps on the x axis, the value
column's name on the y axis, the ±2 sd band of the CLI's own output, every axis of a track."""

from __future__ import annotations

import csv

import numpy as np
import pytest

pytest.importorskip("matplotlib")

import matplotlib  # noqa: E402

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.dates import ConciseDateFormatter, date2num  # noqa: E402

from possibly.cli import main  # noqa: E402


@pytest.fixture
def figures(monkeypatch):
    """The figures the command closes, in order (kept open to be inspected)."""
    figs = []
    monkeypatch.setattr(plt, "close", figs.append)
    yield figs
    monkeypatch.undo()
    plt.close("all")


def _legend(ax) -> list[str]:
    return [t.get_text() for t in ax.get_legend().get_texts()]


def _read(path) -> dict[str, np.ndarray]:
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    return {k: np.array([r[k] for r in rows]) for k in rows[0]}


def _days(n: int) -> list[str]:
    return [str(d) for d in np.datetime64("2024-03-01") + np.arange(n)]


def _step_series(n: int = 120, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    y = np.r_[rng.normal(0.0, 1.0, n // 2), rng.normal(6.0, 1.0, n - n // 2)]
    y[n // 4] = 30.0  # an outlier
    return y


def _cell(v: float) -> str:
    return "" if np.isnan(v) else repr(float(v))


def test_changepoint_plot_has_time_stamps_and_column_name(tmp_path, capsys, figures):
    y = _step_series()
    y[70] = np.nan
    days = _days(y.size)
    src = tmp_path / "levels.csv"
    src.write_text("date,level (m)\n" + "".join(f"{d},{_cell(v)}\n"
                                                for d, v in zip(days, y, strict=True)))
    png = tmp_path / "cp.png"
    assert main(["changepoint", str(src), "--time", "date", "--plot", str(png)]) == 0
    capsys.readouterr()
    ax = figures[-1].axes[0]
    x = date2num(np.array(days, dtype="datetime64[D]"))
    np.testing.assert_allclose(ax.get_xlim(), [x[0] - 0.5, x[-1] + 0.5])  # half a day
    assert isinstance(ax.xaxis.get_major_formatter(), ConciseDateFormatter)
    observations = next(li for li in ax.lines if li.get_label() == "observations")
    np.testing.assert_array_equal(observations.get_xdata(), x)
    assert ax.get_ylabel() == "level (m)"
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_changepoint_plot_numeric_time_column_and_headerless(tmp_path, capsys, figures):
    y = _step_series(80, seed=1)
    src = tmp_path / "t.csv"
    src.write_text("seconds,v\n" + "".join(f"{10 * i + 5},{_cell(v)}\n" for i, v in enumerate(y)))
    assert main(["changepoint", str(src), "--time", "seconds", "--column", "v",
                 "--plot", str(tmp_path / "a.png")]) == 0
    ax = figures[-1].axes[0]
    np.testing.assert_allclose(ax.get_xlim(), [0.0, 800.0])  # 5 - 5 .. 795 + 5
    assert ax.get_ylabel() == "v" and ax.get_xlabel() == "t"
    bare = tmp_path / "bare.txt"  # no header: no column name, rows numbered from 0
    bare.write_text("".join(f"{_cell(v)}\n" for v in y))
    assert main(["changepoint", str(bare), "--plot", str(tmp_path / "b.png")]) == 0
    ax = figures[-1].axes[0]
    np.testing.assert_allclose(ax.get_xlim(), [-0.5, y.size - 0.5])
    assert ax.get_ylabel() == "y"
    capsys.readouterr()


@pytest.mark.parametrize("smooth", [False, True])
def test_kalman_plot_time_stamps_band_and_legend(tmp_path, capsys, figures, smooth):
    y = 0.3 * np.arange(60.0) + np.random.default_rng(2).normal(0.0, 1.0, 60)
    y[[0, 20, 21]] = np.nan  # the first step missing: no band until the position is seen
    y[40] = 80.0
    days = _days(y.size)
    src = tmp_path / "track.csv"
    src.write_text("when,position (km)\n" + "".join(f"{d},{_cell(v)}\n"
                                                    for d, v in zip(days, y, strict=True)))
    out, png = tmp_path / "out.csv", tmp_path / "k.png"
    assert main(["kalman", str(src), "--out", str(out), "--plot", str(png),
                 *(["--smooth"] if smooth else [])]) == 0
    capsys.readouterr()
    got = _read(out)
    ax, axd = figures[-1].axes
    x = date2num(np.array(days, dtype="datetime64[D]"))
    kind = "smoothed" if smooth else "filtered"
    assert _legend(ax)[:3] == [f"{kind} position ± 2 sd", "observations", f"{kind} position"]
    assert "missing observations (3)" in _legend(ax)
    assert ax.get_ylabel() == "position (km)"
    assert isinstance(axd.xaxis.get_major_formatter(), ConciseDateFormatter)
    np.testing.assert_array_equal(ax.lines[0].get_xdata(), x)
    position = got["position"].astype(float)
    np.testing.assert_allclose(ax.lines[1].get_ydata(), position)
    # the band is position ± 2 position_sd of the CLI's own output, where that sd is finite
    sd = got["position_sd"].astype(float)
    finite = np.isfinite(sd)
    assert finite[0] == smooth and finite[1:].all()  # the smoother informs the first step
    band = ax.collections[0].get_paths()[0].vertices
    upper = dict(zip(band[:, 0], band[:, 1], strict=False))  # last vertex per x: upper edge
    np.testing.assert_allclose([upper[v] for v in x[finite]],
                               (position + 2 * sd)[finite], rtol=1e-8)  # CSV: 10 digits
    assert band[:, 0].min() == x[0 if smooth else 1]  # no band at an uninformed step


def test_kalman_plot_shows_every_axis_of_a_2d_track(tmp_path, capsys, figures):
    rng = np.random.default_rng(3)
    xs = np.cumsum(rng.normal(0.0, 1.0, 50))
    ys = -0.5 * np.arange(50.0) + rng.normal(0.0, 1.0, 50)
    ys[10] = np.nan
    src = tmp_path / "xy.csv"
    src.write_text("east,north\n" + "".join(f"{_cell(a)},{_cell(b)}\n"
                                             for a, b in zip(xs, ys, strict=True)))
    out = tmp_path / "o.csv"
    assert main(["kalman", str(src), "--column", "east", "north", "--smooth",
                 "--out", str(out), "--plot", str(tmp_path / "xy.png")]) == 0
    capsys.readouterr()
    got = _read(out)
    *panels, axd = figures[-1].axes
    assert [a.get_ylabel() for a in panels] == ["east", "north"]
    assert axd.get_ylabel() == "log10 discount"  # one discount per (vector) observation
    for a, name, obs in zip(panels, ("east", "north"), (xs, ys), strict=True):
        np.testing.assert_array_equal(a.lines[0].get_xdata(), np.arange(1, 51))  # 1..T
        np.testing.assert_array_equal(a.lines[0].get_ydata(), obs)
        np.testing.assert_allclose(a.lines[1].get_ydata(),
                                   got[f"position_{name}"].astype(float))
        assert "smoothed position ± 2 sd" in _legend(a)
    assert "missing observations (1)" in _legend(panels[1])
    assert "missing" not in " ".join(_legend(panels[0]))
    assert "first axis" not in panels[0].get_title()
