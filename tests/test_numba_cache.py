"""``possibly._numba_cache.has_cached_code``: whether a cached kernel's code is at hand."""

from __future__ import annotations

import importlib
import shutil
import sys

import pytest

from possibly._numba_cache import has_cached_code


def test_code_at_hand_once_compiled_and_from_the_disk_cache_after(tmp_path, monkeypatch):
    pytest.importorskip("numba")
    (tmp_path / "kernel_at_hand.py").write_text(
        "import numba\n@numba.njit(cache=True)\ndef twice(x):\n    return 2.0 * x\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("kernel_at_hand")
    try:
        assert has_cached_code(module.twice) is False  # nothing compiled, nothing on disk
        assert module.twice(1.5) == 3.0
        assert has_cached_code(module.twice) is True  # loaded in this process
        module = importlib.reload(module)  # a new dispatcher: nothing loaded, the disk cache
        assert not module.twice.overloads
        assert has_cached_code(module.twice) is True
        shutil.rmtree(tmp_path / "__pycache__")  # numba's folder for a module of no package
        module = importlib.reload(module)
        assert has_cached_code(module.twice) is False
    finally:
        sys.modules.pop("kernel_at_hand", None)
