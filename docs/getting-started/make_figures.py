"""Regenerate the figures of the getting-started pages by running the pages' own code.

Each page's python blocks run in order in a scratch directory (as tests/test_docs.py runs
them); the PNG named after the page is copied next to the page. Run from the repository:

    .venv/bin/python docs/getting-started/make_figures.py
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PAGES = ("changepoints", "filtering", "location-scale", "nonlinear")


def run_page(page: Path, workdir: Path) -> None:
    """Execute the python blocks of ``page`` in ``workdir``."""
    blocks = re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S)
    namespace: dict = {}
    cwd = os.getcwd()
    os.chdir(workdir)
    try:
        for code in blocks:
            exec(compile(code, str(page), "exec"), namespace)
    finally:
        os.chdir(cwd)


def main(out_dir: Path = HERE) -> list[Path]:
    os.environ.setdefault("MPLBACKEND", "Agg")
    written = []
    for name in PAGES:
        with tempfile.TemporaryDirectory() as tmp:
            run_page(HERE / f"{name}.md", Path(tmp))
            target = Path(out_dir) / f"{name}.png"
            shutil.copyfile(Path(tmp) / f"{name}.png", target)
            written.append(target)
            print(f"wrote {target}")
    return written


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
