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
pair must give identical tables (checked; the Kalman filter's engine is pinned for it, as
``"auto"`` chooses by what each process ran before). Prints throughput in series/s and points/s, the
speed-up of the cluster over one process, and the CPU seconds used with the cores that this
amounts to (on a shared machine, other jobs take cores from the workers).

First, in this process (no cluster), a table of the many-series functions against a plain loop
over the same series, already grouped, in the same process, interleaved and repeated
(``--repeats``): for change points (the default models on ``--auto-series``, the paper's
normal-mean model on ``--inproc-series``, ``--inproc-points`` each) a loop of ``.fit`` alone and a
loop of ``.fit`` that also reads what the many-series table holds (change points, outliers,
segment models or σ); for the Kalman filter a loop of ``.filter`` per track. The ratios are
the median over the repeats with their range, of wall time and of CPU time.

Usage: ``.venv/bin/python benchmarks/bench_scaleout.py [--series N] [--points T] [--workers W]
[--tracks N] [--repeats R] [--inproc-series N] [--auto-series N] [--inproc-points T]
[--in-process-only | --cluster-only]``. A run with ``--series`` below 10,000 prints the
extrapolated full-size times.
"""

from __future__ import annotations

import argparse
import importlib.util
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


def fleet_frame(n_series: int, n_points: int):
    """The fleet of :func:`write_fleet` as one pandas table (id, value)."""
    import pandas as pd

    import possibly as ps

    ys = [ps.datasets.piecewise_constant(n_points, n_changes=1 + i % 5, seed=i)[0]
          for i in range(n_series)]
    return pd.DataFrame({"sensor": np.repeat(np.arange(n_series, dtype=np.int64), n_points),
                         "v": np.concatenate(ys)})


def clocked(fn) -> tuple[float, float]:
    """Wall and CPU seconds of ``fn()``."""
    w0, c0 = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w0, time.process_time() - c0


def in_process_table(n_series: int, n_auto: int, n_points: int, repeats: int) -> None:
    """The many-series functions in this process against plain loops over the same series."""
    import possibly as ps
    from possibly.integrations.scaleout import changepoints_many, kalman_many

    model = ps.filters.constant_velocity(dt=1.0, accel_sd=0.05, obs_sd=1.0)
    cases = []
    for label, n, kw in (("change points, default models", n_auto, {}),
                         ("change points, normal mean (sigma given)", n_series,
                          {"sigma": 1.0})):
        df = fleet_frame(n, n_points)
        ys = [g["v"].to_numpy() for _, g in df.groupby("sensor", sort=False)]
        det = ps.ChangepointDetector(**kw)

        def fits(det=det, ys=ys):
            for y in ys:
                det.fit(y)

        def fits_and_table(det=det, ys=ys):
            for y in ys:
                r = det.fit(y)
                r.changepoints, r.outliers  # noqa: B018 (what the events table holds)
                _ = r.segment_model_names if r.sigma is None else r.sigma

        def many(df=df, kw=kw):
            changepoints_many(df, "sensor", "v", scheduler="synchronous", **kw)

        cases.append((label, n, {"loop of .fit": fits, "loop of .fit + table": fits_and_table,
                                 "changepoints_many": many}))
    df = fleet_frame(n_series, n_points)
    tracks = [g[["v"]].to_numpy() for _, g in df.groupby("sensor", sort=False)]
    kf = ps.KalmanFilter(model)

    def filters():
        for y in tracks:
            kf.filter(y, keep=("mean",))

    cases.append(("Kalman filter (robust CV)", n_series, {
        "loop of .filter": filters,
        "kalman_many": lambda: kalman_many(df, "sensor", "v", model, scheduler="synchronous")}))

    print(f"\nIn this process (no cluster), {n_points} points per series, {repeats} repeats "
          "interleaved; ratio = many-series call / loop (median [min, max] over the repeats)")
    print("| task | series | run | wall (s), median | ratio, wall | ratio, CPU |")
    print("|---|---:|---|---:|---:|---:|")
    for label, n, runs in cases:
        for fn in runs.values():  # warm: numba, imports, dask
            fn()
        times: dict[str, list[tuple[float, float]]] = {k: [] for k in runs}
        for _ in range(repeats):
            for name, fn in runs.items():
                times[name].append(clocked(fn))
        many_name = list(runs)[-1]
        many = np.array(times[many_name])
        for name in runs:
            t = np.array(times[name])
            row = f"| {label} | {n} | {name} | {np.median(t[:, 0]):.2f} |"
            if name == many_name:
                print(row + " | |")
                continue
            wall, cpu = many[:, 0] / t[:, 0], many[:, 1] / t[:, 1]
            print(row + f" {np.median(wall):.2f} [{wall.min():.2f}, {wall.max():.2f}] | "
                  f"{np.median(cpu):.2f} [{cpu.min():.2f}, {cpu.max():.2f}] |")


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
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--inproc-series", type=int, default=2_000)
    ap.add_argument("--auto-series", type=int, default=300)
    ap.add_argument("--inproc-points", type=int, default=500)
    ap.add_argument("--in-process-only", action="store_true")
    ap.add_argument("--cluster-only", action="store_true")
    args = ap.parse_args()
    if not args.cluster_only:
        in_process_table(args.inproc_series, args.auto_series, args.inproc_points,
                         args.repeats)
    if args.in_process_only:
        return
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
        # the Kalman arithmetic pinned: "auto" chooses by what each process ran before, so
        # fresh workers and this process could differ by rounding (the tables are compared
        # exactly)
        kf_engine = "numba" if importlib.util.find_spec("numba") else "numpy"
        # one process first, with no cluster alive: a busy main process would starve the
        # in-process scheduler's heartbeats
        for task, fn in (("cp", lambda: changepoints_many(fleet, "sensor", "v", model="normal",
                                                           scheduler="synchronous")),
                         ("kf", lambda: kalman_many(tracks, "sensor", "v", model,
                                                    scheduler="synchronous",
                                                    engine=kf_engine))):
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
                                                    scheduler=client, engine=kf_engine))):
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
