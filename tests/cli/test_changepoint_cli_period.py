"""``possibly changepoint --period``: the anomaly signal's cycle, given or inferred."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import possibly as ps
from possibly.cli import main


@pytest.fixture
def hourly_file(tmp_path):
    rng = np.random.default_rng(4)
    t = np.arange(24 * 20)
    y = 5.0 * np.sin(2 * np.pi * t / 24) + rng.normal(size=t.size)
    stamps = pd.date_range("2024-03-01", periods=t.size, freq="h")
    path = tmp_path / "hourly.csv"
    rows = ["time,value"] + [f"{s.isoformat()},{float(v)!r}" for s, v in zip(stamps, y,
                                                                               strict=True)]
    path.write_text("\n".join(rows) + "\n")
    return path, pd.Series(y, index=stamps)


def test_period_auto_csv_has_the_detector_anomaly(hourly_file, capsys):
    path, y = hourly_file
    assert main(["changepoint", str(path), "--column", "value", "--time", "time",
                 "--period", "auto", "--format", "csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = lines[0].split(",")
    assert header[-1] == "anomaly"
    got = np.array([float(ln.split(",")[-1]) for ln in lines[1:]])
    expect = ps.ChangepointDetector(period="auto").fit(y)
    assert expect.period == 24
    np.testing.assert_array_equal(got, expect.anomaly)


def test_period_json_and_text(hourly_file, capsys):
    path, y = hourly_file
    assert main(["changepoint", str(path), "--column", "value", "--time", "time",
                 "--period", "auto", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["period"] == 24 and doc["changepoints"] == []
    assert any("cycle 24" in m for m in doc["segment_models"])
    assert main(["changepoint", str(path), "--column", "value", "--period", "12"]) == 0
    assert "period = 12" in capsys.readouterr().out
    assert main(["changepoint", str(path), "--column", "value", "--period", "none",
                 "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["period"] is None
    assert main(["changepoint", str(path), "--column", "value", "--period", "none"]) == 0
    assert "period = none" in capsys.readouterr().out


def test_period_is_inferred_by_default(hourly_file, capsys):
    path, y = hourly_file
    for with_time in (True, False):
        time = ["--time", "time"] if with_time else []
        assert main(["changepoint", str(path), "--column", "value", *time, "--format",
                     "json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        assert doc["period"] == 24 and any("cycle 24" in m for m in doc["segment_models"])
        assert main(["changepoint", str(path), "--column", "value", *time]) == 0
        assert "period = 24 (inferred)" in capsys.readouterr().out
    # the dates give the calendar's candidates, as fit of the dated series does
    assert main(["changepoint", str(path), "--column", "value", "--time", "time",
                 "--format", "csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    got = np.array([float(ln.split(",")[-1]) for ln in lines[1:]])
    np.testing.assert_array_equal(got, ps.ChangepointDetector().fit(y).anomaly)


def test_no_period_on_a_series_without_a_cycle(tmp_path, capsys):
    y = ps.datasets.level_shifts(seed=0)[0]
    path = tmp_path / "shifts.csv"
    path.write_text("value\n" + "\n".join(repr(float(v)) for v in y) + "\n")
    assert main(["changepoint", str(path), "--format", "json"]) == 0
    auto = json.loads(capsys.readouterr().out)
    assert main(["changepoint", str(path), "--format", "json", "--period", "none"]) == 0
    assert json.loads(capsys.readouterr().out) == auto
    assert auto["period"] is None
    assert main(["changepoint", str(path)]) == 0
    assert "period =" not in capsys.readouterr().out


def test_default_period_on_several_columns_is_none(tmp_path, capsys):
    path = tmp_path / "pair.csv"
    path.write_text("a,b\n" + "\n".join(f"{i % 5},{i % 3}" for i in range(60)) + "\n")
    assert main(["changepoint", str(path), "--column", "a", "b", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["period"] is None


@pytest.mark.parametrize("value", ["1", "daily", "2.5", "10000000"])
def test_bad_period_one_line_exit_2(hourly_file, capsys, value):
    path, _ = hourly_file
    assert main(["changepoint", str(path), "--column", "value", "--period", value]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "argument --period" in err[0]
    assert "whole number of rows" in err[0]


def test_period_refused_on_several_columns(tmp_path, capsys):
    path = tmp_path / "pair.csv"
    path.write_text("a,b\n" + "\n".join(f"{i % 5},{i % 3}" for i in range(60)) + "\n")
    assert main(["changepoint", str(path), "--column", "a", "b", "--period", "auto"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--period applies to one column" in err[0]
