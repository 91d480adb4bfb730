"""A fleet of streams: DetectorBank.update_many against a loop of ChangepointDetector.update.

Run as ``python benchmarks/bench_bank.py [--streams 100 1000 10000] [--steps 20]
[--repeats 3] [--warmup 100] [--serial-only] [--no-loop]``.

Every stream is a metric with its own level and scale (noise, a level shift in a fifth of the
streams, 1% spikes); each gets the default models with its priors from a warm-up of
``--warmup`` values (100 by default; ``add(ids, warm_up=...)``, the same as ``fit(warm_up)`` of
a detector), then ``--steps`` values, one per stream per call. A warm-up over 2000 fills every
stream's anomaly calibration window (``WINDOW`` surprises): the steady state of a fleet that
has run for a while, where the calibration costs the most. Timed in this process, per stream-
record (µs): ``update_many`` over all the streams (serial, and ``parallel=True`` on numba's
threads), and a loop of ``ChangepointDetector.update`` over the same streams (the detectors
fitted on the same warm-ups). Each cell is ``median [min–max]`` over the timed calls of
``--repeats`` runs (wall clock; the CPU time of the process is shown too: on a shared machine
the wall clock counts the time the process waits). Every run checks that the bank gives the
detectors' numbers (``--serial-only``: only the serial bank is timed, nothing compared;
``--no-loop``: no detectors, the parallel bank compared with the serial one: 10⁴ detectors
hold several GB).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from timing import spread

from possibly.changepoint import ChangepointDetector, DetectorBank

WARM_UP = 100


def fleet(n_streams: int, length: int, seed: int = 0, warm_up: int = WARM_UP) -> np.ndarray:
    """``(n_streams, length)`` metrics: own level and scale, shifts (after the warm-up),
    spikes."""
    rng = np.random.default_rng(seed)
    scale = np.exp(rng.normal(size=(n_streams, 1)))
    level = 50.0 * rng.normal(size=(n_streams, 1))
    y = level + scale * rng.normal(size=(n_streams, length))
    t = np.arange(length)
    shift_at = rng.integers(warm_up, length, n_streams)
    shifted = rng.random(n_streams) < 0.2
    y += 5.0 * scale * ((t >= shift_at[:, None]) & shifted[:, None])
    y += 20.0 * scale * (rng.random((n_streams, length)) < 0.01)
    return y


def bank_run(y: np.ndarray, parallel: bool, warm_up: int = WARM_UP
             ) -> tuple[list[float], list[float], float, list[np.ndarray]]:
    """µs per stream-record of each timed call (wall, CPU), the seconds of ``add``, and the
    log consistency of each call."""
    n = len(y)
    ids = list(range(n))
    bank = DetectorBank(parallel=parallel)
    start = time.perf_counter()
    bank.add(ids, warm_up=y[:, :warm_up])
    added = time.perf_counter() - start
    wall, cpu, lc = [], [], []
    for t in range(warm_up, y.shape[1]):
        values = y[:, t].copy()
        w0, c0 = time.perf_counter(), time.process_time()
        info = bank.update_many(ids, values)
        wall.append((time.perf_counter() - w0) / n * 1e6)
        cpu.append((time.process_time() - c0) / n * 1e6)
        lc.append(info.log_consistency)
    return wall, cpu, added, lc


def loop_run(y: np.ndarray, warm_up: int = WARM_UP
             ) -> tuple[list[float], list[float], list[np.ndarray]]:
    """The same with one detector per stream and a Python loop of ``update``."""
    dets = []
    for row in y[:, :warm_up]:
        det = ChangepointDetector(history=False, period=None)  # as the bank: no inferred period
        det.fit(row)
        dets.append(det)
    wall, cpu, lc = [], [], []
    for t in range(warm_up, y.shape[1]):
        values = y[:, t].tolist()
        out = np.empty(len(dets))
        w0, c0 = time.perf_counter(), time.process_time()
        for s, (det, x) in enumerate(zip(dets, values, strict=True)):
            out[s] = det.update(x).log_consistency
        wall.append((time.perf_counter() - w0) / len(dets) * 1e6)
        cpu.append((time.process_time() - c0) / len(dets) * 1e6)
        lc.append(out)
    return wall, cpu, lc


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=WARM_UP,
                        help="values per stream before the timed calls (over 2000: full "
                             "calibration windows)")
    parser.add_argument("--serial-only", action="store_true",
                        help="time only the serial bank (no parallel bank, no detectors)")
    parser.add_argument("--no-loop", action="store_true",
                        help="no loop of detectors (the parallel bank checked against the "
                             "serial one)")
    args = parser.parse_args()
    if args.warmup < 1:
        parser.error(f"--warmup must be at least 1, got {args.warmup}")
    small = fleet(10, WARM_UP + 5)
    bank_run(small, False), bank_run(small, True)  # compile / load outside the timings
    print("| streams | update_many (µs/stream-record) | CPU | update_many parallel=True | "
          "CPU | loop of update() | CPU | loop / update_many | add(warm_up) s |")
    print("|---:|---|---|---|---|---|---|---:|---:|")
    for n in args.streams:
        cells: dict[str, list[float]] = {k: [] for k in
                                         ("s", "sc", "p", "pc", "l", "lc", "add")}
        for rep in range(args.repeats):
            y = fleet(n, args.warmup + args.steps, seed=rep, warm_up=args.warmup)
            s, sc, added, lc_s = bank_run(y, False, args.warmup)
            if args.serial_only:
                p = pc = loop = loopc = [np.nan]
                lc_p = lc_l = lc_s
            elif args.no_loop:
                p, pc, _, lc_p = bank_run(y, True, args.warmup)
                loop = loopc = [np.nan]
                lc_l = lc_s
            else:
                p, pc, _, lc_p = bank_run(y, True, args.warmup)
                loop, loopc, lc_l = loop_run(y, args.warmup)
            for a, b, c in zip(lc_s, lc_p, lc_l, strict=True):
                if not (np.array_equal(a, c, equal_nan=True)
                        and np.array_equal(b, c, equal_nan=True)):
                    raise AssertionError("the serial bank, the parallel bank and the "
                                         "detectors (or the serial bank, with --no-loop) "
                                         "disagree")
            for key, vals in (("s", s), ("sc", sc), ("p", p), ("pc", pc), ("l", loop),
                              ("lc", loopc), ("add", [added])):
                cells[key].extend(vals)
        skipped = ("p", "pc", "l", "lc") if args.serial_only else (
            ("l", "lc") if args.no_loop else ())
        shown = {k: "–" if k in skipped else spread(v) for k, v in cells.items()}
        ratio = "–" if args.serial_only or args.no_loop else (
            f"{float(np.median(cells['l']) / np.median(cells['s'])):.1f}")
        print(f"| {n} | {shown['s']} | {shown['sc']} | {shown['p']} | {shown['pc']} "
              f"| {shown['l']} | {shown['lc']} | {ratio} | {np.median(cells['add']):.2f} |",
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
