"""Importing the package and drawing a plot leave the process as the user had it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def _run(code: str, **env: str) -> str:
    base = {k: v for k, v in os.environ.items()
            if k not in ("NUMBA_CACHE_DIR", "MPLBACKEND", "NUMBA_CACHE_LOCATOR_CLASSES")}
    base["PYTHONPATH"] = os.pathsep.join(sys.path)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**base, **env}, check=True, timeout=300)
    return out.stdout.strip().splitlines()[-1]


def test_import_and_compiled_kernels_change_no_environment_variable(tmp_path):
    pytest.importorskip("numba")
    code = (
        "import json, os\n"
        "before = dict(os.environ)\n"
        "import possibly as ps, numpy as np\n"
        "ps.ChangepointDetector(engine='numba').fit(np.r_[np.zeros(50), np.ones(50)])\n"
        "print(json.dumps(dict(os.environ) == before))\n"
    )
    assert json.loads(_run(code, XDG_CACHE_HOME=str(tmp_path))) is True


def _cached_files(root: Path) -> list[str]:
    return sorted(p.name for p in root.rglob("*") if p.suffix in (".nbi", ".nbc"))


def test_kernels_cached_in_the_user_cache_dir_and_only_ours(tmp_path):
    """Our kernels go to ~/.cache/possibly/numba; another module's cache=True kernel does not."""
    pytest.importorskip("numba")
    other = tmp_path / "other_pkg.py"
    other.write_text("import numba\n@numba.njit(cache=True)\ndef twice(x):\n    return 2 * x\n")
    code = (
        f"import sys; sys.path.insert(0, {str(tmp_path)!r})\n"
        "import numpy as np, possibly as ps\n"
        "ps.ChangepointDetector(engine='numba').fit(np.r_[np.zeros(50), np.ones(50)])\n"
        "import other_pkg; other_pkg.twice(3)\n"
        "print('ok')\n"
    )
    cache = tmp_path / "cache"
    assert _run(code, XDG_CACHE_HOME=str(cache)) == "ok"
    ours = _cached_files(cache / "possibly" / "numba")
    assert any(name.startswith("compiled_engine.run_kernels_") for name in ours), ours
    assert not any(name.startswith("other_pkg") for name in ours)
    # numba's own rule for the other module: its __pycache__ next to it
    assert any(name.startswith("other_pkg.twice") for name in
               _cached_files(tmp_path / "__pycache__"))


def test_unwritable_cache_home_falls_back_and_never_raises(tmp_path):
    """A cache home that cannot be created (a file in the way) falls back to the temp dir."""
    pytest.importorskip("numba")
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    code = (
        "import numpy as np, possibly as ps\n"
        "r = ps.ChangepointDetector(engine='numba').fit(np.r_[np.zeros(50), np.ones(50)])\n"
        "print([int(t) for t in r.changepoints])\n"
    )
    assert _run(code, XDG_CACHE_HOME=str(blocker / "cache"), TMPDIR=str(tmp)) == "[50]"
    fallback = [p for p in tmp.iterdir() if p.name.startswith("possibly-numba-")]
    assert fallback and _cached_files(fallback[0])


def test_user_numba_cache_dir_wins(tmp_path):
    pytest.importorskip("numba")
    code = (
        "import numpy as np, possibly as ps\n"
        "ps.ChangepointDetector(engine='numba').fit(np.r_[np.zeros(50), np.ones(50)])\n"
        "print('ok')\n"
    )
    mine = tmp_path / "mine"
    assert _run(code, NUMBA_CACHE_DIR=str(mine), XDG_CACHE_HOME=str(tmp_path / "x")) == "ok"
    assert _cached_files(mine)
    assert not (tmp_path / "x" / "possibly").exists()


def test_every_kernel_module_registers_the_cache_folder_first():
    """Each module compiling with cache=True imports possibly.compiled, which registers it."""
    import possibly

    src = Path(possibly.__file__).parent
    for path in src.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if "njit(cache=True" in text and path.name not in ("compiled.py", "_numba_cache.py"):
            assert ("from possibly.compiled import" in text
                    or "import possibly.compiled" in text), path


def test_plotting_leaves_the_backend_alone(tmp_path):
    pytest.importorskip("matplotlib")
    code = (
        "import matplotlib\n"
        "matplotlib.use('svg')\n"
        "import numpy as np, possibly as ps\n"
        "y = np.r_[np.zeros(60), 3 + np.zeros(60)]\n"
        "res = ps.ChangepointDetector().fit(y)\n"
        "res.plot()\n"
        "print(matplotlib.get_backend())\n"
    )
    assert _run(code).lower() == "svg"


def test_a_temp_cache_folder_others_can_write_is_not_used(tmp_path):
    """numba loads cache files with pickle: a world-writable fallback folder made by someone
    else must not be used (numba's own rules apply instead), and a new one is made private."""
    pytest.importorskip("numba")
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    planted = tmp / f"possibly-numba-{os.getuid()}"
    planted.mkdir()
    planted.chmod(0o777)
    code = (
        "import numpy as np, possibly as ps\n"
        "r = ps.ChangepointDetector(engine='numba').fit(np.r_[np.zeros(50), np.ones(50)])\n"
        "print([int(t) for t in r.changepoints])\n"
    )
    env = {"XDG_CACHE_HOME": str(blocker / "cache"), "TMPDIR": str(tmp)}
    assert _run(code, **env) == "[50]"
    assert not _cached_files(planted)
    planted.rmdir()
    assert _run(code, **env) == "[50]"
    assert (planted.stat().st_mode & 0o777) == 0o700 and _cached_files(planted)
