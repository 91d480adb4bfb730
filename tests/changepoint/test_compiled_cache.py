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

import possibly
from possibly.changepoint.detector import numba_available

needs_numba = pytest.mark.skipif(not numba_available(), reason="numba is not installed")

# a model whose kernel is made by a factory: the noise variance is a closure constant of the
# kernel functions (not a packed setting), so two variances differ only in their closures
MODEL = textwrap.dedent('''
    import math
    import sys

    import numpy as np

    import possibly as ps
    from possibly.changepoint.compiled_engine import fingerprint
    from possibly.changepoint.detector import ChangepointDetector
    from possibly.changepoint.models import KernelFunctions

    sys.path.insert(0, sys.argv[-1])  # tests/changepoint
    from test_segment_protocol import (KnownVarianceMean, km_estimate, km_forget,
                                       km_indistinguishable, km_new_run, km_prepare)


    def make_kernel(variance):
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

        return KernelFunctions(2, km_prepare, km_new_run, km_forget, log_consistency, update,
                               km_estimate, km_indistinguishable)


    def comprehension_estimate(params, runs, j):
        return sum([runs[j, c] for c in range(2)])


    class FactoryMean(KnownVarianceMean):
        def compiled_kernel(self):
            kernel = super().compiled_kernel()
            return kernel._replace(functions=make_kernel(self.variance),
                                   params=np.array([math.nan]))  # the variance is not read


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
    src = str(Path(possibly.__file__).resolve().parents[1])  # the library under test
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, str(script), *args, str(Path(__file__).parent)],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip()


@needs_numba
def test_kernels_differing_in_a_closure_value_get_their_own_cache_entries(tmp_path):
    # each process compiles (or loads from the shared cache) and compares with its numpy path
    for variance in ("1.0", "9.0", "1.0"):
        assert _run(tmp_path, "fit", variance).startswith("same")


@needs_numba
def test_a_kernel_with_a_comprehension_has_the_same_fingerprint_in_every_process(tmp_path):
    first = _run(tmp_path, "fingerprint")
    assert len(first) == 16
    assert _run(tmp_path, "fingerprint") == first
