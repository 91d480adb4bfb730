"""Benchmark: start-up, ``import possibly`` in a fresh interpreter (target < 0.2 s).

Each repeat starts a new Python process and times the import inside it (so the interpreter's
own start is excluded). Baseline: ``import numpy``, timed the same way in this run, because
numpy is the floor of any import of the library. Rows also give the first call that needs the
deferred scipy.special (a Gamma possibility), which pays that import once.

Run: .venv/bin/python benchmarks/bench_startup.py [--repeats 15]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

SNIPPETS = {
    "import numpy (baseline)": ("", "import numpy"),
    "import possibly": ("", "import possibly"),
    "first Gamma.log_possibility (loads scipy.special)":
        ("import possibly as ps", "ps.Gamma(2.0, 1.0).log_possibility(1.5)"),
    "import possibly + scipy.stats (what start-up used to load)":
        ("", "import possibly, scipy.stats, scipy.optimize"),
}


def time_in_fresh_process(setup: str, stmt: str) -> float:
    code = (f"import time\n{setup}\nt = time.perf_counter()\n{stmt}\n"
            "print(time.perf_counter() - t)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    times = {name: [] for name in SNIPPETS}
    for _ in range(args.repeats):  # interleaved, so that load changes hit every row alike
        for name, (setup, stmt) in SNIPPETS.items():
            times[name].append(time_in_fresh_process(setup, stmt))
    base = statistics.median(times["import numpy (baseline)"])
    print(f"{args.repeats} fresh processes per row; seconds: min / median / max; "
          "ratio of medians to import numpy")
    print("| what | min | median | max | ratio |")
    print("|---|---|---|---|---|")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"| {name} | {min(ts):.3f} | {med:.3f} | {max(ts):.3f} | {med / base:.2f} |")


if __name__ == "__main__":
    main()
