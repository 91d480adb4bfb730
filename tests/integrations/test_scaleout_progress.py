"""The progress bar of the scale-out: over the series when the work runs in this process.

A bar is drawn only when asked, on a terminal, with tqdm installed; standard error is replaced
by a terminal stand-in to see it.
"""

from __future__ import annotations

import io
import sys

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")
pytest.importorskip("dask")
pytest.importorskip("tqdm")

import possibly as ps  # noqa: E402
from possibly.cli import main  # noqa: E402
from possibly.integrations.scaleout import changepoints_many, kalman_many  # noqa: E402


class Terminal(io.StringIO):
    """Standard error as a terminal."""

    def isatty(self) -> bool:
        return True


def on_terminal(monkeypatch) -> Terminal:
    """Standard error as a terminal; called in the test itself, since pytest's capture sets
    sys.stderr again after the fixtures."""
    err = Terminal()
    monkeypatch.setattr(sys, "stderr", err)
    return err


def fleet(n_series: int = 3, n: int = 40) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"sensor": np.repeat([f"s{i}" for i in range(n_series)], n),
                         "v": rng.normal(size=n_series * n)})


def test_changepoints_many_counts_the_series_in_this_process(monkeypatch):
    terminal = on_terminal(monkeypatch)
    changepoints_many(fleet(), "sensor", "v", scheduler="synchronous", sigma=1.0,
                      progress=True)
    drawn = terminal.getvalue()
    assert "0/3" in drawn and "series" in drawn


def test_kalman_many_counts_the_tracks_in_this_process(monkeypatch):
    terminal = on_terminal(monkeypatch)
    kalman_many(fleet(), "sensor", "v", ps.filters.constant_velocity(),
                scheduler="synchronous", progress=True)
    assert "0/3" in terminal.getvalue()


def test_no_bar_unless_asked(monkeypatch):
    terminal = on_terminal(monkeypatch)
    changepoints_many(fleet(), "sensor", "v", scheduler="synchronous", sigma=1.0)
    kalman_many(fleet(), "sensor", "v", ps.filters.constant_velocity(),
                scheduler="synchronous", progress=False)
    assert terminal.getvalue() == ""


def test_no_bar_off_a_terminal(capsys):
    changepoints_many(fleet(), "sensor", "v", scheduler="synchronous", sigma=1.0,
                      progress=True)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("command", ["changepoint-many", "kalman-many"])
def test_the_commands_show_it_unless_no_progress(tmp_path, monkeypatch, command):
    terminal = on_terminal(monkeypatch)
    src = tmp_path / "in.csv"
    fleet().to_csv(src, index=False)
    argv = [command, str(src), "--id", "sensor", "--value", "v", "--scheduler", "synchronous"]
    assert main(argv) == 0
    assert "0/3" in terminal.getvalue()
    terminal.truncate(0)
    terminal.seek(0)
    assert main([*argv, "--no-progress"]) == 0
    lines = terminal.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].startswith("3 ")  # the summary line alone
