"""``possibly demo`` (change points, the default) and ``possibly demo --stream``."""

from __future__ import annotations

import builtins
import re

import numpy as np

from possibly.cli import main
from possibly.datasets import piecewise_constant


def test_changepoint_demo_prints_found_vs_true_and_writes_png(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    # the true change points it prints are the generator's (independent of the detector)
    _, cps, is_out = piecewise_constant(1500, 7, outlier_rate=0.015, seed=1)
    assert f"true change points     {cps.tolist()}" in out
    assert f"true outliers          {np.flatnonzero(is_out).tolist()}" in out
    # both the default and the paper's model are shown, each against the truth
    for name in ("default ", "paper   ", "standard"):
        found = re.search(name + r" found\s+(\d+)", out)
        assert found and int(found.group(1)) >= 1
    assert "NormalMean(sigma, outliers='paper')" in out and "which to pick" in out
    assert "plot written to demo_changepoints.png" in out
    png = tmp_path / "demo_changepoints.png"
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_changepoint_demo_custom_plot_path_and_no_plot(tmp_path, capsys):
    png = tmp_path / "x.png"
    assert main(["demo", "--plot", str(png), "--n", "400", "--changes", "2", "--seed", "3"]) == 0
    assert png.exists()
    capsys.readouterr()
    assert main(["demo", "--plot", "", "--n", "400", "--changes", "2"]) == 0
    assert "plot written" not in capsys.readouterr().out


def test_changepoint_demo_without_matplotlib(tmp_path, monkeypatch, capsys):
    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError("No module named 'matplotlib'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    assert main(["demo", "--plot", str(tmp_path / "x.png"), "--n", "400", "--changes", "2"]) == 0
    out = capsys.readouterr().out
    assert "no plot: plotting needs matplotlib" in out
    assert not (tmp_path / "x.png").exists()


def test_changepoint_demo_bad_arguments(capsys):
    assert main(["demo", "--n", "30", "--changes", "3"]) == 2
    assert "--n must be in [20 * (--changes + 1), 1000000] = [80, 1000000], got 30" in \
        capsys.readouterr().err
    assert main(["demo", "--outlier-rate", "1.5"]) == 2
    assert "argument --outlier-rate: must be a number in [0, 1)" in capsys.readouterr().err
    assert main(["demo", "--hazard", "3", "--plot", ""]) == 2
    assert "argument --hazard: must be a number in (1e-12, 0.25]" in capsys.readouterr().err


def test_demo_n_is_bounded_before_any_work(capsys):
    """#14: ``demo --n 1000000000`` was killed for memory after 94 s; now one line at once."""
    for argv in (["demo", "--n", "1000000000"], ["demo", "--stream", "--n", "1000000000"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1
        assert "argument --n: must be an integer in [2, 1000000], got '1000000000'" in err


def test_stream_demo_still_available(capsys):
    assert main(["demo", "--stream"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("200 observations of N(3, 1)")
    assert "robust update" in out and "standard update" in out
    assert main(["demo", "--stream", "--n", "1"]) == 2
    assert "argument --n: must be an integer in [2, 1000000], got '1'" in capsys.readouterr().err
