"""Change-point detection: possibly's detector against a plain numpy recursion and the peers.

Prints seven tables, every timing measured in this process (start-up in fresh subprocesses):

1. the well log (4050 points): ours (numba and numpy engines, robust and standard, merged and
   unmerged), a plain numpy recursion (the textbook possibilistic BOCPD, every run length kept,
   vectorised over run lengths), ``ruptures`` Pelt (l2 cost), and the PyPI probabilistic BOCPD
   packages ``bocpd`` and ``bayesian-changepoint-detection`` (dense run-length matrix);
2. scaling in the series length, with short segments (a change every 400 points) and long
   segments (5 changes whatever the length);
3. streaming: ``update()`` latency per call (p50, p99) after 10⁵ calls, and at 10⁶ and 10⁷
   with ``--stream``, for the default family (also with a daily cycle, and with daily and
   weekly cycles, on the same stream with those cycles added) and the paper's model, against
   changepoint-online's FOCuS (pure Python) on the same values in the same process; and the
   bytes kept per step;
4. start-up: ``import possibly`` and the first fit, with a cold and a warm numba cache;
5. the segment models' per-step hook (``SegmentModel.prepare``) in the numpy engine: the
   default scalar family and the vector model, each fit with the statistics of a step computed
   once (the hook) against twice (the same models reached the old way, through the base class's
   default hook: ``log_consistency`` then ``update``, each computing its own);
6. results: the fit alone against the first read of everything a result derives from it
   (``to_frame()``, ``change_possibility``, ``outliers``, ``outlier_score``,
   ``changepoint_intervals()``), at several lengths, for the default models and the paper's,
   and the first ``outliers`` of a fresh process (cold and warm numba cache);
7. the CLI on a 10⁶-row CSV (``possibly changepoint big.csv``, a fresh process) against the
   fit and the reading of the file in this process.

Timings are medians over repeats with the min–max spread in brackets; ratios are of medians in
the same run. The machine is shared: compare ratios, not absolute times, across runs.

Run: ``.venv/bin/python benchmarks/bench_changepoint.py [--quick] [--big] [--stream N]``
(``--stream 10000000 --tables streaming``: the latency after 10⁷ updates, a few minutes)
(``--big`` adds the 10⁶-point rows and the 10⁵ long-segment row without merging: about as
slow as before merging existed, i.e. quadratic; and the 10⁷-point rows of the results table).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

import numpy as np
from timing import spread, update_latency

import possibly as ps
from possibly.changepoint import ChangepointDetector, NormalMean, numba_available
from possibly.changepoint.models import model_family

SIGMA, HAZARD, FORGETTING = 2500.0, 2.5e-3, 0.9
#: the paper's model and recursion (no evidence floor) for the well-log table
PAPER_MODEL = NormalMean(SIGMA, outliers="paper")


def timed(fn, repeats: int) -> tuple[float, float, float]:
    """(median, min, max) wall-clock seconds of ``fn()`` over ``repeats`` runs."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times), max(times)


def fmt(t: tuple[float, float, float] | None) -> str:
    if t is None:
        return "-"
    med, lo, hi = t
    unit, k = ("s", 1.0) if med >= 1 else ("ms", 1e3)
    return f"{med * k:.3g} {unit} [{lo * k:.3g}–{hi * k:.3g}]"


def plain_numpy(y: np.ndarray, sigma: float, hazard: float, forgetting: float,
                robust: bool = True) -> np.ndarray:
    """The textbook recursion in plain numpy: every run length kept, no pruning or merging.

    Returns the MAP run lengths (backtracked into change points by the caller).
    """
    s2 = sigma * sigma
    n = y.size
    log_w = np.empty(n)
    mu = np.empty(n)
    lam = np.empty(n)
    r_map = np.empty(n, dtype=np.int64)
    log_h = math.log(hazard)
    m = 0
    for t in range(n):
        new = log_h + log_w[:m].max() if m else 0.0
        lam[:m] *= forgetting
        log_w[m], mu[m], lam[m] = new, 0.0, 0.0
        m += 1
        d = y[t] - mu[:m]
        q = d * d
        log_c = float(np.max(log_w[:m] - 0.5 * q * (lam[:m] / (1.0 + lam[:m] * s2))))
        g = math.exp(0.5 * log_c) if robust else 1.0
        k = g / s2
        gain = k / (lam[:m] + k)
        log_w[:m] -= 0.5 * q * (lam[:m] * gain)
        mu[:m] += gain * d
        lam[:m] += k
        log_w[:m] -= log_w[:m].max()
        r_map[t] = t - int(np.argmax(log_w[:m]))  # runs are stored oldest first: start = index
    return r_map


def ruptures_pelt(y: np.ndarray, sigma: float) -> np.ndarray:
    import ruptures

    pen = 2.0 * sigma * sigma * math.log(y.size)  # BIC-like penalty in l2-cost units
    bkps = ruptures.Pelt(model="l2").fit(y).predict(pen=pen)  # its defaults: min_size 2, jump 5
    return np.array(bkps[:-1], dtype=np.int64)


def bocpd_package(y: np.ndarray, sigma: float, hazard: float):
    """``bocpd`` (PyPI): online_changepoint_detection with a Student-t model."""
    with contextlib.redirect_stdout(io.StringIO()):  # it prints on import
        from bocpd.bayesian_models import online_changepoint_detection
        from bocpd.hazard_functions import constant_hazard
        from bocpd.online_likelihoods import StudentT
    lik = StudentT(alpha=1.0, beta=sigma**2, kappa=1.0, mu=float(np.mean(y)))
    return online_changepoint_detection(y, lambda r: constant_hazard(1 / hazard, r), lik)


def bcd_package(y: np.ndarray, sigma: float, hazard: float):
    """``bayesian-changepoint-detection`` (PyPI): the same algorithm, its own Student-t."""
    from bayesian_changepoint_detection.online_changepoint_detection import (
        StudentT,
        constant_hazard,
        online_changepoint_detection,
    )

    lik = StudentT(alpha=1.0, beta=sigma**2, kappa=1.0, mu=float(np.mean(y)))
    return online_changepoint_detection(y, lambda r: constant_hazard(1 / hazard, r), lik)


def peer_changepoints(R: np.ndarray) -> np.ndarray:
    # column t + 1 of R is after observation t; its run length counts observation t
    r = np.maximum(np.argmax(R[:, 1:], axis=0) - 1, 0)
    return ps.changepoint.backtrack(r)


def series(n: int, n_changes: int, seed: int = 0) -> np.ndarray:
    y, _, _ = ps.datasets.piecewise_constant(n, n_changes=n_changes, outlier_rate=0.01,
                                             seed=seed)
    return y


def well_log_table(repeats: int, engine: str) -> None:
    # the paper's recursion (no evidence floor), as the textbook recursion below
    y = ps.datasets.well_log()
    n = y.size
    det = ChangepointDetector(model=PAPER_MODEL, hazard=HAZARD, forgetting=FORGETTING,
                              engine=engine)
    ref = det.fit(y)
    full = ChangepointDetector(model=PAPER_MODEL, hazard=HAZARD, forgetting=FORGETTING,
                               tol=0.0, merge_tol=0.0, engine=engine).fit(y)
    exact = all(np.array_equal(getattr(ref, f), getattr(full, f), equal_nan=True)
                for f in ("map_run_length", "mean", "log_consistency", "discount"))
    rows = []
    base = timed(lambda: det.fit(y), repeats)
    rows.append((f"possibly robust ({engine}, default: tol 1e-12, merge 1e-6)", base,
                 f"{ref.changepoints.size} cps; max {ref.n_active.max()} runs; "
                 f"identical to unpruned+unmerged: {exact}"))
    std = ChangepointDetector(model=PAPER_MODEL, robust=False, engine=engine)
    rows.append((f"possibly standard ({engine})", timed(lambda: std.fit(y), repeats),
                 f"{std.fit(y).changepoints.size} cps"))
    unm = ChangepointDetector(model=PAPER_MODEL, tol=0.0, merge_tol=0.0, engine=engine)
    rows.append((f"possibly robust ({engine}, unpruned, unmerged)",
                 timed(lambda: unm.fit(y), max(1, repeats // 3)),
                 f"max {full.n_active.max()} runs"))
    if engine == "numba":
        npdet = ChangepointDetector(model=PAPER_MODEL, engine="numpy")
        rows.append(("possibly robust (numpy engine, generic step)",
                     timed(lambda: npdet.fit(y), 2), "per-step Python, any segment model"))
    r_plain = plain_numpy(y, SIGMA, HAZARD, FORGETTING)
    same = np.array_equal(ps.changepoint.backtrack(r_plain), full.changepoints)
    rows.append(("plain numpy recursion (textbook, every run)",
                 timed(lambda: plain_numpy(y, SIGMA, HAZARD, FORGETTING), 2),
                 f"same change points as ours: {same}"))
    try:
        cps = ruptures_pelt(y, SIGMA)
        rows.append(("ruptures Pelt (l2, BIC-like penalty, jump 5)",
                     timed(lambda: ruptures_pelt(y, SIGMA), 1),
                     f"{cps.size} cps (offline, not robust)"))
    except ImportError as exc:
        rows.append(("ruptures Pelt", None, f"not installed: {exc}"))
    for name, fn in (("bocpd 0.0.4 (PyPI)", bocpd_package),
                     ("bayesian-changepoint-detection (PyPI)", bcd_package)):
        try:
            t0 = time.perf_counter()
            R, _ = fn(y, SIGMA, HAZARD)
            secs = time.perf_counter() - t0
            cps = peer_changepoints(R)
            del R
            rows.append((name + ", 1 run", (secs, secs, secs),
                         f"standard BOCPD, Student-t; {cps.size} cps"))
        except Exception as exc:  # report, do not hide, a package that fails
            rows.append((name, None, f"failed: {type(exc).__name__}: {exc}"[:90]))
    print(f"## well log: {n} observations, sigma={SIGMA:g}, hazard={HAZARD:g}, "
          f"forgetting={FORGETTING:g}; {repeats} repeats")
    print(f"{'method':58s} {'whole series':>26s} {'per obs':>9s} {'ratio':>8s}  note")
    for name, t, note in rows:
        if t is None:
            print(f"{name:58s} {'-':>26s} {'-':>9s} {'-':>8s}  {note}")
            continue
        print(f"{name:58s} {fmt(t):>26s} {t[0] / n * 1e6:7.2f}µs {t[0] / base[0]:7.1f}x  {note}")


def scaling_table(big: bool, quick: bool, engine: str) -> None:
    sizes = [10**3, 10**4, 10**5] + ([10**6] if big else [])
    print()
    print("## scaling: short segments (a change every 400 points) and long (5 changes)")
    print(f"{'n':>9s} {'segments':>8s} {'ours (' + engine + ')':>28s} {'µs/obs':>7s} "
          f"{'max runs':>8s} {'ours tol only, no merge':>26s} {'plain numpy':>26s} "
          f"{'ruptures Pelt':>26s}")
    per_obs = {}
    for n in sizes:
        for kind, n_changes in (("short", max(1, n // 400)), ("long", 5)):
            y = series(n, n_changes, seed=1)
            rep = 1 if n >= 10**5 else (2 if quick else 5)
            det = ChangepointDetector(sigma=1.0, hazard=HAZARD, forgetting=FORGETTING,
                                      engine=engine, history=False)
            t = timed(lambda det=det, y=y: det.fit(y), rep)
            res = det.fit(y)
            per_obs[n, kind] = t[0] / n
            unm = plain = pelt = None
            if n <= 10**4 or (big and n <= 10**5 and kind == "long"):
                full = ChangepointDetector(sigma=1.0, hazard=HAZARD, merge_tol=0.0,
                                           engine=engine, history=False)
                unm = timed(lambda full=full, y=y: full.fit(y), 1)
            if n <= 10**4:
                plain = timed(lambda y=y: plain_numpy(y, 1.0, HAZARD, FORGETTING), 1)
            if n <= 10**3 or (n <= 10**4 and not quick):  # Pelt is slow here: 10^4 ~ 10 s
                try:
                    pelt = timed(lambda y=y: ruptures_pelt(y, 1.0), 1)
                except ImportError:
                    pelt = None
            print(f"{n:9d} {kind:>8s} {fmt(t):>28s} {t[0] / n * 1e6:7.2f} "
                  f"{int(res.n_active.max()):8d} {fmt(unm):>26s} {fmt(plain):>26s} "
                  f"{fmt(pelt):>26s}")
    n_max = sizes[-1]
    print(f"long / short time per observation at n = {n_max:g}: "
          f"{per_obs[n_max, 'long'] / per_obs[n_max, 'short']:.2f}x")


def focus_updates() -> list[tuple[str, object]]:
    """changepoint-online's FOCuS (pure Python, Gaussian change in mean, unit variance) as a
    monitoring loop runs it: ``update``, then ``statistic()`` against a threshold (10, the
    package's example) and a fresh detector after each detection; and never restarted (its
    cost per point grows with the pieces it keeps)."""
    from changepoint_online import Focus, Gaussian

    live = [Focus(Gaussian())]

    def monitored(y: float) -> None:
        live[0].update(y)
        if live[0].statistic() >= 10.0:
            live[0] = Focus(Gaussian())

    return [("FOCuS, detect and restart (threshold 10)", monitored),
            ("FOCuS, never restarted", Focus(Gaussian()).update)]


def streaming_table(n_stream: int, engine: str, repeats: int) -> None:
    """update() latency per call: p50 and p99 over windows of 2000 calls after 10⁵ points
    (and at 10⁶, 10⁷ with ``--stream``), against FOCuS's update on the same values."""
    warm, window = 10**5, 2000
    checkpoints = [c for c in (warm, 10**6, 10**7) if c <= n_stream]
    n_total = checkpoints[-1] + repeats * window
    y = series(n_total, n_total // 400, seed=2)
    print()
    print(f"## streaming: update() latency per call ({engine}); p50 and p99 over each of "
          f"{repeats} windows of {window} calls after 10^5, 10^6, 10^7 calls: median "
          "[min–max] over the windows, µs")
    rows = []
    default = ChangepointDetector()
    default.fit(y[:2000])  # the priors from a warm-up; then the whole stream by update
    prior_models = list(default.params_.models)
    # the same stream with a daily and a weekly cycle (hourly records), for the default
    # family with cycles (model_family(period=...)) and the anomaly signal's period
    t = np.arange(n_total)
    cyclic = y + 3.0 * np.sin(2 * np.pi * t / 24) + np.sin(2 * np.pi * t / 168)

    def seasonal(periods: float | tuple[float, ...]) -> Any:
        warm = ChangepointDetector(model=model_family(period=periods))
        warm.fit(cyclic[:2000])
        models = list(warm.params_.models)
        return lambda: ChangepointDetector(model=models, period=24, engine=engine)

    cases = [
        ("default family", lambda: ChangepointDetector(model=prior_models, engine=engine), y),
        ("paper's model (sigma=1)", lambda: ChangepointDetector(sigma=1.0, hazard=HAZARD,
                                                                engine=engine), y),
        ("default family + cycle 24", seasonal(24), cyclic),
        ("default family + cycles 24, 168", seasonal((24, 168)), cyclic),
    ]
    for name, make, values in cases:
        det = make()
        det.update(0.0)  # compile / load the step outside the timing
        det.reset()
        lat = update_latency(det.update, values, checkpoints, window, repeats)
        rows.append((name, lat, f"{det.history_nbytes() / det.t:.0f} B/step kept"))
    ours = len(rows)
    try:
        for name, update in focus_updates():
            rows.append((name, update_latency(update, y, checkpoints[:1], window, repeats),
                         "changepoint-online, pure Python"))
    except ImportError as exc:
        rows.append(("FOCuS", None, f"not installed: {exc}"))
    head = "".join(f" {'p50 / p99 at ' + f'{c:.0e}':>36s}" for c in checkpoints)
    print(f"{'update() of':42s}{head}  note")
    for name, lat, note in rows:
        cells = "".join(
            f" {spread(lat[c][0]) + ' / ' + spread(lat[c][1]) if lat and c in lat else '-':>36s}"
            for c in checkpoints)
        print(f"{name:42s}{cells}  {note}")
    for peer, focus, _ in rows[ours:]:
        for name, lat, _ in rows[:ours] if focus else ():
            ratios = [a / b for a, b in zip(lat[warm][0], focus[warm][0], strict=True)]
            print(f"p50 of {name} / {peer}, after 10^5: {statistics.median(ratios):.2f} "
                  f"[{min(ratios):.2f}–{max(ratios):.2f}] (window by window)")


_STARTUP = """
import time
t0 = time.perf_counter()
import numpy as np
import possibly as ps
t1 = time.perf_counter()
ps.ChangepointDetector(sigma=1.0, engine={engine!r}).fit(np.zeros(1000))
t2 = time.perf_counter()
ps.ChangepointDetector(engine={engine!r}).fit(np.random.default_rng(0).normal(size=1000))
t3 = time.perf_counter()
print(t1 - t0, t2 - t1, t3 - t2)
"""


def startup_table(engine: str) -> None:
    print()
    print(f"## start-up (fresh interpreters; {engine} engine)")
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        for label in ("cold cache", "warm cache", "warm cache"):
            out = subprocess.run([sys.executable, "-c", _STARTUP.format(engine=engine)],
                                 capture_output=True, text=True, env=env, check=True)
            imp, first, default = (float(v) for v in out.stdout.split())
            print(f"{label}: import possibly {imp * 1e3:.0f} ms, first fit (1000 points) "
                  f"{first * 1e3:.0f} ms (paper's model), then {default * 1e3:.0f} ms (the "
                  "default model family)")


def results_series(n: int, seed: int = 0) -> np.ndarray:
    """Levels and trends with a change every 2000 points on average and 1 % outliers."""
    rng = np.random.default_rng(seed)
    y, _, _ = ps.datasets.piecewise_constant(n, n_changes=max(1, n // 2000),
                                             outlier_rate=0.01, seed=seed)
    return y + np.cumsum(rng.normal(scale=0.01, size=n))


def read_everything(res) -> None:
    """The first read of what a result derives from its fit (each is cached afterwards)."""
    res.to_frame()
    _ = res.change_possibility, res.outliers, res.outlier_score
    res.changepoint_intervals()


def results_table(big: bool, quick: bool, engine: str) -> None:
    sizes = [10**4, 10**5, 10**6] + ([10**7] if big else [])
    print()
    print(f"## results: the fit alone against the first read of to_frame(), "
          f"change_possibility, outliers, outlier_score, changepoint_intervals() ({engine})")
    print(f"{'n':>9s} {'model':>14s} {'fit':>26s} {'results':>26s} {'results / fit':>13s}")
    import pandas  # noqa: F401 - imported once, not timed in to_frame
    models = (("default", {}), ("paper (sigma)", {"sigma": 1.0}))
    for n in sizes:
        y = results_series(n)
        for label, kwargs in models:
            rep = 1 if n >= 10**6 else (2 if quick else (5 if n <= 10**4 else 3))
            det = ChangepointDetector(engine=engine, **kwargs)
            read_everything(det.fit(y[:1000]))  # compiled once (see the first-read rows)
            fits, reads, ratios = [], [], []
            for _ in range(rep):
                t0 = time.perf_counter()
                res = det.fit(y)
                t1 = time.perf_counter()
                read_everything(res)
                t2 = time.perf_counter()
                fits.append(t1 - t0)
                reads.append(t2 - t1)
                ratios.append((t2 - t1) / (t1 - t0))
                del res
            spread = (f"{statistics.median(ratios):.2f} [{min(ratios):.2f}–{max(ratios):.2f}]"
                      if rep > 1 else f"{ratios[0]:.2f}")
            print(f"{n:9d} {label:>14s} "
                  f"{fmt((statistics.median(fits), min(fits), max(fits))):>26s} "
                  f"{fmt((statistics.median(reads), min(reads), max(reads))):>26s} "
                  f"{spread:>13s}")
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        for label in ("cold cache", "warm cache"):
            out = subprocess.run([sys.executable, "-c", _FIRST_OUTLIERS], capture_output=True,
                                 text=True, env=env, check=True)
            fit, first = (float(v) for v in out.stdout.split())
            print(f"fresh process, {label}: first default fit (10^4 points) {fit:.2f} s, then "
                  f"its first .outliers {first:.2f} s")


_FIRST_OUTLIERS = """
import time
import numpy as np
import possibly as ps
y = np.random.default_rng(0).normal(size=10**4)
t0 = time.perf_counter()
res = ps.ChangepointDetector().fit(y)
t1 = time.perf_counter()
res.outliers
t2 = time.perf_counter()
print(t1 - t0, t2 - t1)
"""


def cli_table(repeats: int, engine: str) -> None:
    from possibly.cli.tables import read_table

    n = 10**6
    print()
    print(f"## the CLI on {n:,} rows: possibly changepoint big.csv (a fresh process, warm "
          f"cache) against the fit and the reading of the file here ({engine})")
    y = results_series(n)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "big.csv")
        np.savetxt(path, y, fmt="%.6f", header="value", comments="")
        cli = [sys.executable, "-c", "import sys; from possibly.cli import main; "
               "sys.exit(main())", "changepoint", path]
        # as from an installed package, whose modules are byte-compiled: without this, a
        # PYTHONDONTWRITEBYTECODE environment compiles the library's source in every run
        # (about 0.25 s of CPU); the byte code goes to a folder of its own
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = os.path.join(folder, "pycache")
        run_cli = functools.partial(subprocess.run, cli, capture_output=True, check=True,
                                    env=env)
        run_cli()  # the numba cache warmed, the byte code written
        reads, fits, whole, cpu = [], [], [], []
        for _ in range(repeats):
            c0, t0 = time.process_time(), time.perf_counter()
            values = read_table(path).numbers([0])[:, 0]
            c1, t1 = time.process_time(), time.perf_counter()
            ChangepointDetector(engine=engine).fit(values)
            c2, t2 = time.process_time(), time.perf_counter()
            k0 = children_cpu()
            run_cli()
            t3 = time.perf_counter()
            reads.append(t1 - t0)
            fits.append(t2 - t1)
            whole.append(t3 - t2)
            cpu.append((children_cpu() - k0 - (c1 - c0)) / (c2 - c1))
    ratios = [(w - r) / f for w, r, f in zip(whole, reads, fits, strict=True)]
    for label, times in (("read the file", reads), ("fit", fits), ("the whole CLI", whole)):
        print(f"{label:>14s} {fmt((statistics.median(times), min(times), max(times))):>26s}")
    print(f"(CLI − reading) / fit: {statistics.median(ratios):.2f} "
          f"[{min(ratios):.2f}–{max(ratios):.2f}]; in CPU time (the machine's preemption not "
          f"counted): {statistics.median(cpu):.2f} [{min(cpu):.2f}–{max(cpu):.2f}]")


def children_cpu() -> float:
    """CPU seconds used by the finished child processes."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _unshared(cls: type) -> type:
    """``cls`` reached the old way: the recursion's per-step hook computes nothing (the base
    class's ``prepare``), and ``log_consistency`` and ``update`` each compute the step's
    statistics themselves (``cls.prepare``) as both did before the hook."""
    from possibly.changepoint import SegmentModel

    def log_consistency(self, prepared):
        return cls.log_consistency(self, cls.prepare(self, prepared.runs, prepared.y))

    def update(self, prepared, gamma):
        return cls.update(self, cls.prepare(self, prepared.runs, prepared.y), gamma)

    return type(f"Unshared{cls.__name__}", (cls,), {
        "log_consistency": log_consistency, "update": update,
        "prepare": SegmentModel.prepare})


def prepare_table(repeats: int, n: int) -> None:
    from possibly.changepoint import MultivariateNormalSegments, PolynomialTrend, model_family

    trend = _unshared(PolynomialTrend)
    vector = _unshared(MultivariateNormalSegments)
    y_scalar, _ = ps.datasets.level_shifts(n, n_changes=6, seed=0)
    cases = [("default scalar family (numpy engine)", y_scalar,
              ChangepointDetector(model=model_family(), forgetting=1.0, tol=1e-3,
                                  engine="numpy"),
              ChangepointDetector(model=[trend(d) for d in (0, 1, 2)], forgetting=1.0,
                                  tol=1e-3))]
    for dim in (2, 5):
        y_vec, _ = ps.datasets.multivariate_shifts(n, n_changes=6, dim=dim, seed=0)
        cases.append((f"vector model, d = {dim}", y_vec,
                      ChangepointDetector(model=MultivariateNormalSegments()),
                      ChangepointDetector(model=vector())))
    print(f"\n## segment models' per-step hook: {n:,} steps, numpy engine, median of "
          f"{repeats} (interleaved)")
    print(f"{'model':40s} {'hook (shared)':>22s} {'old way (twice)':>22s} {'new/old':>16s}")
    for name, y, new, old in cases:
        a, b = new.fit(y), old.fit(y)  # warm up; and the two paths agree exactly
        assert np.array_equal(a.log_consistency, b.log_consistency, equal_nan=True)
        assert np.array_equal(a.changepoints, b.changepoints)
        t_new, t_old = [], []
        for _ in range(repeats):
            t_new.append(timed(lambda new=new, y=y: new.fit(y), 1)[0])
            t_old.append(timed(lambda old=old, y=y: old.fit(y), 1)[0])
        ratios = sorted(x / z for x, z in zip(t_new, t_old, strict=True))
        row = (statistics.median(t_new), min(t_new), max(t_new))
        row_old = (statistics.median(t_old), min(t_old), max(t_old))
        print(f"{name:40s} {fmt(row):>22s} {fmt(row_old):>22s} "
              f"{f'{row[0] / row_old[0]:.3f} [{ratios[0]:.2f}–{ratios[-1]:.2f}]':>16s}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats, shorter stream")
    ap.add_argument("--big", action="store_true", help="add the 10^6-point rows")
    ap.add_argument("--stream", type=int, default=None,
                    help="update() calls streamed: 10^6 or 10^7 add the flatness columns")
    ap.add_argument("--tables",
                    default="well-log,scaling,streaming,startup,prepare,results,cli",
                    help="comma-separated subset of the tables to print")
    args = ap.parse_args()
    tables = set(args.tables.split(","))
    engine = "numba" if numba_available() else "numpy"
    print(f"{os.cpu_count()} cores (shared), one used; numpy {np.__version__}; load average "
          f"{os.getloadavg()[0]:.1f}")
    if "well-log" in tables:
        well_log_table(3 if args.quick else 10, engine)
    if "scaling" in tables:
        scaling_table(args.big, args.quick, engine)
    if "streaming" in tables:
        streaming_table(args.stream or 10**5, engine, 3 if args.quick else 5)
    if "startup" in tables:
        startup_table(engine)
    if "prepare" in tables:
        prepare_table(3 if args.quick else 9, 1000 if args.quick else 3000)
    if "results" in tables:
        results_table(args.big, args.quick, engine)
    if "cli" in tables:
        cli_table(1 if args.quick else 3, engine)
    return 0


if __name__ == "__main__":
    sys.exit(main())
