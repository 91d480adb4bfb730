"""Scale-out benchmark: many series on a local Dask cluster vs one process.

Writes a fleet of seeded piecewise-constant series (``--series`` × ``--points``, default the
issue's 10,000 × 2,000) as a Parquet dataset sorted by id (files of 500 series, so every series
lies in one partition), then runs, in this same script:

* one process: ``changepoints_many(..., scheduler="synchronous")``: the same code with no
  cluster (reading the Parquet, grouping, the detector on every series);
* processes: ``changepoints_many`` on a ``LocalCluster`` of ``--workers`` worker processes
  (one thread each, 127.0.0.1 only), started after the one-process runs and before the timing
  (its start-up time and a warm-up call, which loads the numba inner loop in each worker, are
  reported separately);

and the same for :func:`possibly.integrations.scaleout.kalman_many` (robust constant-velocity
filter, tracks of equal length batched inside each task) on ``--tracks`` tracks (default 2,000 ×
2,000: its per-step output is gathered in memory twice for the comparison). Both runs of each
pair must give identical tables (checked). Prints throughput in series/s and points/s, the
speed-up of the cluster over one process, and the CPU seconds used with the cores that this
amounts to (on a shared machine, other jobs take cores from the workers).

Usage: ``.venv/bin/python benchmarks/bench_scaleout.py [--series N] [--points T] [--workers W]
[--tracks N]``. A run with ``--series`` below 10,000 prints the extrapolated full-size times.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np


def write_fleet(path: Path, n_series: int, n_points: int, per_file: int = 500) -> None:
    import pandas as pd

    import possibly as ps

    path.mkdir(parents=True)
    for start in range(0, n_series, per_file):
        ids, values = [], []
        for i in range(start, min(n_series, start + per_file)):
            y, _, _ = ps.datasets.piecewise_constant(n_points, n_changes=1 + i % 5, seed=i)
            ids.append(np.full(n_points, i, dtype=np.int64))
            values.append(y)
        pd.DataFrame({"sensor": np.concatenate(ids), "v": np.concatenate(values)}).to_parquet(
            path / f"part-{start // per_file:05d}.parquet", index=False)


def warm_up() -> None:
    """Compile the detector's numba loop (cached on disk after the first time) and import."""
    from possibly.changepoint import ChangepointDetector

    ChangepointDetector(sigma=1.0).fit(np.zeros(10))


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def main() -> None:
    import pandas as pd
    from distributed import Client, LocalCluster

    import possibly as ps
    from possibly.integrations.scaleout import changepoints_many, kalman_many

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--series", type=int, default=10_000)
    ap.add_argument("--points", type=int, default=2_000)
    ap.add_argument("--tracks", type=int, default=2_000)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    full = 10_000 * 2_000

    with tempfile.TemporaryDirectory(prefix="bench_scaleout_") as tmp:
        fleet = Path(tmp) / "fleet"
        t_write, _ = timed(lambda: write_fleet(fleet, args.series, args.points))
        tracks = Path(tmp) / "tracks"
        write_fleet(tracks, args.tracks, args.points)
        print(f"data: {args.series} series x {args.points} points ({t_write:.1f} s to generate "
              f"and write), {args.tracks} tracks x {args.points} steps; machine: "
              f"{os.cpu_count()} cores (shared)")

        model = ps.filters.constant_velocity(dt=1.0, accel_sd=0.05, obs_sd=1.0)
        runs, cpu = {}, {}
        # one process first, with no cluster alive: a busy main process would starve the
        # in-process scheduler's heartbeats
        for task, fn in (("cp", lambda: changepoints_many(fleet, "sensor", "v", model="normal",
                                                           scheduler="synchronous")),
                         ("kf", lambda: kalman_many(tracks, "sensor", "v", model,
                                                    scheduler="synchronous"))):
            c0 = time.process_time()
            runs[task, "one"] = timed(fn)
            cpu[task, "one"] = time.process_time() - c0

        t_cluster, cluster = timed(lambda: LocalCluster(
            n_workers=args.workers, threads_per_worker=1, processes=True, host="127.0.0.1",
            dashboard_address="127.0.0.1:0"))
        client = Client(cluster)
        t_warm, _ = timed(lambda: client.run(warm_up))
        print(f"LocalCluster start-up {t_cluster:.1f} s, warm-up call {t_warm:.1f} s "
              f"(imports and numba loading in each worker), not counted below")

        def worker_cpu() -> float:
            return sum(sum(t) for t in client.run(lambda: os.times()[:2]).values())

        for task, fn in (("cp", lambda: changepoints_many(fleet, "sensor", "v", model="normal",
                                                           scheduler=client)),
                         ("kf", lambda: kalman_many(tracks, "sensor", "v", model,
                                                    scheduler=client))):
            c0 = worker_cpu()
            runs[task, "dask"] = timed(fn)
            cpu[task, "dask"] = worker_cpu() - c0
        client.close()
        cluster.close()
        print(f"load average at the end (1, 5, 15 min): {os.getloadavg()}")

    a, b = runs["cp", "one"][1], runs["cp", "dask"][1]
    pd.testing.assert_frame_equal(a.events, b.events, check_exact=True)
    pd.testing.assert_frame_equal(a.summary, b.summary, check_exact=True)
    a, b = runs["kf", "one"][1], runs["kf", "dask"][1]
    pd.testing.assert_frame_equal(a.states, b.states, check_exact=True)
    print("identical results, one process vs cluster: yes (change points and Kalman states)")

    print()
    print("| task | run | series | points | time (s) | series/s | points/s | speed-up | "
          "CPU (s) | cores used | full-size time (s) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for task, n, label in (("cp", args.series, "change points"),
                           ("kf", args.tracks, "Kalman (robust CV)")):
        base = runs[task, "one"][0]
        for how, name in (("one", "one process"), ("dask", f"LocalCluster {args.workers} procs")):
            t = runs[task, how][0]
            pts = n * args.points
            c = cpu[task, how]
            print(f"| {label} | {name} | {n} | {pts:.2e} | {t:.1f} | {n / t:,.0f} | "
                  f"{pts / t:,.3g} | {base / t:.2f}x | {c:.1f} | {c / t:.2f} | "
                  f"{t * full / pts:.0f} |")
    n_cp = int(runs["cp", "dask"][1].summary["n_changepoints"].sum())
    print(f"\n{n_cp} change points found; full-size time = time x 2e7 / points "
          f"(linear extrapolation, equal to the time when the run is full size); CPU: this "
          f"process (one process) or the workers (cluster); cores used = CPU / time")


if __name__ == "__main__":  # worker processes re-import this file: keep the run under main
    main()
