"""The package as a user installs it: the wheel, in a fresh venv, runs the documented examples.

The wheel is built with hatchling (the build backend, in the test extra); its metadata must
offer the extras a user guesses, ``all`` their union. The install test creates a clean venv
(``python -m venv``, no system site-packages) in a temporary directory, installs
``<wheel>[pandas,plot]`` (the extra README.md documents for its examples) with that venv's
pip, and runs every example of README.md and docs/getting-started/ with that venv's python and
its ``possibly`` command, from a temporary working directory: the examples import the
installed wheel, not ``src/``.

The dependencies (numpy, scipy, pandas, matplotlib and theirs) come from the package registry
pip is configured with, through pip's own download cache: a plain ``pip install`` is what a
user runs, and a dependency missing from the wheel's metadata fails here because the venv
starts empty. It needs the registry (as ``make test`` does to create .venv); most of its time
is pip installing the dependencies (found in pip's cache after the first run).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import venv
import zipfile
from pathlib import Path

import pytest

from doc_examples import GETTING_STARTED, ROOT, commands, runnable_blocks

#: the extra README.md documents for its examples (and the getting-started pages for theirs)
EXAMPLES_EXTRA = "pandas,plot"
#: extras a user installs; the others (test, dev, docs, bench) are the project's tooling
USER_EXTRAS = ("pandas", "plot", "fast", "progress", "xarray", "dask", "sktime", "river", "data")

# Runs in the fresh venv: the steps of one page in order, the python blocks in one namespace,
# the ``possibly`` commands with the venv's console script.
RUNNER = """
import json, subprocess, sys
import possibly
assert possibly.__file__.startswith(sys.prefix), possibly.__file__  # the installed wheel
namespace = {}
for kind, page, step in json.load(open(sys.argv[1])):
    if kind == "python":
        exec(compile(step, page, "exec"), namespace)
    else:
        subprocess.run([sys.argv[2], *step], check=True)
"""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    from hatchling.builders.wheel import WheelBuilder

    (built,) = WheelBuilder(str(ROOT)).build(directory=str(tmp_path_factory.mktemp("dist")),
                                             versions=["standard"])
    return Path(built)


def _extras(wheel: Path) -> dict[str, set[str]]:
    """``{extra: its requirements}`` from the wheel's METADATA."""
    with zipfile.ZipFile(wheel) as zf:
        (name,) = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = zf.read(name).decode()
    extras: dict[str, set[str]] = {
        e: set() for e in re.findall(r"^Provides-Extra: (\S+)$", metadata, flags=re.M)}
    for req, extra in re.findall(r"^Requires-Dist: (.+); extra == '([^']+)'$", metadata,
                                 flags=re.M):
        extras[extra].add(req)
    return extras


def test_the_wheel_offers_the_user_extras_and_all_is_their_union(wheel):
    extras = _extras(wheel)
    assert set(USER_EXTRAS) <= set(extras)
    assert extras["pandas"] == {"pandas>=2.0"} and extras["plot"] == {"matplotlib>=3.7"}
    assert extras["data"] == set()  # an alias kept for old install commands: installs nothing
    union = set().union(*(extras[name] for name in USER_EXTRAS))
    assert extras["all"] == union  # everything a user might want, no tooling
    assert not extras["all"] & (extras["test"] | extras["dev"] | extras["docs"])


def test_readme_documents_the_examples_extra():
    assert f'pip install ".[{EXAMPLES_EXTRA}]"' in (ROOT / "README.md").read_text()


def _steps(page: Path) -> list[tuple[str, str, object]]:
    steps: list[tuple[str, str, object]] = []
    for lang, code in runnable_blocks(page):
        if lang == "python":
            steps.append(("python", str(page.relative_to(ROOT)), code))
        elif lang == "sh":
            steps.extend(("command", str(page.relative_to(ROOT)), argv)
                         for argv in commands(code))
    return steps


def test_wheel_in_a_fresh_venv_runs_the_readme_and_getting_started_examples(wheel, tmp_path):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
    python, possibly_cmd = env_dir / "bin" / "python", env_dir / "bin" / "possibly"
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "POSSIBLY_DATA_DIR")}
    env["MPLBACKEND"] = "Agg"
    subprocess.run([python, "-m", "pip", "install", "--quiet", f"{wheel}[{EXAMPLES_EXTRA}]"],
                   check=True, env=env, cwd=tmp_path)
    runner = tmp_path / "run_page.py"
    runner.write_text(RUNNER)
    pages = [ROOT / "README.md", *GETTING_STARTED]
    assert len(pages) >= 4
    failed = []
    for page in pages:
        steps = _steps(page)
        assert steps, page
        work = tmp_path / "work" / page.stem
        work.mkdir(parents=True)
        (work / "steps.json").write_text(json.dumps(steps))
        proc = subprocess.run([python, str(runner), "steps.json", str(possibly_cmd)],
                              cwd=work, env=env, capture_output=True, text=True)
        if proc.returncode:
            failed.append(f"{page.relative_to(ROOT)}:\n{proc.stderr[-3000:]}")
    assert not failed, "\n\n".join(failed)

