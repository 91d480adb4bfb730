"""``possibly kalman``, called in-process through ``possibly.cli.main``."""

import csv

import numpy as np
import pytest

import possibly as ps
from possibly.cli import main


def read_csv(path):
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    return {k: np.array([float(r[k]) for r in rows]) for k in rows[0]}


def test_filters_a_column_with_header_gaps_and_an_outlier(tmp_path, capsys):
    src = tmp_path / "obs.csv"
    src.write_text("position\n0.1\n0.3\n\n40\n0.5\nnan\n0.7\n0.9\n")
    out = tmp_path / "out.csv"
    png = tmp_path / "out.png"
    assert main(["kalman", str(src), "--model", "constant-velocity", "--dt", "1",
                 "--accel-sd", "0.05", "--obs-sd", "1", "--out", str(out),
                 "--plot", str(png)]) == 0
    assert "8 time steps (2 missing)" in capsys.readouterr().out
    got = read_csv(out)
    assert list(got) == ["t", "observation", "position", "velocity", "position_sd",
                         "velocity_sd", "consistency", "discount"]
    np.testing.assert_array_equal(got["t"], np.arange(8))  # rows numbered from 0, as the API
    # exact uninformative prior: the first two positions are the observations themselves
    np.testing.assert_allclose(got["position"][:2], [0.1, 0.3])
    np.testing.assert_allclose(got["velocity"][1], 0.2)
    # the first position is observed: its sd is the measurement's, the velocity's is unknown
    assert got["position_sd"][0] == pytest.approx(1.0) and np.isinf(got["velocity_sd"][0])
    assert np.isnan(got["discount"][[2, 5]]).all()
    assert got["discount"][3] < 1e-6  # the outlier
    ys = np.array([0.1, 0.3, np.nan, 40, 0.5, np.nan, 0.7, 0.9])
    ref = ps.KalmanFilter(*ps.filters.constant_velocity()).filter(ys)
    np.testing.assert_allclose(got["position"], ref.mean[:, 0], rtol=1e-9)
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_plain_column_to_stdout_standard_and_smooth(tmp_path, capsys):
    src = tmp_path / "obs.txt"
    src.write_text("1.0\n2.1\n2.9\n4.2\n")
    assert main(["kalman", str(src), "--standard"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("t,observation,position") and len(lines) == 5
    assert main(["kalman", str(src), "--smooth", "--tau", "0.1", "--obs-sd", "1",
                 "--accel-sd", "0.05"]) == 0
    rows = capsys.readouterr().out.strip().splitlines()[1:]
    smoothed = [float(r.split(",")[2]) for r in rows]
    ref = ps.KalmanFilter(*ps.filters.constant_velocity(), tau=0.1).smooth([1.0, 2.1, 2.9, 4.2])
    np.testing.assert_allclose(smoothed, ref.mean[:, 0], rtol=1e-9)


def test_column_choice(tmp_path, capsys):
    src = tmp_path / "two.csv"
    src.write_text("time,y\n1,0.5\n2,0.7\n3,\n")
    assert main(["kalman", str(src), "--column", "y"]) == 0
    by_name = capsys.readouterr().out
    assert main(["kalman", str(src), "--column", "1"]) == 0
    assert capsys.readouterr().out == by_name
    assert "\n2,nan," in by_name


@pytest.mark.parametrize("content, extra, message", [
    ("0.1\nabc\n0.3\n", [], "line 2, column 0: non-numeric cell 'abc'"),
    ("a,b\n1,2\n", [], "has 2 columns (a, b): choose one with --column"),
    ("1,2\n3\n", ["--column", "0"], "line 2: 1 cell(s), expected 2"),
    ("", [], "is empty"),
    ("y\n", [], "header but no values"),
    ("1.0\ninf\n", [], "line 2, column 0: infinite or out-of-range value 'inf'"),
    ("1.0\n1e309\n", [], "line 2, column 0: infinite or out-of-range value '1e309'"),
    ("a,b\n1,2\n", ["--column", "c"], "--column 'c': no such column"),
    ("a,b\n1,2\n", ["--column", "5"], "a column index must be in [0, 1]"),
    ("1.0\n", ["--standard", "--tau", "0.1"], "--tau applies to the robust version only"),
    ("1.0\n", ["--tau", "2"], "argument --tau: must be a number in (0, 1], got '2'"),
    ("1.0\n", ["--dt", "-1"], "argument --dt: must be a number in [1e-10, 1e+10], got '-1'"),
    ("1.0\n", ["--obs-sd", "nan"], "argument --obs-sd: must be a number in [1e-100, 1e+100]"),
    ("1.0\n", ["--obs-sd", "1e-300"], "argument --obs-sd: must be a number in [1e-100"),
    ("1.0\n", ["--accel-sd", "1e300"], "argument --accel-sd: must be a number in [1e-100"),
])
def test_malformed_input_gives_one_line_and_status_2(tmp_path, capsys, content, extra, message):
    src = tmp_path / "bad.csv"
    src.write_text(content)
    assert main(["kalman", str(src), *extra]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1 and err.startswith("possibly kalman")


def test_missing_file_and_unknown_model(tmp_path, capsys):
    assert main(["kalman", str(tmp_path / "nope.csv")]) == 2
    assert "No such file" in capsys.readouterr().err
    assert main(["kalman", str(tmp_path / "nope.csv"), "--model", "random-walk"]) == 2
    assert "invalid choice: 'random-walk'" in capsys.readouterr().err


def test_smooth_counts_an_outlier_the_robust_start_rejected_as_discounted(tmp_path, capsys):
    rng = np.random.default_rng(4)
    ys = np.arange(30.0) + rng.normal(size=30) * 0.5
    ys[0] = 1e6
    src = tmp_path / "obs.csv"
    src.write_text("position\n" + "\n".join(repr(float(y)) for y in ys) + "\n")
    for smooth in (["--smooth"], []):
        out = tmp_path / f"out{len(smooth)}.csv"
        assert main(["kalman", str(src), "--dt", "1", "--accel-sd", "0.05", "--obs-sd", "1",
                     "--out", str(out), *smooth]) == 0
        line = capsys.readouterr().out
        got = read_csv(out)
        if smooth:
            assert "30 time steps (0 missing); 1 observation(s) discounted" in line
            assert got["discount"][0] == 0.0 and not np.isnan(got["consistency"]).any()
            assert abs(got["position"][0]) < 10.0  # smoothed past the outlier
        else:  # the filter took it whole at step 0 (nothing could judge it yet)
            assert got["discount"][0] == 1.0


def test_repeated_column_flags_are_one_vector(tmp_path):
    """``--column x --column y`` is ``--column x y`` (not the last column alone)."""
    src = tmp_path / "track.csv"
    src.write_text("x,y\n0,0\n1,2\n2,4\n3,6\n")
    outs = [tmp_path / "a.csv", tmp_path / "b.csv"]
    assert main(["kalman", str(src), "--column", "x", "y", "--out", str(outs[0])]) == 0
    assert main(["kalman", str(src), "--column", "x", "--column", "y", "--out",
                 str(outs[1])]) == 0
    assert outs[0].read_text() == outs[1].read_text()
    assert "position_x" in read_csv(outs[1])


def test_the_mostly_discounted_advice_knows_the_scales_came_from_the_data(tmp_path, capsys):
    """Scales set from data in steps (one jump, then a constant): the warning must not tell
    the user to leave out the scales they already left out."""
    path = tmp_path / "steps.csv"
    path.write_text("\n\n\n\n1.0,0.0,0.0\n\n" + "\n".join(["0.0,0.0,0.0"] * 5))
    assert main(["kalman", str(path), "--column", "0"]) == 0
    err = capsys.readouterr().err
    assert "noise scales from the data" in err and "were discounted below" in err
    assert "leave them out" not in err and "--obs-sd and --accel-sd" in err
    assert main(["kalman", str(path), "--column", "0", "--obs-sd", "0.001",
                 "--accel-sd", "0.001"]) == 0
    assert "leave them out" in capsys.readouterr().err  # given scales: leaving them out helps


def test_a_short_input_runs_numpys_steps_without_loading_numba(tmp_path, imports_numba):
    """``--engine auto`` (the default) filters a short input with numpy's steps: numba's own
    start in a new process (importing it, loading the cached loops) would cost more than the
    whole run without it. The process never imports numba."""
    src = tmp_path / "track.csv"
    np.savetxt(src, np.cumsum(np.random.default_rng(2).normal(size=100)), header="x",
               comments="", fmt="%.6f")
    assert not imports_numba(["kalman", str(src), "--out", str(tmp_path / "out.csv")])


def test_the_engine_option_reaches_the_library_unchanged(tmp_path, monkeypatch):
    """``--engine`` reaches the filter and the smoother whatever the input's size: ``auto``
    (the default) is the library's own rule (KalmanFilter's engine="auto"), not another."""
    from possibly.filters.kalman import KalmanFilter

    asked = []
    filter_, smooth = KalmanFilter.filter, KalmanFilter.smooth

    def record(method):
        def call(self, ys, *args, engine="auto", **kwargs):
            asked.append(engine)
            return method(self, ys, *args, engine="numpy", **kwargs)
        return call

    monkeypatch.setattr(KalmanFilter, "filter", record(filter_))
    monkeypatch.setattr(KalmanFilter, "smooth", record(smooth))
    cases = [(50, ["--engine", "numba"], "numba"), (50, ["--engine", "numpy"], "numpy"),
             (50, [], "auto"), (2000, [], "auto"), (2000, ["--engine", "numpy"], "numpy")]
    for rows, option, expected in cases:
        src = tmp_path / "obs.csv"
        np.savetxt(src, np.cumsum(np.random.default_rng(rows).normal(size=rows)), header="x",
                   comments="", fmt="%.6f")
        for smoothing in ([], ["--smooth"]):
            asked.clear()
            assert main(["kalman", str(src), "--accel-sd", "0.05", "--obs-sd", "1",
                         "--out", str(tmp_path / "out.csv"), *option, *smoothing]) == 0
            assert asked[:1] == [expected], (rows, option, smoothing, asked)


def test_a_long_input_runs_the_compiled_loop(tmp_path, count_calls):
    """``--engine auto`` on an input whose numpy work passes the library's budget: the
    compiled loop (where a short one runs numpy's steps)."""
    pytest.importorskip("numba")
    from possibly.filters import _common, kalman_numba

    calls = count_calls(kalman_numba, "run_start")
    rows = int(_common.AUTO_NUMPY_BUDGET // _common.numpy_work(1, 1, 2)) + 1
    for n, compiled in ((100, False), (rows, True)):
        src = tmp_path / "obs.csv"
        np.savetxt(src, np.cumsum(np.random.default_rng(3).normal(size=n)), header="x",
                   comments="", fmt="%.6f")
        calls.clear()
        assert main(["kalman", str(src), "--out", str(tmp_path / "out.csv")]) == 0
        assert (len(calls) == 1) == compiled, n
