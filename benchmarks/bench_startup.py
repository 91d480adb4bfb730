"""Benchmark: start-up and first calls, each in a fresh interpreter.

``import possibly`` (target < 0.2 s): each repeat starts a new Python process and times the
import inside it (so the interpreter's own start is excluded). Baseline: ``import numpy``,
timed the same way in this run, because numpy is the floor of any import of the library. Rows
also give the first call that needs the deferred scipy.special (a Gamma possibility), which
pays that import once.

``--first-calls`` adds the first compiled calls, with numba's cache of this package's kernels
(the user cache directory, redirected through ``XDG_CACHE_HOME``) either a new empty folder per
process (``cold``: a fresh install, every kernel compiled) or a folder that an earlier process
filled (``warm``): the first default fit of the well log (4050 points) and of the paper's model,
the first robust Kalman filter (250 steps, the constant-velocity model) and the first with a
learned noise scale (``engine="auto"``, which runs a new process's small calls on numpy, and
``engine="numba"``, the compiled loops' first calls), with ``import numba`` and the same fits
on the numpy engine as references. Each row gives the wall time and the CPU
time of the call inside the process (CPU time is less disturbed by other load on a shared
machine). ``--cli`` adds whole command-line runs on a 100-row CSV with a warm cache, timed
from outside the process (interpreter start included), against the same runs with numba
made unimportable (``sys.modules["numba"] = None``: what a user without the fast extra gets).

Run: .venv/bin/python benchmarks/bench_startup.py [--repeats 15] [--first-calls] [--cli]
     [--cold-repeats 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

SNIPPETS = {
    "import numpy (baseline)": ("", "import numpy"),
    "import possibly": ("", "import possibly"),
    "first Gamma.log_possibility (loads scipy.special)":
        ("import possibly as ps", "ps.Gamma(2.0, 1.0).log_possibility(1.5)"),
    "import possibly + scipy.stats (what start-up used to load)":
        ("", "import possibly, scipy.stats, scipy.optimize"),
}

_WELL = "import possibly as ps\ny = ps.datasets.well_log()"
_TRACK = ("import numpy as np\nimport possibly as ps\n"
          "y = np.cumsum(np.random.default_rng(0).normal(size=250)) "
          "+ np.random.default_rng(1).normal(size=250)\n"
          "kf = ps.KalmanFilter(ps.filters.constant_velocity(obs_sd=1.0, accel_sd=0.5))")

#: (setup, statement, numpy reference or None): each compiled first call is timed with a cold
#: and a warm numba cache, its numpy twin (if any) with a warm one
COMPILED_CALLS = {
    "default fit, well log": (_WELL, "ps.ChangepointDetector({}).fit(y)", "engine='numpy'"),
    "paper's model fit, well log":
        (_WELL, "ps.ChangepointDetector(model='normal'{}).fit(y)", ", engine='numpy'"),
    "Kalman filter, 250 steps": (_TRACK, "kf.filter(y{})", ", engine='numpy'"),
    "learned noise scale, 250 steps":
        (_TRACK, "ps.KalmanFilter(kf.model, learn_noise_scale=True).fit(y{})", None),
    # "auto" runs the two above on numpy in a new process: the compiled loops' own first calls
    "Kalman filter, 250 steps, engine='numba'": (_TRACK, "kf.filter(y, engine='numba')", None),
    "learned noise scale, 250 steps, engine='numba'":
        (_TRACK, "ps.KalmanFilter(kf.model, learn_noise_scale=True).fit(y, engine='numba')",
         None),
}


def first_calls() -> dict[str, tuple[str, str, str]]:
    """Every row: (setup, statement, cache), the cache "cold" (a new, empty folder) or "warm"
    (filled by a preparing process)."""
    rows = {"import numba (after numpy)": ("import numpy", "import numba", "warm")}
    for label, (setup, stmt, numpy_engine) in COMPILED_CALLS.items():
        if numpy_engine is not None:
            rows[f"{label}, numpy engine (reference)"] = (
                setup, stmt.format(numpy_engine), "warm")
        for cache in ("cold", "warm"):
            rows[f"{label}, {cache} cache"] = (setup, stmt.format(""), cache)
    return rows


FIRST_CALLS = first_calls()

_BLOCK_NUMBA = 'import sys\nsys.modules["numba"] = None\n'


def time_in_fresh_process(setup: str, stmt: str, env: dict[str, str] | None = None
                          ) -> tuple[float, float]:
    """Wall and CPU seconds of ``stmt`` after ``setup``, in a new interpreter."""
    code = (f"import time\n{setup}\nt = time.perf_counter()\nc = time.process_time()\n{stmt}\n"
            "print(time.perf_counter() - t, time.process_time() - c)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=env)
    wall, cpu = out.stdout.strip().splitlines()[-1].split()
    return float(wall), float(cpu)


def cache_env(folder: str) -> dict[str, str]:
    """The environment with this package's numba cache in ``folder``."""
    env = dict(os.environ, XDG_CACHE_HOME=folder)
    env.pop("NUMBA_CACHE_DIR", None)
    return env


def table(times: dict[str, list[float]], base_name: str, title: str) -> None:
    base = statistics.median(times[base_name])
    print(title)
    print("| what | min | median | max | ratio |")
    print("|---|---|---|---|---|")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"| {name} | {min(ts):.3f} | {med:.3f} | {max(ts):.3f} | {med / base:.2f} |")
    print()


def import_rows(repeats: int) -> None:
    times: dict[str, list[float]] = {name: [] for name in SNIPPETS}
    for _ in range(repeats):  # interleaved, so that load changes hit every row alike
        for name, (setup, stmt) in SNIPPETS.items():
            times[name].append(time_in_fresh_process(setup, stmt)[0])
    table(times, "import numpy (baseline)",
          f"{repeats} fresh processes per row; seconds: min / median / max; ratio of medians "
          "to import numpy")


def first_call_rows(repeats: int, warm_dir: str) -> None:
    warm = cache_env(warm_dir)
    for setup, stmt, _ in FIRST_CALLS.values():  # fill the warm cache
        time_in_fresh_process(setup, stmt, warm)
    wall: dict[str, list[float]] = {name: [] for name in FIRST_CALLS}
    cpu: dict[str, list[float]] = {name: [] for name in FIRST_CALLS}
    for _ in range(repeats):
        for name, (setup, stmt, cache) in FIRST_CALLS.items():
            with tempfile.TemporaryDirectory() as cold_dir:
                env = cache_env(cold_dir) if cache == "cold" else warm
                w, c = time_in_fresh_process(setup, stmt, env)
            wall[name].append(w)
            cpu[name].append(c)
    base = "default fit, well log, numpy engine (reference)"
    table(wall, base, f"First calls, {repeats} fresh processes per row, wall seconds; ratio of "
                      "medians to the numpy engine's default fit")
    table(cpu, base, "The same processes, CPU seconds of the call")


def cli_rows(repeats: int, warm_dir: str) -> None:
    import numpy as np

    import possibly as ps

    folder = tempfile.mkdtemp()
    small = os.path.join(folder, "small.csv")
    track = os.path.join(folder, "track.csv")
    np.savetxt(small, ps.datasets.well_log()[:100], header="y", comments="", fmt="%.6f")
    np.savetxt(track, np.cumsum(np.random.default_rng(0).normal(size=100)), header="x",
               comments="", fmt="%.6f")
    warm = cache_env(warm_dir)
    runs = {"changepoint": ["changepoint", small], "kalman": ["kalman", track]}
    rows = {}
    for label, args in runs.items():
        call = f"from possibly.cli import main\nmain({args!r})"
        rows[f"possibly {label}, 100 rows, warm cache"] = call
        rows[f"possibly {label}, 100 rows, without numba"] = _BLOCK_NUMBA + call
    for code in rows.values():  # fill the warm cache
        subprocess.run([sys.executable, "-c", code], capture_output=True, env=warm, check=True)
    times: dict[str, list[float]] = {name: [] for name in rows}
    for _ in range(repeats):
        for name, code in rows.items():
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], capture_output=True, env=warm,
                           check=True)
            times[name].append(time.perf_counter() - start)
    table(times, "possibly changepoint, 100 rows, without numba",
          f"Command line, {repeats} runs per row, whole process (interpreter start included), "
          "wall seconds; ratio to the change-point run without numba")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--first-calls", action="store_true",
                        help="time the first compiled calls, cold and warm numba cache")
    parser.add_argument("--cli", action="store_true",
                        help="time the command line on a 100-row CSV, with and without numba")
    parser.add_argument("--cold-repeats", type=int, default=5,
                        help="repeats of the first-call and command-line rows (default 5)")
    args = parser.parse_args()
    import_rows(args.repeats)
    with tempfile.TemporaryDirectory() as warm_dir:
        if args.first_calls:
            first_call_rows(args.cold_repeats, warm_dir)
        if args.cli:
            cli_rows(args.cold_repeats, warm_dir)


if __name__ == "__main__":
    main()
