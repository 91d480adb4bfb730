"""``possibly changepoint`` through ``possibly.cli.main``."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

import possibly as ps
from possibly.cli import main
from possibly.tables import parse_table


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
    assert main(["changepoint", str(path), "--column", "value", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["sigma_estimated"] and doc["n"] == 400 and doc["n_missing"] == 1
    assert np.all(np.abs(np.array(doc["changepoints"]) - cps) <= 2)
    assert doc["segments"][0]["start"] == 0 and doc["segments"][-1]["stop"] == 400
    assert main(["changepoint", str(path), "--column", "1", "--format", "csv",
                 "--standard", "--sigma", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split(",") == ["t", "y", "map_run_length", "mean", "consistency",
                                   "discount", "changepoint", "outlier"]
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
    ("1\n1\n1\n1\n", [], "zero median absolute deviation"),
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
