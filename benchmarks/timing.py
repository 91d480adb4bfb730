"""Timing helper shared by the benchmark scripts (run as ``python benchmarks/bench_*.py``)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence

import numpy as np


def best_of(fn: Callable[[], object], repeats: int) -> float:
    """The shortest of ``repeats`` wall-clock timings of ``fn()``, in seconds.

    The minimum is the least noisy estimate on a shared machine: interference only adds time.
    """
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def load_kalman_loops(model) -> None:
    """Load the Kalman filters' compiled loops for ``model`` (an ``(F, Q, H, R)`` sequence: the
    filter with its robust start, the smoother, the learned noise scale) when numba is
    installed, so that the ``engine="auto"`` rows that follow time them: a process's first
    small calls would run numpy's steps, until a budget of numpy work."""
    import importlib.util

    import possibly as ps

    if importlib.util.find_spec("numba") is None:
        return
    kf = ps.KalmanFilter(*model)
    rng = np.random.default_rng(0)  # 200 steps: the learned scale past its start
    y = np.cumsum(rng.normal(size=(200, kf.obs_dim)), axis=0) + rng.normal(size=(200, 1))
    kf.smooth(y, engine="numba")
    ps.KalmanFilter(*model, learn_noise_scale=True).fit(y, engine="numba")


def update_latency(update: Callable[[float], object], values: Sequence[float],
                   checkpoints: Sequence[int], window: int = 2000,
                   repeats: int = 5) -> dict[int, tuple[list[float], list[float]]]:
    """Latency of ``update(v)`` per call, in µs, around each checkpoint of a long stream.

    ``values`` are streamed one ``update`` call each, in order, until the last checkpoint
    plus ``repeats`` windows; at each checkpoint ``c`` (a count of calls already made),
    ``repeats`` consecutive windows of ``window`` calls are timed call by call. Returns, per
    checkpoint, the p50 and the p99 of each window (the spread between windows is the
    measurement's noise on a shared machine).
    """
    clock = time.perf_counter
    out: dict[int, tuple[list[float], list[float]]] = {}
    lat = np.empty(window)
    i = 0
    for c in checkpoints:
        for v in values[i:c]:  # untimed up to the checkpoint
            update(v)
        i = c
        p50, p99 = [], []
        for _ in range(repeats):
            for k, v in enumerate(values[i:i + window]):
                t0 = clock()
                update(v)
                lat[k] = clock() - t0
            i += window
            p50.append(float(np.median(lat)) * 1e6)
            p99.append(float(np.percentile(lat, 99)) * 1e6)
        out[c] = (p50, p99)
    return out


def spread(values: Sequence[float]) -> str:
    """``median [min–max]`` of ``values`` (µs), for a table cell."""
    return f"{statistics.median(values):.1f} [{min(values):.1f}–{max(values):.1f}]"
