"""The examples of README.md and docs/: how the doc tests find the code blocks of a page.

Shared by tests/test_docs.py (the examples run with the source tree) and tests/test_install.py
(they run in a fresh venv installed from the wheel).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
GETTING_STARTED = sorted((ROOT / "docs" / "getting-started").glob("*.md"))


def python_blocks(path: Path) -> list[str]:
    """The code of the fenced ```python blocks of a page, in order."""
    return re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)


def runnable_blocks(path: Path) -> list[tuple[str, str]]:
    """``(language, code)`` of the python, sh and text blocks of a page, in order."""
    return re.findall(r"```(python|sh|text)\n(.*?)```", path.read_text(), flags=re.S)


def commands(code: str) -> Iterator[list[str]]:
    """The ``possibly ...`` command lines of an sh block, as argument lists (without the
    program name)."""
    lines = code.replace("\\\n", " ").splitlines()
    for line in lines:
        words = shlex.split(line, comments=True)
        if words and words[0] in ("possibly", ".venv/bin/possibly"):
            yield words[1:]
