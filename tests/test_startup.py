"""``import possibly`` stays light: heavy optional and scipy modules load on first use only."""

import json
import os
import subprocess
import sys

# scipy.special/optimize/stats cost 0.1-0.3 s each to import; the others are optional extras.
HEAVY = ["scipy.special", "scipy.optimize", "scipy.stats", "matplotlib", "dask", "numba",
         "pandas"]


def test_import_possibly_does_not_load_heavy_modules():
    code = (
        "import json, sys\n"
        "import possibly\n"
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=dict(os.environ), timeout=120)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_deferred_scipy_is_loaded_when_needed():
    code = (
        "import sys\n"
        "import possibly as ps\n"
        "ps.Gamma(2.0, 1.0).log_possibility(1.5)\n"
        "print('scipy.special' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=dict(os.environ), timeout=120)
    assert out.stdout.strip().splitlines()[-1] == "True"
