"""``possibly changepoint`` through ``possibly.cli.main``."""

from __future__ import annotations

import io
import json
import re

import numpy as np
import pytest

import possibly as ps
from possibly.cli import main
from possibly.cli.tables import parse_table


@pytest.fixture
def series_file(tmp_path):
    y, cps, _ = ps.datasets.piecewise_constant(400, n_changes=2, outlier_rate=0.0, seed=2)
    path = tmp_path / "series.csv"
    rows = ["depth,value"] + [f"{i},{float(v)!r}" for i, v in enumerate(y)]
    rows[11] = "10,"  # a missing value
    path.write_text("\n".join(rows) + "\n")
    return path, y, cps


def test_text_output_csv_column(series_file, capsys):
    path, y, cps = series_file
    assert main(["changepoint", str(path), "--column", "value", "--sigma", "1"]) == 0
    out = capsys.readouterr().out
    assert "400 observations (1 missing)" in out
    y = y.copy()
    y[10] = np.nan
    expect = ps.ChangepointDetector(sigma=1.0).fit(y).changepoints
    assert np.all(np.abs(expect - cps) <= 2)
    assert f"change points ({expect.size}): {', '.join(map(str, expect))}" in out


def test_json_and_csv_formats(series_file, capsys):
    path, _, cps = series_file
    assert main(["changepoint", str(path), "--column", "value", "--format", "json",
                 "--model", "normal"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["model"] == "normal" and doc["forgetting"] == 0.9
    assert doc["sigma_estimated"] and doc["n"] == 400 and doc["n_missing"] == 1
    assert np.all(np.abs(np.array(doc["changepoints"]) - cps) <= 2)
    assert doc["segments"][0]["start"] == 0 and doc["segments"][-1]["stop"] == 400
    assert main(["changepoint", str(path), "--column", "1", "--format", "csv",
                 "--standard", "--sigma", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split(",") == ["t", "y", "map_run_length", "mean", "consistency",
                                   "discount", "changepoint", "outlier", "anomaly"]
    assert len(lines) == 401
    assert lines[11].split(",")[1] == ""  # the missing value
    assert {ln.split(",")[5] for ln in lines[1:] if ln.split(",")[5]} == {"1.0"}  # standard


def test_plain_one_column_file_and_stdin(tmp_path, capsys, monkeypatch):
    path = tmp_path / "y.txt"
    path.write_text("\n".join(["0.0", "0.1", "-0.1", "0.2"] * 10 + ["5.0", "5.1"] * 20))
    assert main(["changepoint", str(path), "--sigma", "0.5", "--hazard", "0.01"]) == 0
    assert "change points (1): 40" in capsys.readouterr().out
    monkeypatch.setattr("sys.stdin", io.StringIO(path.read_text()))
    assert main(["changepoint", "-", "--sigma", "0.5", "--hazard", "0.01"]) == 0
    assert "change points (1): 40" in capsys.readouterr().out


def test_example_well_log_and_plot(tmp_path, capsys):
    png = tmp_path / "cp.png"
    assert main(["changepoint", "--example", "well-log", "--sigma", "2500",
                 "--plot", str(png)]) == 0
    out = capsys.readouterr().out
    assert "4050 observations" in out and "change points (21)" in out
    assert png.stat().st_size > 10_000 and png.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize(("content", "args", "match"), [
    ("", [], "is empty"),
    ("\n\n", [], "is empty"),
    ("a,b\n", [], "header but no values"),
    ("a,b\n1,2\n3,x\n", ["--column", "b"], "line 3, column b: non-numeric cell 'x'"),
    ("a,b\n1,2\n", [], "has 2 columns .a, b.: choose one with --column"),
    ("a,b\n1,2\n", ["--column", "c"], "--column 'c': no such column"),
    ("1,2\n3\n", ["--column", "0"], "line 2: 1 cell.s., expected 2"),
    ("NA\nNA\n", [], "no observed"),
    ("1\n2\n3\n", ["--sigma", "0"], r"argument --sigma: must be 'auto' or a number in \[1e-100"),
    ("1\n2\n3\n", ["--sigma", "-2"], r"argument --sigma: must be 'auto' or a number in"),
    ("1\n2\n3\n", ["--hazard", "1.5"], r"argument --hazard: must be a number in \(1e-12, 0.25\]"),
    ("1\n2\n3\n", ["--hazard", "0"], r"argument --hazard: must be a number in \(1e-12, 0.25\]"),
    ("1\n2\n3\n", ["--forgetting", "0"], r"argument --forgetting: must be a number in \(0, 1\]"),
    ("1\n2\n3\n", ["--tau", "2"], r"argument --tau: must be a number in \(0, 1\]"),
    ("1\n1\n1\n1\n", ["--model", "normal"], "zero median absolute deviation"),
    ("1\n1\n1\n1\n", ["--sigma", "auto"], "zero median absolute deviation"),  # normal
    ("1\n2\n3\n", ["--model", "auto", "--sigma", "1"],
     "--sigma is the noise scale of --model normal.*drop --sigma or use --model normal"),
    ("1\n2\n3\n", ["--model", "auto", "--sigma", "auto"], "--sigma .*--model normal"),
    ("1\n2\n3\n", ["--model", "trend"], "argument --model: invalid choice"),
    ("1\ninf\n3\n", ["--sigma", "1"], "infinite"),
])
def test_bad_input_one_line_exit_2(tmp_path, capsys, content, args, match):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    assert main(["changepoint", str(path), *args]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("possibly changepoint")
    assert "error:" in err
    import re

    assert re.search(match, err), err


def test_missing_file_binary_file_and_usage(tmp_path, capsys):
    assert main(["changepoint", str(tmp_path / "nope.csv")]) == 2
    assert "No such file" in capsys.readouterr().err
    binary = tmp_path / "b.bin"
    binary.write_bytes(b"\xff\xfe\x00\x81")
    assert main(["changepoint", str(binary)]) == 2
    assert "not a text file" in capsys.readouterr().err
    assert main(["changepoint"]) == 2
    assert "give a FILE" in capsys.readouterr().err
    assert main(["changepoint", "x", "--sigma", "wide"]) == 2
    assert "must be 'auto' or a number" in capsys.readouterr().err


def test_read_series_headerless_index():
    assert parse_table("1;2\n3;4\n").numbers(["1"])[:, 0].tolist() == [2.0, 4.0]
    y = parse_table("1 2\n3 NaN\n-4 \t 5\n").numbers(["1"])[:, 0]
    assert np.isnan(y[1]) and y[[0, 2]].tolist() == [2.0, 5.0]


def test_model_option_default_auto(series_file, capsys):
    """No --model: the library's default models; each segment's model instead of sigma."""
    path, y, cps = series_file
    y = y.copy()
    y[10] = np.nan
    expect = ps.ChangepointDetector().fit(y)
    assert np.all(np.abs(expect.changepoints - cps) <= 2)
    for argv in ([], ["--model", "auto"]):
        assert main(["changepoint", str(path), "--column", "value", *argv]) == 0
        out = capsys.readouterr().out
        assert "sigma" not in out and "model auto (segments: level, linear trend or quadratic " \
            "trend; noise scale unknown" in out and "forgetting = 1\n" in out
        assert f"change points ({expect.changepoints.size}): " \
            f"{', '.join(map(str, expect.changepoints))}\n" in out
        assert f"outliers ({expect.outliers.size}): " \
            f"{', '.join(map(str, expect.outliers)) or 'none'}\n" in out
        assert "segments (start, stop, model, mean without outliers):" in out
        rows = out.split("mean without outliers):\n")[1].splitlines()
        assert [r.split(")", 1)[1].split()[:-1] for r in rows] == [
            n.split() for n in expect.segment_model_names]
    # JSON: well-formed, no sigma, the model of each segment
    assert main(["changepoint", str(path), "--column", "value", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["model"] == "auto" and "sigma" not in doc and "sigma_estimated" not in doc
    assert doc["segment_models"] == ["level", "linear trend", "quadratic trend"]
    assert doc["forgetting"] == 1.0 and doc["changepoints"] == expect.changepoints.tolist()
    assert [s["model"] for s in doc["segments"]] == expect.segment_model_names
    assert [(s["start"], s["stop"]) for s in doc["segments"]] == expect.segments
    # CSV: one row per observation with the model of its segment
    assert main(["changepoint", str(path), "--column", "value", "--format", "csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split(",") == ["t", "y", "map_run_length", "mean", "consistency",
                                   "discount", "changepoint", "outlier", "segment_model",
                                   "anomaly"]
    assert len(lines) == 401 and all(len(ln.split(",")) == 10 for ln in lines)
    models = [ln.split(",")[8] for ln in lines[1:]]
    for (a, b), name in zip(expect.segments, expect.segment_model_names, strict=True):
        assert set(models[a:b]) == {name}
    assert [float(ln.split(",")[5]) for ln in lines[1:] if ln.split(",")[5]] == \
        pytest.approx(expect.discount[~np.isnan(y)].tolist(), rel=1e-15)


def test_model_option_sigma_and_forgetting_select_normal(series_file, capsys):
    """--sigma or --forgetting without --model: the paper's model, as documented."""
    path, y, _ = series_file
    y = y.copy()
    y[10] = np.nan
    estimated = "sigma = ... (estimated: MAD of first differences / sqrt 2)"
    for argv, kwargs, line in (
            (["--sigma", "1"], {"sigma": 1.0},
             "robust detector: sigma = 1 (given), hazard = 0.0025, forgetting = 0.9"),
            (["--sigma", "auto"], {"model": "normal"},
             f"robust detector: {estimated}, hazard = 0.0025, forgetting = 0.9"),
            (["--forgetting", "0.95"], {"model": "normal", "forgetting": 0.95},
             f"robust detector: {estimated}, hazard = 0.0025, forgetting = 0.95"),
            (["--model", "normal"], {"model": "normal"},
             f"robust detector: {estimated}, hazard = 0.0025, forgetting = 0.9"),
            (["--model", "auto", "--forgetting", "0.95"], {"forgetting": 0.95},
             "robust detector: model auto (segments: ...), hazard = 0.0025, forgetting = 0.95")):
        assert main(["changepoint", str(path), "--column", "value", *argv]) == 0
        lines = capsys.readouterr().out.splitlines()
        pattern = ".*".join(re.escape(piece) for piece in line.split("..."))
        assert re.fullmatch(pattern, lines[1]), (argv, lines[1])
        expect = ps.ChangepointDetector(**kwargs).fit(y).changepoints
        assert lines[2] == f"change points ({expect.size}): {', '.join(map(str, expect))}"


def test_model_option_time_stamps(tmp_path, capsys):
    """The default model's text output keeps the time stamps of the time column."""
    t = np.arange(120.0)
    # the noise has no cycle (np.resize([0.2, -0.2, 0.0, 0.1]) would be one of 4 rows)
    y = np.where(t < 60, 0.0, 0.3 * (t - 60)) + np.round(0.2 * np.sin(t * t), 1)
    stamps = [f"2024-01-{1 + i // 24:02d}T{i % 24:02d}:00" for i in range(120)]
    path = tmp_path / "ts.csv"
    path.write_text("when,v\n" + "".join(f"{s},{float(v)!r}\n" for s, v in zip(stamps, y,
                                                                        strict=True)))
    expect = ps.ChangepointDetector().fit(y)
    assert expect.segment_model_names[-1] == "linear trend" and expect.changepoints.size
    assert main(["changepoint", str(path)]) == 0
    out = capsys.readouterr().out
    cps = ", ".join(f"{c} [{stamps[c]}]" for c in expect.changepoints)
    assert f"change points ({expect.changepoints.size}): {cps}\n" in out
    assert "segments (start, stop, model, mean without outliers, first time stamp):" in out
    last = out.splitlines()[-1]
    assert "linear trend" in last and last.endswith(stamps[expect.segments[-1][0]])


@pytest.fixture
def correlation_file(tmp_path):
    """600 rows of two unit-variance, zero-mean columns whose correlation goes from 0 to 0.9
    at row 300: each column alone is the same white noise throughout."""
    rng = np.random.default_rng(7)
    before = rng.normal(size=(300, 2))
    after = rng.normal(size=(300, 2)) @ np.linalg.cholesky([[1.0, 0.9], [0.9, 1.0]]).T
    y = np.r_[before, after]
    path = tmp_path / "pair.csv"
    path.write_text("a,b\n" + "".join(f"{u!r},{v!r}\n" for u, v in y.tolist()))
    return path, y


#: how far from row 300 the detected change may be
CORRELATION_TOLERANCE = 5


@pytest.mark.parametrize("columns", [["--column", "a", "--column", "b"],
                                     ["--column", "a", "b"]])
def test_several_columns_are_one_vector_series(correlation_file, capsys, columns):
    """Only the correlation changes: the vector model of both columns finds it near row 300."""
    path, y = correlation_file
    assert main(["changepoint", str(path), *columns, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["columns"] == ["a", "b"] and doc["n"] == 600
    assert doc["segment_models"] == ["MultivariateNormalSegments"]
    assert len(doc["changepoints"]) == 1
    assert abs(doc["changepoints"][0] - 300) <= CORRELATION_TOLERANCE
    # segment means per column, outliers left out: the mean of the rows (none are outliers)
    assert doc["outliers"] == []
    first, second = doc["segments"]
    cp = doc["changepoints"][0]
    assert np.allclose(first["mean"], y[:cp].mean(axis=0))
    assert np.allclose(second["mean"], y[cp:].mean(axis=0))


def test_one_column_of_the_correlation_change_shows_none(correlation_file, capsys):
    """Each column alone is white noise: the change is in the pair only."""
    path, _ = correlation_file
    for column in ("a", "b"):
        assert main(["changepoint", str(path), "--column", column, "--format", "json"]) == 0
        assert json.loads(capsys.readouterr().out)["changepoints"] == []


def test_vector_series_csv_text_and_plot(correlation_file, tmp_path, capsys):
    path, y = correlation_file
    assert main(["changepoint", str(path), "--column", "b", "a", "--format", "csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split(",") == ["t", "y_b", "y_a", "map_run_length", "mean_b", "mean_a",
                                   "consistency", "discount", "changepoint", "outlier",
                                   "segment_model", "anomaly"]
    assert len(lines) == 601
    row = lines[1].split(",")
    assert [float(row[1]), float(row[2])] == [y[0, 1], y[0, 0]]
    png = tmp_path / "pair.png"
    assert main(["changepoint", str(path), "--column", "a", "b", "--plot", str(png)]) == 0
    out = capsys.readouterr().out
    assert "columns a, b as one vector" in out and "mean without outliers of a, b" in out
    assert png.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("args", [["--model", "normal"], ["--sigma", "1"],
                                  ["--forgetting", "0.9"]])
def test_vector_series_refuses_the_scalar_model(correlation_file, capsys, args):
    path, _ = correlation_file
    assert main(["changepoint", str(path), "--column", "a", "b", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "several columns are one vector series" in err and "--model normal" in err


def test_csv_output_computes_the_consistency_column_once(series_file, capsys, monkeypatch):
    # res.consistency builds the whole column: read per row, the output took O(T²) steps
    from possibly.changepoint.result import ChangepointResult

    calls = []
    whole = ChangepointResult.consistency.fget

    def counted(res):
        calls.append(1)
        return whole(res)

    monkeypatch.setattr(ChangepointResult, "consistency", property(counted))
    path, y, _ = series_file
    assert main(["changepoint", str(path), "--column", "value", "--format", "csv",
                 "--sigma", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 401 and len(calls) == 1
    res = ps.ChangepointDetector(sigma=1.0).fit(np.where(np.arange(400) == 10, np.nan, y))
    column = [ln.split(",")[4] for ln in lines[1:]]
    assert column == ["" if np.isnan(c) else repr(float(c)) for c in res.consistency]


def test_a_short_input_runs_the_numpy_engine_without_loading_numba(tmp_path, imports_numba):
    """``--engine auto`` (the default) runs a short input on the numpy engine, its hindsight
    outliers included: numba's own start in a new process (importing it, loading the cached
    loops) would cost more than the whole run without it. The process never imports numba."""
    src = tmp_path / "series.csv"
    y = ps.datasets.well_log()[:100].copy()
    y[40] += 4e4  # a spike: the hindsight judges it
    np.savetxt(src, y, header="y", comments="", fmt="%.6f")
    assert not imports_numba(["changepoint", str(src), "--out", str(tmp_path / "out.txt")])
    assert "outliers (1): 40" in (tmp_path / "out.txt").read_text()


def test_the_engine_option_and_the_size_rule(tmp_path, monkeypatch):
    """``--engine`` reaches the detector whatever the input's size; ``auto`` (the default)
    is the numpy engine up to SMALL_INPUT rows and the library's ``auto`` above."""
    from possibly.cli import changepoint_command

    asked = []
    fit = ps.ChangepointDetector.fit

    def record(self, y):
        asked.append(self.engine)
        self.engine = "numpy"
        return fit(self, y)

    monkeypatch.setattr(ps.ChangepointDetector, "fit", record)
    small = changepoint_command.SMALL_INPUT
    cases = [(50, ["--engine", "numba"], "numba"), (50, ["--engine", "numpy"], "numpy"),
             (small, [], "numpy"), (small + 1, [], "auto"),
             (small + 1, ["--engine", "numpy"], "numpy")]
    for rows, option, expected in cases:
        src = tmp_path / "obs.csv"
        np.savetxt(src, np.random.default_rng(rows).normal(size=rows), header="y",
                   comments="", fmt="%.6f")
        asked.clear()
        assert main(["changepoint", str(src), "--period", "none",
                     "--out", str(tmp_path / "out.txt"), *option]) == 0
        assert asked == [expected], (rows, option, asked)
