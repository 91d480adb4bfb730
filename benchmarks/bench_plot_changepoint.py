"""Benchmark: drawing a change-point result of 10^6 points to a PNG.

Baseline (timed in this process): the naive plot, every point
drawn as a marker, the estimate and the segment means as full lines and one red circle per
outlier. Against it: ``plot_result`` (min/max envelope per column, one outlier mark per
column beyond 300). Both write a 11 × 4.2 inch PNG at 120 dpi; best of N interleaved runs, with
the spread (worst / best).

The result is fitted once (numba engine when installed, about a minute) or loaded from
``--result FILE`` (a pickled ChangepointResult, written there after a fit).

Run: .venv/bin/python benchmarks/bench_plot_changepoint.py [--n 1000000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import pickle
import tempfile
import time

import numpy as np

import possibly as ps
from possibly.plotting import pyplot
from possibly.plotting.changepoint_plots import plot_changepoints


def baseline(result, path) -> None:
    """The pre-issue-16 drawing: every point, every outlier circle."""
    plt = pyplot()
    t = np.arange(result.y.size)
    fig, ax = plt.subplots(figsize=(11, 4.2))
    ax.plot(t, result.y, ".", ms=2.5, color="0.45", label="observations")
    ax.plot(t, result.mean, lw=1.0, color="tab:blue", alpha=0.8, label="online estimate")
    ax.plot(t, result.segment_fit()[0], lw=2.0, color="tab:orange", label="segment fits")
    for i, c in enumerate(result.changepoints):
        ax.axvline(c - 0.5, color="tab:green", lw=1.0, label="change points" if i == 0 else None)
    outs = result.outliers
    ax.plot(outs, result.y[outs], "o", mfc="none", mec="tab:red", ms=7, label="outliers")
    ax.legend(loc="best", fontsize=8, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10**6)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--result", help="pickled result to load, or to write after fitting")
    args = ap.parse_args()
    if args.result and os.path.exists(args.result):
        with open(args.result, "rb") as fh:
            result = pickle.load(fh)
    else:
        y, _, _ = ps.datasets.piecewise_constant(args.n, n_changes=50, seed=1)
        start = time.perf_counter()
        result = ps.ChangepointDetector(model="normal", hazard=1e-4).fit(y)  # as measured
        print(f"fit: {time.perf_counter() - start:.1f} s")
        if args.result:
            with open(args.result, "wb") as fh:
                pickle.dump(result, fh)
    print(f"T = {result.y.size}, {result.changepoints.size} change points, "
          f"{result.outliers.size} outliers")
    rows = {"baseline (all points, all circles)": baseline,
            "plot_changepoints (plot_result)": plot_changepoints}
    times = {name: [] for name in rows}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.repeats):
            for name, fn in rows.items():
                start = time.perf_counter()
                fn(result, os.path.join(tmp, "figure.png"))
                times[name].append(time.perf_counter() - start)
    base = min(times["baseline (all points, all circles)"])
    print(f"{'':38s} {'best (s)':>9s} {'worst/best':>11s} {'ratio':>7s}")
    for name, ts in times.items():
        print(f"{name:38s} {min(ts):9.2f} {max(ts) / min(ts):11.2f} {min(ts) / base:7.3f}")


if __name__ == "__main__":
    main()
