"""Fixtures of the command-line tests."""

from __future__ import annotations

import subprocess
import sys

import pytest


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
