import os
import subprocess
import sys

import numpy as np
import pytest


def pytest_configure(config):
    os.environ.setdefault("MPLBACKEND", "Agg")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    # `make test` installs every extra, so nothing may be skipped there: POSSIBLY_NO_SKIP=1
    # turns a skip (a missing optional dependency) into a failure instead of a silent pass.
    outcome = yield
    report = outcome.get_result()
    # an expected failure (xfail, reported as skipped with `wasxfail`) is not a skip
    if (report.skipped and not hasattr(report, "wasxfail")
            and os.environ.get("POSSIBLY_NO_SKIP") == "1"):
        report.outcome = "failed"
        report.longrepr = f"skipped under POSSIBLY_NO_SKIP=1: {report.longrepr}"


@pytest.fixture(autouse=True)
def fresh_auto_engine(monkeypatch):
    """Each test starts with the filters' ``engine="auto"`` of a new process (nothing loaded,
    no numpy work run), so that no test depends on the tests that ran before it."""
    from possibly.filters import _common

    monkeypatch.setattr(_common, "AUTO_HISTORY", _common.AutoHistory())


@pytest.fixture
def auto_compiles(monkeypatch):
    """The filters' ``engine="auto"`` of a process that has spent its budget of numpy work:
    the compiled loops wherever they apply (numba installed, the model fit for them)."""
    from possibly.filters import _common

    monkeypatch.setattr(_common, "AUTO_NUMPY_BUDGET", 0)


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture
def count_calls(monkeypatch):
    """``count_calls(module, name)``: replace ``module.name`` by a wrapper that counts its
    calls (for the duration of the test); returns the list that grows by one per call."""

    def install(module, name):
        calls = []
        original = getattr(module, name)

        def counting(*args, **kwargs):
            calls.append(1)
            return original(*args, **kwargs)

        monkeypatch.setattr(module, name, counting)
        return calls

    return install


@pytest.fixture
def imports_numba():
    """``imports_numba(argv)``: runs ``possibly.cli.main(argv)`` in a new interpreter (this one
    may have imported numba already) and tells whether that process imported numba."""
    def run(argv: list[str]) -> bool:
        code = ("import sys\nfrom possibly.cli import main\n"
                f"main({argv!r})\nprint('numba' in sys.modules)")
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              check=True)
        return done.stdout.strip().splitlines()[-1] == "True"

    return run
