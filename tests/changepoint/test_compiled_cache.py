"""The compiled engine's on-disk cache: a kernel's entry is keyed by the content of its code.

Each fit runs in a fresh Python process, all sharing one numba cache directory, as separate
sessions of a user would: a kernel that differs from a cached one only in a closure value must
not load the cached code, and a kernel's key must be the same in every process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from possibly.changepoint.detector import numba_available

needs_numba = pytest.mark.skipif(not numba_available(), reason="numba is not installed")

# a model whose kernel is made by a factory: the noise variance is a closure constant of the
# kernel functions (not a packed setting), so two variances differ only in their closures
MODEL = textwrap.dedent('''
    import math
    import sys
    from dataclasses import dataclass

    import numpy as np

    import possibly as ps
    from possibly.changepoint.compiled_engine import fingerprint
    from possibly.changepoint.detector import ChangepointDetector
    from possibly.changepoint.models import CompiledKernel, KernelFunctions, SegmentModel


    def make_kernel(variance):
        def prepare(params, y):
            return y

        def new_run(params, runs, j):
            runs[j, 0] = 0.0
            runs[j, 1] = 0.0

        def forget(params, runs, j, rho, work):
            runs[j, 1] = runs[j, 1] * rho

        def log_consistency(params, runs, j, y):
            d = y - runs[j, 0]
            return -(0.5 * (d * d) * (runs[j, 1] / (1.0 + runs[j, 1] * variance)))

        def update(params, runs, j, y, gamma, work):
            k = gamma / variance
            d = y - runs[j, 0]
            lam = runs[j, 1]
            gain = k / (lam + k)
            runs[j, 0] = runs[j, 0] + gain * d
            runs[j, 1] = lam + k
            return -(0.5 * (d * d) * (lam * gain))

        def estimate(params, runs, j):
            return runs[j, 0] if runs[j, 1] > 0.0 else math.nan

        return KernelFunctions(2, prepare, new_run, forget, log_consistency, update, estimate)


    def comprehension_estimate(params, runs, j):
        return sum([runs[j, c] for c in range(2)])


    @dataclass(frozen=True)
    class FactoryMean(SegmentModel):
        variance: float = 1.0

        def new_runs(self, n):
            return {"mean": np.zeros(n), "precision": np.zeros(n)}

        def forget(self, runs, rho):
            return {"mean": runs["mean"], "precision": runs["precision"] * rho}

        def log_consistency(self, prepared):
            lam = prepared.runs["precision"]
            d = prepared.y - prepared.runs["mean"]
            return -(0.5 * (d * d) * (lam / (1.0 + lam * self.variance)))

        def update(self, prepared, gamma):
            k = gamma / self.variance
            lam, mu = prepared.runs["precision"], prepared.runs["mean"]
            d = prepared.y - mu
            gain = k / (lam + k)
            return (-(0.5 * (d * d) * (lam * gain)),
                    {"mean": mu + gain * d, "precision": lam + k})

        def estimate(self, runs):
            return np.where(runs["precision"] > 0.0, runs["mean"], np.nan)

        def compiled_kernel(self):
            return CompiledKernel(
                make_kernel(self.variance), np.array([0.0]),
                lambda runs: np.stack([runs["mean"], runs["precision"]], axis=1),
                lambda rows: {"mean": rows[:, 0].copy(), "precision": rows[:, 1].copy()})


    if sys.argv[1] == "fit":
        y, _, _ = ps.datasets.piecewise_constant(400, n_changes=4, seed=5)
        model = FactoryMean(float(sys.argv[2]))
        fits = [ChangepointDetector(model=model, hazard=0.01, engine=engine).fit(y)
                for engine in ("numba", "numpy")]
        for name in ("mean", "map_run_length", "changepoints", "log_consistency"):
            a, b = (np.asarray(getattr(f, name)) for f in fits)
            assert a.tobytes() == b.tobytes(), name
        print("same", len(fits[0].changepoints))
    else:
        base = make_kernel(1.0)
        print(fingerprint(base._replace(estimate=comprehension_estimate)))
''')


def _run(tmp_path: Path, *args: str) -> str:
    script = tmp_path / "factory_model.py"
    script.write_text(MODEL)
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, str(script), *args], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip()


@needs_numba
def test_kernels_differing_in_a_closure_value_get_their_own_cache_entries(tmp_path):
    # each process compiles (or loads from the shared cache) and compares with its numpy path
    for variance in ("1.0", "9.0", "1.0"):
        assert _run(tmp_path, "fit", variance).startswith("same")


def test_a_kernel_with_a_comprehension_has_the_same_fingerprint_in_every_process(tmp_path):
    first = _run(tmp_path, "fingerprint")
    assert len(first) == 16
    assert _run(tmp_path, "fingerprint") == first
